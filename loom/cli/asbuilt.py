"""`loom mark down|up` and `loom status`: the fabric as it stands (`loom.expand.asbuilt`).

`mark` writes the declared part — what an operator knows is down, with why and until when —
into the lock file, so nobody edits YAML in an incident and the change is reviewed in git like
any other; `status` shows the declared part and what the fabric's state directory says is
observed (the simulation's pulled cables, what the watcher routes around, the last plan's
discovery)."""

from __future__ import annotations

import datetime
import getpass
import json
import re
import sys
from pathlib import Path

import typer

from .common import (FORMAT_OPT, JSON_OPT, MODEL_ARG, TARGET_OPT, backend_of, input_error, json_wanted, out, print_model_error,
                     write)

mark_app = typer.Typer(no_args_is_help=True, help="Declare switches and cables down (or back): kept in the lock file, "
                       "routed around by every command until marked up.")
NAMES_ARG = typer.Argument(..., help="switch names or cable IDs (`z0-leaf3/21`, `z0-leaf3:21`, either end), or a NIC's CA name")


def _load(model: Path):
    """The model's declared state and its lock (exit 2: no such file; 1: invalid)."""
    from loom.expand import lock_path, read_lock
    from loom.expand.asbuilt import load_as_built
    from loom.model import ModelError

    if not model.exists():
        raise input_error(f"{model}: no such file; give the path of a model file, e.g. topology/tiny.yaml", 2)
    try:
        lock = read_lock(lock_path(model))
        return load_as_built(model, lock), lock
    except ModelError as exc:
        print_model_error(model, exc)
        raise typer.Exit(1) from None


def _names(state, names: list[str]) -> list[str]:
    """Each name as the lock keeps it: a switch by name, a cable by its ID (usage error, exit 2,
    for a name the model does not have)."""
    from loom.expand.failures import FailureSpecError, parse_failures

    out_names = []
    for name in names:
        try:
            f = parse_failures(state.design, [name])
        except FailureSpecError as exc:
            raise input_error(exc, 2) from None
        out_names += [name] if f.switches else sorted(state.design.cable_id(i) for i in f.cables)
    return out_names


@mark_app.command("down")
def mark_down(model: Path = MODEL_ARG, names: list[str] = NAMES_ARG,
              reason: str = typer.Option(..., "--reason", help="why it is down (a ticket, a symptom): kept with the mark"),
              until: str | None = typer.Option(None, "--until", metavar="YYYY-MM-DD",
                                               help="when it should be back (`loom status` says when it is overdue)")) -> None:
    """Declare switches or cables down: written to the model's lock file (`down`), routed around
    by route, check, plan, apply and the watcher until `loom mark up`.  Commit the lock file.

    Exit 0 marked; 1 invalid model or no lock file; 2 a name the model does not have, or a bad date."""
    from loom.expand.failures import parse_failures
    from loom.expand.lockfile import Mark, lock_path, lock_text

    if until is not None:
        try:
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", until):
                raise ValueError(until)
            datetime.date.fromisoformat(until)
        except ValueError:
            raise input_error(f"--until {until!r}: not a date; write it as YYYY-MM-DD, e.g. 2026-12-24", 2) from None
    if len(reason) > 500:
        raise input_error("--reason: at most 500 characters; put the details in the ticket and name it here", 2)
    state, lock = _load(model)
    if lock is None:
        raise input_error(f"{model} has no lock file; run `loom lock {model}` first (marks are kept in it)")
    keys = _names(state, names)
    since = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    mark = Mark(reason=reason, until=until, by=getpass.getuser(), since=since)
    write(lock_path(model), lock_text(lock.model_copy(update={"down": {**lock.down, **{k: mark for k in keys}}})))
    cables = len(parse_failures(state.design, keys).cables)
    out.print(f"marked down: {', '.join(keys)} ({cables} cable{'s' if cables != 1 else ''}) in {lock_path(model)}; the next `loom plan {model}` "
              "routes around them", highlight=False, markup=False)


@mark_app.command("up")
def mark_up(model: Path = MODEL_ARG, names: list[str] = NAMES_ARG) -> None:
    """Take back `loom mark down`: the next plan returns them to the design tables.  Something the
    model (`missing_*`) or a NetBox import (the lock's `as_built`) declares is refused, naming
    where to change it.

    Exit 0 done (or not marked); 1 declared elsewhere, or invalid model; 2 a name the model does not have."""
    from loom.expand.lockfile import lock_path, lock_text

    state, lock = _load(model)
    if lock is not None:
        marked = set(lock.down) if lock else set()
    keys = [n for n in names if n in marked] + _names(state, [n for n in names if n not in marked])
    elsewhere = {d.name: d.source for d in state.declared if d.source != "loom mark"}
    for k in keys:
        if k in elsewhere and k not in (lock.down if lock else {}):
            where = f"the model's `missing_*` entries in {model}" if elsewhere[k] == "model" else \
                "the lock's `as_built` (a NetBox import: `loom netbox import --write` once NetBox has it back)"
            raise input_error(f"{k} is declared down by {where}; remove it there")
    gone = [k for k in keys if lock and k in lock.down]
    if not gone:
        out.print(f"not marked down: {', '.join(keys)}; nothing to do", highlight=False, markup=False)
        return
    write(lock_path(model), lock_text(lock.model_copy(update={"down": {k: v for k, v in lock.down.items() if k not in gone}})))
    out.print(f"marked up: {', '.join(gone)}; the next `loom plan {model}` returns them to the design tables "
              "if the fabric has them up", highlight=False, markup=False)


