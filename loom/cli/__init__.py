"""The `loom` command line: one module per command group, each command a few lines that call
the pipeline (`loom.pipeline`) or the fabric's backend (`loom.fabrics`) and print.

    common      options, consoles, loading, writing, the backend of a fabric
    model       validate, show, expand, lock, configs, inventory, host
    routing     route, check, whatif, discover, diff       (sides: a change's two models)
    asbuilt     status, mark down|up: the fabric as it stands
    health      health: link health from port counters
    push        sim, watch, plan, apply, show PLAN
    cabling     cabling sheet|diff
    scheduling  slurm, ranks
    terraform   fabric, tf routing|netbox
    netbox      netbox plan|apply|import
    docs        docs

The order below is the order `loom --help` lists them in.  Exit codes: 0 success, 1 invalid
model / failed check / refusal, 2 usage errors (Typer's).
"""

from __future__ import annotations

import os
import sys

import typer

from loom.process import as_a_command

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


_FROM_EXEC = {"on": False}  # started as a program (`main`), so the process's age is this command's start-up


@app.callback()
def _main(ctx: typer.Context, show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                                                help="print loom's version and exit")) -> None:
    """Loom: declarative AI-cluster fabrics."""
    JSON_ERRORS["on"] = False  # a new invocation (tests run many in one process); `format_of` sets it
    CLOCK.begin(process_age() if _FROM_EXEC["on"] else 0.0)
    ctx.call_on_close(_say_total)


def _say_total() -> None:
    if line := CLOCK.total_line():
        err.print(line, highlight=False)


class _ReaderMayLeave:
    """stdout that outlives its reader: once a pipe's reader has gone (`loom check M | head`),
    what is left to print goes to /dev/null and the command runs to its end, exiting with its own
    code.  Click alone would exit 1 at the first write (which a script reads as a failed check),
    and an apply would be cut short between writing and verifying."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def _reader_left(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self._stream.fileno())  # what is still buffered, and the flush at exit, go there
        os.close(null)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main() -> None:
    """The `loom` program (and `python -m loom.cli`)."""
    _FROM_EXEC["on"] = True
    sys.stdout = _ReaderMayLeave(sys.stdout)
    as_a_command()
    app()
