"""`loom sim up|down|status` and `loom plan` on an Ethernet model: the live FRR simulation and
per-switch plans (`loom.push.frr_*`).  `loom.cli`'s commands dispatch here on the model's
technology, so one command grammar serves both kinds of fabric; `loom apply` reads the kind
from the plan."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from loom.expand import Fabric


def is_ethernet(fabric: Fabric) -> bool:
    return fabric.model.technology == "ethernet"


def sim_up(fabric: Fabric) -> None:
    """Bring the fabric's planes up live (FRR per switch, hosts with per-NIC source routing)."""
    from loom.cli import _fail, _phase, _progress, out
    from loom.push import audit
    from loom.push.apply import recover, take_lock
    from loom.push.errors import PlanError, TargetError
    from loom.push.frr_apply import STARTUP
    from loom.push.frr_lab import needed_daemons, too_big
    from loom.push.frr_plan import intent_of
    from loom.push.frr_target import FrrSimTarget

    problem = too_big(fabric)
    if problem:
        _fail(problem)
    intent = _phase("route + render", intent_of, fabric)
    d = FrrSimTarget.of(fabric.name)
    try:
        lock = take_lock(d, "sim up", _progress, fabric=fabric.name)
    except PlanError as exc:
        _fail(exc)
    try:
        recover(d, progress=_progress)
        saved = d.dir / STARTUP
        startup = {n: (saved / f"{n}.conf").read_text() if (saved / f"{n}.conf").exists() else intent.startup[n]
                   for n in intent.configs}
        daemons = {n: needed_daemons(intent.configs[n]) for n in intent.configs}
        what = _phase("sim up", d.lab.up, fabric, startup, daemons)
        audit.record(d.dir, "sim up", outcome=what, fabric=fabric.name)
    except (TargetError, PlanError) as exc:
        _fail(exc)
    except OSError as exc:
        _fail(f"cannot write the state of {fabric.name} in {d.dir}: {exc.strerror}")
    finally:
        lock.release()
    s = d.lab.status()
    applied = sum(1 for n in intent.configs if (d.dir / STARTUP / f"{n}.conf").exists())
    out.print(f"{fabric.name}: {what} — {s['switches']} switches ({s['daemons']} FRR daemons) and {s['hosts']} hosts "
              f"in network namespaces lm{s['tag']}-*; switches start with "
              + (f"the configurations loom applied last ({applied})" if applied else
                 "their bootstrap configuration (interfaces, no routing): `loom plan` then `loom apply`")
              + f"; state in {d.dir}", highlight=False, markup=False)


def sim_down(fabric: Fabric, force: bool) -> None:
    from loom.cli import _fail, _progress, out
    from loom.push import audit
    from loom.push.apply import recover, take_lock
    from loom.push.errors import PlanError
    from loom.push.frr_target import FrrSimTarget

    d = FrrSimTarget.of(fabric.name)
    lock = None
    try:
        lock = take_lock(d, "sim down", _progress)
        recover(d, progress=_progress)
    except PlanError as exc:
        if not force:
            _fail(f"{exc} (or `loom sim down --force`)")
        _progress(f"--force: stopping anyway ({exc})")
    try:
        stopped = d.lab.down()
        audit.record(d.dir, "sim down" if lock else "sim down forced", stopped=len(stopped))
    finally:
        if lock:
            lock.release()
    out.print(f"stopped {len(stopped)} FRR daemons and the namespaces of {fabric.name}" if stopped else "nothing was running",
              highlight=False)


def sim_status(fabric: Fabric, as_json: bool) -> None:
    from loom.cli import out
    from loom.push.frr_lab import FrrLab
    from loom.push.journal import Journal
    from loom.push.links import links_down
    from loom.push.lock import is_free

    lab = FrrLab.of(fabric.name)
    s = {**lab.status(), "technology": "ethernet", "lock_free": is_free(lab.dir),
         "interrupted_apply": Journal(lab.dir).load() is not None, "links_down": links_down(lab.dir)}
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
    else:
        out.print(f"live FRR simulation: {'up' if s['up'] else 'down'}  switches: {s['switches']}  daemons: {s['daemons']}  "
                  f"hosts: {s['hosts']}  lock: {'free' if s['lock_free'] else 'held'}"
                  + (f"  not running: {', '.join(s['down'][:5])}" if s["down"] else "")
                  + (f"  links down: {', '.join(s['links_down'])}" if s["links_down"] else "")
                  + ("  an interrupted apply awaits recovery (any loom command resolves it)" if s["interrupted_apply"] else ""),
                  highlight=False, markup=False)
    raise typer.Exit(0 if s["up"] else 1)


def plan(model: Path, fabric: Fabric, out_file: Path | None, target: str, inventory: Path | None,
         ssh_config: Path | None, as_json: bool = False) -> None:
    from loom.cli import _fail, _plan_on
    from loom.push.errors import PlanError
    from loom.push.frr_plan import frr_has_changes, make_frr_plan
    from loom.push.frr_ssh import FrrSshTarget
    from loom.push.frr_target import FrrSimTarget

    if target not in ("sim", "ssh"):
        _fail(f"unknown target {target!r}: use --target sim or --target ssh")
    try:
        d = FrrSimTarget.of(fabric.name) if target == "sim" else FrrSshTarget.from_inventory(
            fabric, inventory or Path("inventory") / fabric.name, str(ssh_config.resolve()) if ssh_config else None)
    except PlanError as exc:
        _fail(exc)
    _plan_on(d, model, fabric, out_file, "read switches + render + diff", make_frr_plan, print_plan, frr_has_changes,
             as_json)


def print_plan(p: dict, saved: Path) -> None:
    from rich.markup import escape
    from rich.table import Table

    from loom.cli import out
    from loom.model.names import natural
    from loom.push.frr_plan import frr_has_changes

    if p["drift"]:
        out.print(f"[yellow]drift:[/yellow] {p['drift']}", highlight=False)
    sw = p["switches"]
    sessions = [sum(s["sessions"][i] for s in sw.values()) for i in (0, 1)]
    bgp = f"; BGP sessions {sessions[0]}/{sessions[1]} established" if sessions[1] else ""
    if not frr_has_changes(p):
        out.print(f"[green]No changes.[/green] Every switch of {p['fabric']} runs its configuration and holds the "
                  f"routes the model wants{bgp}.", highlight=False)
        return
    c = p["changes"]
    out.print(f"Plan for {p['fabric']}: [bold]{c['lines_changed']}[/bold] configuration lines on [bold]"
              f"{c['switches_touched']}[/bold] switches; routes differ from the intent on {c['fib_differing']} switches{bgp}",
              highlight=False)
    t = Table("switch", "config lines", "routes differing", "BGP sessions", "first change")
    changed = [n for n in sw if sw[n]["changes"] or sw[n]["fib"]]
    for n in sorted(changed, key=natural)[:15]:
        s = sw[n]
        t.add_row(n, str(len(s["changes"])), str(len(s["fib"])), f"{s['sessions'][0]}/{s['sessions'][1]}",
                  escape((s["changes"] or s["fib"])[0]))
    if len(changed) > 15:
        t.add_row(f"... {len(changed) - 15} more", "", "", "", "")
    out.print(t)
    out.print(f"saved in {saved}; apply with: loom apply {saved}", highlight=False, markup=False)
