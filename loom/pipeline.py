"""Loom's stages in the order they run, written once (as netlab's `augment/main.py` lists its
transformations and pyavd its stages).  Every command, `loom tf`, `loom netbox` and the watcher
go through these functions; none strings the stages together on its own.

    model     loom.model     the YAML, validated: schema, references, port budgets, limits
    expand    loom.expand    every switch, port, cable, GUID and LID (with the lock file), as built
    route     loom.routing   static forwarding tables per plane (engines behind one interface)
    qos/host  loom.qos       SLs, VLs and arbitration / DSCP, PFC, ECN; loom.host: host settings
    checks    loom.checks    reachability, deadlock freedom per VL, balance against the bound, eBB
    render    loom.render    OpenSM files, switch configs, cabling sheets, inventory, Slurm, NetBox
    push      loom.fabrics   per technology: simulate, plan, apply (journalled, read back), watch
              loom.push      the engine the backends share: lock, journal, audit, plan files

Stages import only downward: `model` imports nothing of the others, `push` and `fabrics` may
import them all.  A stage that fails ends the run with its own error (ModelError, RoutingError,
PlanError, TargetError), which the command line turns into a message and an exit code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

STAGES = ("model", "expand", "route", "qos", "host", "checks", "render", "push")


def _direct(name: str, fn: Callable, *args):
    return fn(*args)


def load(model: Path, as_built: bool = True, marked: bool = True):
    """model → expand: the fabric of a model file, with its lock file (ModelError if invalid);
    `marked=False`: with the cables `loom mark down` takes out of routing (the floor's cabling)."""
    from loom.expand import load_fabric

    return load_fabric(model, as_built=as_built, marked=marked)


def route(fabric, engine: str = "auto") -> list:
    """route: the forwarding tables of every plane (RoutingError if no engine routes it)."""
    from loom.routing import get_engine, route as route_planes

    get_engine(engine)  # an unknown engine is refused before any work
    return route_planes(fabric, engine)


def check(fabric, tables: list, ebb_samples: int) -> list[dict]:
    """qos → checks: every plane's verdicts (reachability, deadlock per VL, balance, QoS, eBB)."""
    from loom.checks import check_tables
    from loom.qos import fabric_qos

    qos = fabric_qos(fabric.model)
    return [check_tables(t, ebb_samples, qos) for t in tables]


def plan(model: Path, fabric, target, progress: Callable[[str], None], phase: Callable = _direct) -> dict:
    """push, read only: settle an interrupted apply on `target`, make the plan with the fabric's
    backend and save it as the target's `last-plan.json` (what `loom apply --model` takes).
    The target is closed afterwards.  PlanError / TargetError when it cannot be made."""
    from loom.fabrics import backend_for
    from loom.push.packing import plan_json

    backend = backend_for(fabric)
    try:
        if target.kind != "sim":  # the marker apply looks for (the simulations' are their fabric.net, frr-lab.json)
            _write(target.dir / "target.json", json.dumps(target.spec(), indent=1) + "\n")
        backend.settle(target, progress)
        p = phase(backend.plan_label, backend.make_plan, model, fabric, target)
    finally:
        target.close()
    _write(target.dir / "last-plan.json", plan_json(p))
    return p


def _write(path: Path, text: str) -> None:
    from loom.files import write_atomic
    from loom.push.errors import PlanError

    try:
        write_atomic(path, text)
    except OSError as exc:
        raise PlanError(f"cannot write {path}: {exc.strerror}; free space or make the directory writable") from None


def apply(plan_doc: dict, plan_path: Path, progress: Callable[[str], None], keep_live: bool = False,
          from_edited: bool = False, timeout: float | None = None):
    """push: apply a saved plan with its technology's backend — lock, check, journal, push, read
    back, restore on failure.  The one entry point of plan files (`loom apply`) and Terraform
    (`loom tf routing --apply`); the watcher applies its reroutes through the same engine
    (`loom.push.engine`) with tables instead of a plan."""
    from loom.fabrics import backend_of_plan

    backend = backend_of_plan(plan_doc)
    backend.check_shape(plan_doc, plan_path)  # what `loom show` refuses, apply refuses too, before any work
    return backend.apply(plan_doc, plan_path, progress, keep_live, from_edited, timeout)
