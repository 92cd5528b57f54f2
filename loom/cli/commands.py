"""The Typer app: every command and group, registered in the order `loom --help` lists
them, and the callback every invocation passes through (see `loom.cli` for the modules)."""

from __future__ import annotations

import typer

from . import asbuilt, cabling, docs, health, model, netbox, push, routing, scheduling, terraform
from .common import CLOCK, JSON_ERRORS, err, out, process_age

app = typer.Typer(no_args_is_help=True, help="Loom: declarative AI-cluster fabrics.", rich_markup_mode=None)

COMMANDS = [
    ("validate", model.validate), ("show", model.show), ("expand", model.expand_cmd), ("route", routing.route_cmd),
    ("check", routing.check), ("whatif", routing.whatif), ("discover", routing.discover), ("lock", model.lock_cmd),
    ("docs", docs.docs), ("diff", routing.diff_cmd), ("configs", model.configs), ("inventory", model.inventory_cmd),
    ("status", asbuilt.status), ("health", health.health), ("watch", push.watch), ("plan", push.plan), ("apply", push.apply), ("ranks", scheduling.ranks_cmd),
    ("slurm", scheduling.slurm_cmd), ("fabric", terraform.fabric_cmd),
]
GROUPS = [("host", model.host_app), ("mark", asbuilt.mark_app), ("sim", push.sim_app), ("cabling", cabling.cabling_app), ("tf", terraform.tf_app),
          ("netbox", netbox.netbox_app)]

for name, fn in COMMANDS:
    app.command(name)(fn)
for name, group in GROUPS:
    app.add_typer(group, name=name)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            out.print(f"loom {version('loom')}", highlight=False)
        except PackageNotFoundError:
            out.print("loom (not installed: run from a checkout without `pip install`)", highlight=False)
        raise typer.Exit(0)


FROM_EXEC = {"on": False}  # started as a program (`main`), so the process's age is this command's start-up


@app.callback()
def _main(ctx: typer.Context, show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                                                help="print loom's version and exit")) -> None:
    """Loom: declarative AI-cluster fabrics."""
    JSON_ERRORS["on"] = False  # a new invocation (tests run many in one process); `format_of` sets it
    out.forget()
    err.forget()
    CLOCK.begin(process_age() if FROM_EXEC["on"] else 0.0)
    ctx.call_on_close(_say_total)


def _say_total() -> None:
    if line := CLOCK.total_line():
        err.print(line, highlight=False)
