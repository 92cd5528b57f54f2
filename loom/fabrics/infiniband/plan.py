"""Plan, Terraform-style, with the fabric itself as the state.

`make_plan` routes the fabric as it stands — the model's design, minus what the model and the
lock declare down, minus what the target does not have up now (`loom.expand.asbuilt`) — as the
minimal repair of the design tables (`design.py`: a dead spine moves what it carried, and when
it is back the fabric returns to the design), checks it, reads the live LFTs back from the
running fabric (`dump_fts`, the switches in service) and records what would change; the plan carries the desired tables, the live
tables it was computed against (for rollback), their digests and a digest of the whole plan
(`plan_sha256`), which `loom apply` verifies before it re-checks the tables (`checked.py`).
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from pydantic import BaseModel

from loom.checks import Walk, check_balance
from loom.expand import Fabric
from loom.expand.asbuilt import AsBuilt, load_as_built
from loom.push.errors import PlanError, TargetError
from loom.push.packing import digest_tables, table_rows
from loom.push.planfile import content_digest, plan_header
from loom.qos import plan_qos
from loom.render.opensm import guid2lid
from loom.render.opensm_qos import sm_options
from loom.routing import subnet
from loom.routing.base import NO_ROUTE, Tables
from loom.routing.changes import table_changes
from loom.routing.updown import UpDown

from .checked import failing_checks, push_verdict
from .design import applied_last, as_it_stands, design_tables, key_of_last, last_applied, settled_route
from .edited import edited_note, edited_record
from .lft_readback import read_live
from .pkeys import partitions_change, plan_partitions
from .planned import inputs_digest, remember
from .qos_conf import UNMANAGED, conf_intent, desired_conf, qos_on
from .qos_readback import digest, mismatches
from .target import Target


def diff_tables(live: Tables, want: Tables) -> dict:
    """Entries that change, per switch and in total, the destinations whose routes move, those
    only added and those removed (`loom.routing.changes`: the count whatif and the watcher make
    too).  A removed destination the model no longer has is named by its LID."""
    ch = table_changes(live, want)
    sn = want.subnet

    def named(lids) -> list[dict]:
        return [{"lid": int(l), "name": sn.lid_name(int(l)) if sn.lid_switch[l] >= 0 or sn.lid_port[l] >= 0
                 else f"LID {int(l)} (not in the model)"} for l in lids]

    return {
        "switches_touched": ch.switches,
        "entries_changed": ch.entries,
        "per_switch": {sn.name(r): int(n) for r, n in enumerate(ch.per_switch()) if n},
        "destinations_moved": named(ch.destinations_moved),
        "destinations_added": named(ch.destinations_added),
        "destinations_removed": named(ch.destinations_removed),
    }


def balance_summary(t: Tables, checked: list[tuple[Tables, dict]] = ()) -> dict:
    """The plan's balance line for `t`, from the check verdict of `t` in `checked` (tables and
    `check_tables` verdicts the plan made already) where there is one: the balance check of a
    two-zone fabric is a third of a second of CPU, spent while the QoS read-back needs it."""
    b = next((v["balance"] for seen, v in checked if seen is t), None) or check_balance(Walk(t)).as_dict()
    return {"max_dest_per_up_port": b["max_dest_per_up_port"], "lower_bound": b["lower_bound"],
            "storage": b["per_role"].get("storage", {}).get("max_dest_per_up_port"), "within_bound": b["within_bound"]}


def make_plan(model_path: Path, fabric: Fabric, target: Target) -> dict:
    """Read the live tables through the target, route the fabric as it stands (the design
    tables, or their repair around what is down), check the result, and describe the
    difference (standbys included)."""
    model_path = Path(model_path).resolve()
    what = "the simulated fabric" if target.kind == "sim" else f"the subnet manager ({target.where()})"
    sms = subnet_managers(target, f"{what} of {fabric.name}", f"; run `loom sim up {model_path}`" if target.kind == "sim" else "")
    state = state_of(model_path, target)
    fabric = state.fabric
    sn = subnet(fabric, 0)
    inputs = target.read_inputs()
    qos = plan_qos(fabric.model)
    # the QoS read-back waits on the fabric (seconds of SMPs), the P_Key read-back, reading the
    # forwarding tables, routing and checks on it and on the CPU: all at once
    with ThreadPoolExecutor(2) as pool:
        reading = pool.submit(_plan_qos, fabric, sn, qos, target, inputs["conf"])
        pkeys = pool.submit(plan_partitions, fabric, sn, target, inputs.get("partitions"))
        live = read_live(target, sn)
        live_sha = digest_tables(live)
        inputs_before = inputs_digest(target.dir, routing_key(fabric), routing_key(state.design), live_sha)
        checked: list[tuple[Tables, dict]] = []

        def failing(t: Tables) -> list[str]:
            checked.append((t, push_verdict(t, qos)))
            return failing_checks(checked[-1][1])

        routed = model_routing(state, target.dir, live, failing)
        tables, last = routed.tables, routed.last
        if routed.failed:
            raise PlanError(f"the routing for {fabric.name} fails {routed.failed[0]}; run `loom check {model_path}` for details")
        desired_sha = digest_tables(tables)
        if inputs_digest(target.dir, routed.key, routed.design_key, live_sha) == inputs_before:  # no apply meanwhile
            remember(target.dir, inputs_before, desired_sha,
                     digest_tables(routed.new_design) if routed.new_design is not None else None)
        after = balance_summary(tables, checked)
        balance = {"balance_before": after if (live.lft == tables.lft).all() else balance_summary(live), "balance_after": after}
        qos_part = reading.result()
        partitions = pkeys.result()
    drift = []
    if drifted(target, sn, live, live_sha, last):
        drift.append("live forwarding tables differ from what loom applied last (changed outside loom)")
    if routed.edited is not None and (live.lft != tables.lft).any():
        drift.append(edited_note(routed.edited))
    if qos_part["drift"]:
        drift.append(qos_part["drift"])
    if partitions["drift"]:
        drift.append(partitions["drift"])
    standbys = target.standby_drift(inputs)
    if standbys:
        drift.append(f"{len(standbys)} standby subnet manager(s) hold other input files than the master "
                     f"(a failover would serve other tables): {standbys[0]}")
    plan = {
        **plan_header(model_path, fabric, target),
        "live_sha256": live_sha,
        "desired_sha256": desired_sha,
        "routing_key": routed.key,
        "design_key": routed.design_key,
        "as_built": {**state.as_dict(), "routing": routed.made},
        "drift": "; ".join(drift) or None,
        "new_switches": _new_switches(sn, last),
        "qos": qos_part,
        "partitions": partitions,
        "changes": diff_tables(live, tables),
        "standbys_differing": standbys,
        "subnet_managers": sms,
        **balance,
        "desired_lfts": table_rows(tables),
        "design_lfts": table_rows(routed.new_design) if routed.new_design is not None else None,
        "previous_lfts": table_rows(live),
        "guid2lid": guid2lid(tables),
    }
    return {**plan, "plan_sha256": content_digest(plan)}


@dataclass
class Routed:
    """What the model routes on the fabric as it stands, and from what."""

    tables: Tables
    made: str  # how: "as applied last", "design", a repair, "the model's routing (...)"
    failed: list[str]  # the checks the tables fail
    key: str  # the routing key of the fabric as it stands
    design_key: str  # the routing key of the intact design
    new_design: Tables | None  # design tables loom does not keep yet (a plan carries them to its apply)
    last: Tables | None  # what loom applied last
    edited: dict | None  # the record of an apply from an edited plan on this fabric (`edited.py`)


def model_routing(state: AsBuilt, state_dir: Path, live: Tables, failing: Callable[[Tables], list[str]]) -> Routed:
    """The tables the model routes on the fabric as it stands — what apply was made for, so
    plan and apply compute them the same way (apply refuses a plan holding other tables
    unless told it was edited on purpose): what loom applied last when it was this fabric's
    plan (a plan's routing is a fixpoint); the model's routing recorded by an apply from an
    edited plan (the edited tables are not the model's); else the design tables, or their
    repair around what is down."""
    fabric = state.fabric
    key, design_key = routing_key(fabric), routing_key(state.design)
    last = last_applied(state_dir, fabric)
    edited = edited_record(state_dir, fabric)
    if edited is not None and edited[0]["routing_key"] == key:
        return Routed(edited[1], "the model's routing (the live tables came from an edited plan)",
                      failing(edited[1]), key, design_key, None, last, edited[0])
    if last is not None and key_of_last(state_dir) == key:
        return Routed(last, "as applied last", failing(last), key, design_key, None, last, None)
    design, kept = design_tables(state_dir, state.design, design_key, last or live)
    tables, made, failed = as_it_stands(state, design, failing)
    if failed and kept:
        # kept design tables that fail are not the design's (an earlier loom recorded a repair
        # around a failure as the design): the design is routed afresh
        design, kept = settled_route(state.design, last or live), False
        tables, made, failed = as_it_stands(state, design, failing)
    new_design = None if kept or tables is design else design
    return Routed(tables, made, failed, key, design_key, new_design, last, edited and edited[0])


def subnet_managers(target: Target, what: str, advice: str = "") -> list[dict]:
    """The fabric's subnet managers, the master first (SMInfo, `sminfo.py`); PlanError when none
    or several are master, or the master's OpenSM is not running where the target pushes."""
    try:
        master, ports = target.subnet_managers()
        target.health()
    except TargetError as exc:
        raise PlanError(f"{what} is not up: {exc}{'' if 'loom sim up' in str(exc) else advice}") from None
    return [p.as_dict() for p in (master, *(p for p in ports if p is not master))]


def state_of(model_path: Path, target: Target) -> AsBuilt:
    """The model's design, what is declared down, and what the target observes down now."""
    from .drains import drained_ids

    state = load_as_built(model_path)
    try:  # the watcher's drains too: a plan during a drain keeps it (`drains`)
        return state.with_observed(sorted(set(target.missing_cables(state.design)) | set(drained_ids(target.dir))))
    except TargetError as exc:
        raise PlanError(str(exc)) from None


def drifted(target: Target, sn, live: Tables, live_sha: str, last: Tables | None) -> bool:
    """Do the live tables differ from what loom applied last?  Compared on the switches in
    service only when loom's copy of them is at hand: a switch that is down or cut off since
    cannot answer, which is the fabric as it stands, not a change made outside loom."""
    if not (target.dir / "last-applied.sha256").exists():
        return False
    if last is None:
        return not applied_last(target.dir, live_sha)
    rows = UpDown.of(sn).live & (last.lft != NO_ROUTE).any(axis=1)  # switches loom programmed, in service now
    return bool((last.lft[rows] != live.lft[rows]).any())


def _new_switches(sn, last: Tables | None) -> list[str]:
    """Switches in service that the tables loom applied last did not program: the fabric was
    re-cabled (grown) since; their tables are added, which is not drift."""
    if last is None:
        return []
    new = UpDown.of(sn).live & ~(last.lft != NO_ROUTE).any(axis=1)
    return [sn.name(int(x)) for x in np.flatnonzero(new)]


def routing_key(fabric: Fabric) -> str:
    """A digest of everything routing reads — the model's settings, every switch, port and cable
    as expanded (lock file and catalogue included) — and of loom's version.  Partitions and the
    health limits and OpenSM's sweep options are left out: they change who may talk, when a link
    is drained and how fast OpenSM sweeps, never a route."""
    import loom

    h = hashlib.sha256(f"{loom.__version__}\n{fabric.model.model_dump_json(exclude={'partitions', 'health', 'opensm'})}\n".encode())
    h.update(json.dumps([(s.name, s.guid, s.lid, s.ports, s.role, s.zone, s.plane) for s in fabric.switches]).encode())
    h.update(json.dumps([(p.ca, p.port, p.guid, p.lid, p.plane, p.zone) for p in fabric.ports]).encode())
    c = fabric.cables
    for a in (c.a_kind, c.a_dev, c.a_port, c.b_kind, c.b_dev, c.b_port, c.kind, c.plane, c.speed_gbps):
        h.update(a.tobytes())
    return h.hexdigest()


def _plan_qos(fabric: Fabric, sn, qos, target: Target, conf: str | None) -> dict:
    """Desired OpenSM QoS options, and what the ports hold now (read back when QoS is or was on)."""
    previous = conf if conf is not None else UNMANAGED
    desired = desired_conf(fabric.name, qos, previous, sm_options(fabric.model))
    part = {"desired_conf": desired, "previous_conf": previous, "intent": conf_intent(desired), "live_sha256": None,
            "ports_differing": 0, "examples": [], "conf_changes": desired != previous, "drift": None}
    if qos_on(desired) or qos_on(previous):
        live = target.read_qos(sn)
        part["live_sha256"] = digest(live)
        bad = mismatches(live, part["intent"])
        part["ports_differing"], part["examples"] = len(bad), bad[:5]
        last = target.dir / "last-applied-qos.sha256"
        if bad and last.exists() and last.read_text().strip() != part["live_sha256"]:
            part["drift"] = f"QoS tables differ from what loom applied last on {len(bad) or 'some'} ports (changed outside loom)"
    return part


def has_changes(plan: dict) -> bool:
    q = plan["qos"]
    return bool(plan["changes"]["entries_changed"] or q["conf_changes"] or q["ports_differing"]
                or plan.get("standbys_differing") or partitions_change(plan))


class _Moved(BaseModel):
    lid: int
    name: str


class _Changes(BaseModel):
    entries_changed: int
    switches_touched: int
    per_switch: dict[str, int]
    destinations_moved: list[_Moved]
    destinations_added: list[_Moved] = []
    destinations_removed: list[_Moved] = []


class _Qos(BaseModel):
    intent: dict | None
    conf_changes: bool
    ports_differing: int
    examples: list[str]
    desired_conf: str  # what apply pushes and compares (not printed)
    previous_conf: str


class _Balance(BaseModel):
    max_dest_per_up_port: int | None
    lower_bound: int | None
    storage: int | None


class _Target(BaseModel):
    kind: str


class _Sm(BaseModel):
    name: str
    lid: int
    guid: str | None
    priority: int | None
    state: str


class _Summary(BaseModel):
    """The parts of a plan `loom show` prints, and the QoS options apply reads (other keys are
    checked by apply's `check_plan`)."""

    fabric: str
    model: str
    created: str
    user: str
    target: _Target
    drift: str | None
    qos: _Qos
    changes: _Changes
    standbys_differing: list[str] = []
    new_switches: list[str] = []
    subnet_managers: list[_Sm] = []
    balance_before: _Balance
    balance_after: _Balance


def check_shape(plan: dict, path: Path) -> None:
    """PlanError unless every field `loom show` prints has its shape."""
    from pydantic import ValidationError

    from loom.push.packing import checked_rows

    try:
        _Summary.model_validate(plan)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise PlanError(f"{path}: {'.'.join(map(str, e['loc']))}: {e['msg']}; make a new plan with `loom plan`") from None
    for key in ("desired_lfts", "previous_lfts"):
        checked_rows(plan.get(key), str(path), key)
    if plan.get("design_lfts") is not None:
        checked_rows(plan["design_lfts"], str(path), "design_lfts")
