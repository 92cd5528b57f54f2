"""`loom netbox plan|apply|import MODEL`: the NetBox command group.

Exit codes: plan 0 no changes, 2 changes, 1 error or conflict (like `loom plan`); apply and
import 0 done, 1 error.  NETBOX_URL and NETBOX_TOKEN come from the environment (docs/netbox.md).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import typer

from .cabling import cable_plan_of
from .common import FORMAT_OPT, JSON_OPT, MODEL_ARG, err, json_wanted, out, print_error, print_model_error
from .common import write as write_file  # `import --write` is a flag of that name

netbox_app = typer.Typer(no_args_is_help=True, help="NetBox as the source of truth: plan, apply, import "
                         "(NETBOX_URL, NETBOX_TOKEN from the environment).")

INSTALLED = typer.Option(False, "--installed", help="the fabric is on the floor already (a first sync): new cables "
                         "are `connected`, not `planned`")
SHOWN = 20  # objects listed per kind and action; the rest are counted


def connect():
    """The NetBox client NETBOX_URL and NETBOX_TOKEN name; exit 1 with the reason if there is none."""
    from loom.netbox.client import Client, NetBoxError

    try:
        return Client.from_env()
    except NetBoxError as exc:
        _fail(exc)


def _fail(exc) -> None:
    print_error(exc)
    raise typer.Exit(1)


def _intent(model: Path, installed: bool):
    """The design fabric (without the lock's as-built entries: NetBox holds what should be there)
    and what NetBox should hold for it."""
    from loom.expand import load_fabric
    from loom.model import ModelError

    from loom.netbox.intent import intent

    try:
        fabric = load_fabric(model, as_built=False)
    except ModelError as exc:
        print_model_error(model, exc)
        raise typer.Exit(1) from None
    plan = cable_plan_of(model, fabric) if fabric.model.cabling else None
    return fabric, intent(fabric, plan, installed=installed)


def _plan(model: Path, installed: bool):
    from loom.netbox.client import NetBoxError
    from loom.netbox.plan import make_plan

    fabric, want = _intent(model, installed)
    client = connect()
    try:
        return client, make_plan(client, fabric, want)
    except NetBoxError as exc:
        _fail(exc)


@netbox_app.command("plan")
def plan_cmd(model: Path = MODEL_ARG, fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT,
             installed: bool = INSTALLED) -> None:
    """What `loom netbox apply` would create, change and delete in NetBox, by kind; drift of
    Loom's objects and conflicts with objects Loom does not own are named.

    Exit 0 no changes; 2 changes (Terraform's convention); 1 a conflict or an error (NetBox
    unreachable, bad token, version too old)."""
    as_json = json_wanted(fmt, as_json)
    t0 = time.monotonic()
    _, p = _plan(model, installed)
    if as_json:
        sys.stdout.write(json.dumps(p.as_json(), indent=2, default=str) + "\n")
    else:
        _print_plan(p, time.monotonic() - t0)
    raise typer.Exit(1 if p.conflicts else 2 if not p.empty else 0)


def _print_plan(p, seconds: float) -> None:
    from loom.netbox.plan import plain

    out.print(f"NetBox {p.url}, site {p.site} (read in {seconds:.1f} s)", highlight=False, markup=False)
    for c in p.conflicts:
        out.print(f"  ! conflict: {c}", highlight=False, markup=False)
    if p.empty:
        out.print("No changes. NetBox matches the model." if not p.conflicts else "No changes besides the conflicts.",
                  highlight=False, markup=False)
        return
    sign = {"create": "+", "update": "~", "delete": "-"}
    for kind, n in p.counts().items():
        for action in ("create", "update", "delete"):
            xs = p.of(action, kind)
            for c in xs[:SHOWN]:
                extra = " (from the device type)" if c.from_template else ""
                if action == "update":
                    extra = " (drift or model change): " + ", ".join(
                        f"{f} {plain(h)!r} → {plain(w)!r}" for f, (h, w) in c.want.items())
                out.print(f"  {sign[action]} {kind} {c.key}{extra}", highlight=False, markup=False)
            if len(xs) > SHOWN:
                out.print(f"  {sign[action]} {kind}: ... and {len(xs) - SHOWN} more", highlight=False, markup=False)
    totals = {a: len(p.of(a)) for a in ("create", "update", "delete")}
    by_kind = ", ".join(f"{kind} {'/'.join(str(n[a]) for a in ('create', 'update', 'delete'))}"
                        for kind, n in p.counts().items())
    out.print(f"Plan: {totals['create']} to create, {totals['update']} to change, {totals['delete']} to delete "
              f"(by kind, create/change/delete: {by_kind}).", highlight=False, markup=False)


@netbox_app.command("apply")
def apply_cmd(model: Path = MODEL_ARG, installed: bool = INSTALLED,
              parallel: int = typer.Option(2, "--parallel", min=1, max=32, help="requests in flight: about the "
                                           "NetBox server's cores (more only adds contention)")) -> None:
    """Plan, then create, change and delete in NetBox (bulk calls, dependency order).  Refuses
    if any object Loom does not own is in the way; a rerun finishes an interrupted apply.

    Exit 0 applied (or nothing to do); 1 refused, failed or NetBox unreachable."""
    from loom.render.progress_bar import bars

    from loom.netbox.apply import apply_plan
    from loom.netbox.client import NetBoxError

    t0 = time.monotonic()
    client, p = _plan(model, installed)
    if p.conflicts:
        for c in p.conflicts:
            err.print(f"conflict: {c}", highlight=False, markup=False)
        _fail(f"{len(p.conflicts)} object(s) in NetBox are in Loom's way and not Loom's; nothing was applied")
    if p.empty:
        out.print("No changes. NetBox matches the model.", highlight=False, markup=False)
        return
    try:
        with bars(err):
            done = apply_plan(client, p, progress=lambda m: err.print(f"  {m}", highlight=False, markup=False),
                              parallel=parallel)
    except NetBoxError as exc:
        _fail(exc)
    out.print(f"Applied: {done['create']} created, {done['update']} changed, {done['delete']} deleted "
              f"in {time.monotonic() - t0:.1f} s.", highlight=False, markup=False)


@netbox_app.command("import")
def import_cmd(model: Path = MODEL_ARG, write: bool = typer.Option(False, "--write", help="write the lock file "
               "(without it: show what it would take)"),
               fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """The as-built direction: cables not `connected` and switches not `active` become the lock's
    missing links/switches (`loom check` routes around them); serials, asset tags, GUIDs and MACs
    go to the lock file and from there to the Ansible inventory.

    Exit 0 shown (or written with --write); 1 an error (NetBox unreachable, bad token, invalid model)."""
    from loom.expand import lock_path, read_lock
    from loom.expand.lockfile import lock_of, lock_text

    as_json = json_wanted(fmt, as_json)

    from loom.netbox.asbuilt import read_as_built
    from loom.netbox.client import NetBoxError

    fabric, _ = _intent(model, False)
    client = connect()
    try:
        got = read_as_built(client, fabric)
    except NetBoxError as exc:
        _fail(exc)
    path = lock_path(model)
    old = read_lock(path) or lock_of(fabric, fabric.switch_lid_base)
    changes = got.differences(old)
    if as_json:
        sys.stdout.write(json.dumps({"missing": got.missing, "not_expressed": got.not_expressed,
                                     "lock_changes": changes, "written": write and bool(changes)}, indent=2) + "\n")
    else:
        for line in [f"NetBox {client.url}: as built, {len(got.missing)} missing link(s)/switch(es)"] + \
                [f"  {x}" for x in got.missing] + \
                [f"  not expressible in the model (listed only): {x}" for x in got.not_expressed[:SHOWN]] + \
                ([f"  ... and {len(got.not_expressed) - SHOWN} more not expressible"]
                 if len(got.not_expressed) > SHOWN else []) + \
                [f"lock file {path}: {len(changes)} change(s)" + (":" if changes else "")] + [f"  {x}" for x in changes]:
            out.print(line, highlight=False, markup=False)
    if write and changes:
        write_file(path, lock_text(got.lock(old)))
        if not as_json:
            out.print(f"wrote {path}", highlight=False, markup=False)
    elif changes and not as_json:
        out.print(f"run `loom netbox import {model} --write` to record it", highlight=False, markup=False)