def status(model: Path = MODEL_ARG, target: str = TARGET_OPT, fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """The fabric as it stands: its design, what is declared down (the model, the lock's NetBox
    import and `loom mark`, with reasons and dates) and what was observed down (the simulation's
    pulled cables, the watcher's reroute, the last plan's discovery), and a daemon of the
    simulation that died.

    Exit 0 nothing down; 1 something is down or overdue, an apply was interrupted, a daemon of
    the simulation died, or invalid model; 2 usage error."""
    from loom.push.journal import Journal
    from loom.push.links import links_down
    from loom.push.state import no_state, state_dir

    as_json = json_wanted(fmt, as_json)
    if target not in ("sim", "ssh"):
        raise input_error(f"--target {target!r}: sim or ssh", 2)
    state, _ = _load(model)
    d = state_dir(state.design.name, target)
    # a daemon killed or crashed: the state files read below still read as a healthy fabric
    dead = backend_of(state.design).sim_dead(state.design) if target == "sim" else None
    pulled = links_down(d) if target == "sim" else []
    watched, stale = _watcher_record(d, pulled, sim_runs=dead == [])
    observed = {"simulation": pulled, "watcher": watched,
                "last_plan": [x["name"] for x in (_json(d / "last-plan.json", "as_built") or {}).get("observed", [])]}
    report = {"fabric": state.design.name, "state_dir": str(d), "state_found": d.exists(), "design": {
              "switches": len(state.design.switches), "cables": len(state.design.cables)}, **state.as_dict(), "observed": observed}
    report.pop("cables_down")
    # an apply killed midway (its journal stands): the fabric holds neither the old tables nor the
    # new ones for sure until the next plan, apply, sim up or sim down resolves it
    report["interrupted_apply"] = Journal(d).path.exists()  # a damaged one too: status never fails on it
    report["dead_daemons"] = dead or []
    report["stale_watcher_record"] = stale
    overdue = [x.name for x in state.declared if x.until and x.overdue()]
    if as_json:
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
    else:
        _print_status(report, overdue, model, no_state(d, target))
    raise typer.Exit(1 if state.declared or any(observed.values()) or report["interrupted_apply"] or report["dead_daemons"] else 0)


def _print_status(r: dict, overdue: list[str], model: Path, no_state: str) -> None:
    out.print(f"{r['fabric']}: design {r['design']['switches']} switches, {r['design']['cables']} cables"
              + ("" if no_state else f" (state in {r['state_dir']})"), highlight=False, markup=False)
    if no_state:  # nothing observed down is then no news: say where status looked, and how to look elsewhere
        out.print(no_state, highlight=False, markup=False)
    out.print(f"declared down: {len(r['declared']) or 'nothing'}", highlight=False)
    for x in r["declared"]:
        extra = "".join(f"; {k} {x[k]}" for k in ("until", "by", "since") if x.get(k))
        out.print(f"  {x['name']}  ({x['source']}, {x['cables']} cable{'s' if x['cables'] != 1 else ''}){': ' + x['reason'] if x.get('reason') else ''}"
                  f"{extra}{'  OVERDUE: check it and `loom mark up` when it is back' if x['name'] in overdue else ''}",
                  highlight=False, markup=False)
    o = r["observed"]
    for key, what in (("simulation", "pulled in the simulation (`loom sim link up` puts them back)"),
                      ("watcher", "routed around by `loom watch`"), ("last_plan", "not seen up by the last plan")):
        if o[key]:
            out.print(f"observed down, {what}: {', '.join(o[key][:12])}" + (f" and {len(o[key]) - 12} more" if len(o[key]) > 12 else ""),
                      highlight=False, markup=False)
    if not r["declared"] and not any(o.values()):
        out.print("observed down: nothing", highlight=False)
    if r["interrupted_apply"]:
        out.print("an interrupted apply awaits recovery: the next `loom plan`, `apply`, `sim up` or `sim down` "
                  "restores or records it", highlight=False, markup=False)
    if r["stale_watcher_record"]:
        out.print(f"up in the simulation: {', '.join(r['stale_watcher_record'])}, routed around by a `loom watch` that no "
                  "longer runs; the tables in force may still avoid them (`loom plan` shows it; `loom apply` or a new "
                  "`loom watch` returns to the design)", highlight=False, markup=False)
    if r["dead_daemons"]:
        out.print(f"not running (killed or crashed) in the simulation: {', '.join(r['dead_daemons'])}; "
                  f"`loom sim up {model}` restarts the simulation", highlight=False, markup=False)


def _watcher_record(d: Path, pulled: list[str], sim_runs: bool) -> tuple[list[str], list[str]]:
    """The cables the watcher's record (`watch.down.json`) says its tables route around, as
    (current, stale).  The record outlives its watcher on purpose: the next watcher starts from it
    (and returns what came back to the design).  It is news while a watcher runs to keep it, or
    while a cable of it is still pulled; once no watcher runs and the running simulation has all
    its cables up (a `sim down` / `sim up` brings every cable back), it is stale: said apart,
    not as observed down.  Elsewhere (ssh, a simulation not running) status cannot see the cables."""
    from loom.push.links import watcher_down, watcher_running

    names = watcher_down(d)
    if names and sim_runs and not set(names) & set(pulled) and not watcher_running(d):
        return [], names
    return names, []


def _json(path: Path, key: str):
    """`key` of a small JSON state file, None if it is absent or unreadable (status never fails on it)."""
    from loom.model import ModelError
    from loom.model.reading import read_text

    try:
        return json.loads(read_text(path, "state file", tables=True)).get(key)
    except (OSError, ValueError, AttributeError, ModelError):
        return None
