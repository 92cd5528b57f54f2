"""A plan is checked, not trusted: before anything is written to a target, `check_plan` proves
the plan file is the one `loom plan` made (its own digest and the digest of its tables), that
the model it names is unchanged, and re-runs every check (`loom.checks.check_tables`:
reachability and forwarding loops, deadlock freedom per VL, balance, QoS) on the very tables
it is about to push, and the partition intent on the partitions file it carries.  The first
failing check is the refusal's reason."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from loom.checks import check_tables
from loom.expand import Fabric
from loom.qos import plan_qos
from loom.render.opensm import DumpMismatch, guid2lid, lfts_dump, match_dump, parse_lfts_dump, tables_from_dump
from loom.render.opensm_qos import sm_options
from loom.routing import subnet
from loom.routing.base import Tables
from loom.routing.subnet import Subnet

from loom.push.errors import PlanError
from loom.push.planfile import as_planned, check_signed, checked_model
from loom.push.packing import digest_live, rows_text
from .pkeys import check_planned as check_partitions_planned
from .qos_conf import conf_intent, desired_conf

REQUIRED = ("version", "fabric", "model", "model_sha256", "lock_sha256", "state_dir", "live_sha256", "desired_sha256", "qos", "changes",
            "desired_lfts", "previous_lfts", "guid2lid", "plan_sha256")


def push_verdict(tables: Tables, qos, balance_only=None) -> dict:
    """The checks a push is refused on (plan, apply, the watcher), on `tables`: every check of
    `loom check` but eBB and the links-into figures, which only `loom check` reports and judges
    (a third of a second of a watcher's reroute when a spine is down)."""
    return check_tables(tables, ebb_samples=0, qos=qos, balance_only=balance_only, into=False)


def failing_checks(verdict: dict, balance: bool = True, drops: bool = True) -> list[str]:
    """The checks a `check_tables` verdict fails, in the order they are reported, with the first
    example of each (balance left out unless `balance`; reachability only for its loops unless
    `drops`)."""
    r, q = verdict["reachability"], verdict["qos"]
    failed = []
    if not verdict["reachable"] and (drops or r["loop_pairs"] or r["loops"]):
        switches = f", {r['switch_unreachable']} switch-to-LID routes dropped" if r.get("switch_unreachable") else ""
        failed.append(f"reachability ({r['unreachable_pairs']} unreachable CA pairs, {r['loop_pairs']} looping{switches}"
                      + (f"; e.g. {r['examples'][0]}" if r["examples"] else "") + ")")
    if not verdict["deadlock_free"]:
        cycle = verdict["cycle"] or []
        failed.append("deadlock freedom (credit loop" + (f": {' → '.join(map(str, cycle[:4]))} ..." if cycle else "") + ")")
    if balance and not verdict["balance"]["within_bound"]:
        b = verdict["balance"]
        failed.append(f"balance ({b['max_dest_per_up_port']} destinations per up-port, bound {b['lower_bound']})")
    if q is not None and not q["ok"]:
        failed.append("QoS (" + "; ".join(q["problems"][:2] or ["a VL has a credit loop"]) + ")")
    return failed


@dataclass
class CheckedPlan:
    fabric: Fabric
    tables: Tables
    desired_lfts: str  # OpenSM's file, written from the checked tables (portguid comments and all)
    qos_intent: dict | None
    previous_lfts: str  # the live tables the plan was made against, as dump text
    design_lfts: str | None  # design tables the plan carries for loom to keep (`design.py`), as dump text


def check_plan(plan: dict, where: str = "the plan", on_subnet: Callable[[Subnet], None] = lambda sn: None) -> CheckedPlan:
    """Raise PlanError with the first reason not to push this plan; else its checked contents.
    `on_subnet` hears the subnet the plan was made for once its signature and tables' digest
    hold, before the checks run on it (apply reads the live tables meanwhile)."""
    check_signed(plan, REQUIRED, where)
    want = rows_text(plan["desired_lfts"], where, "desired_lfts")
    previous = rows_text(plan["previous_lfts"], where, "previous_lfts")
    if digest_live(want) != plan["desired_sha256"]:
        raise PlanError(f"{where}: desired_lfts do not match desired_sha256 (the tables were edited); run `loom plan` again")
    model = Path(plan["model"])
    fabric = as_planned(plan, checked_model(plan, where), where)
    sn = subnet(fabric, 0)
    on_subnet(sn)
    try:
        tables = _tables_of(sn, want, "plan")
    except DumpMismatch as exc:
        raise PlanError(f"{where}: desired_lfts do not fit the fabric of {model} ({exc}); run `loom plan` again") from None
    qos = plan_qos(fabric.model)
    failed = failing_checks(push_verdict(tables, qos))
    if failed:
        raise PlanError(f"{where} fails {failed[0]}: refusing to push it; run `loom check {model}` and `loom plan` again")
    if plan["guid2lid"] != guid2lid(tables):
        raise PlanError(f"{where}: guid2lid does not match the fabric's LIDs; run `loom plan` again")
    conf = desired_conf(fabric.name, qos, plan["qos"].get("previous_conf", ""), sm_options(fabric.model))
    if plan["qos"].get("desired_conf") != conf:
        raise PlanError(f"{where}: its QoS options differ from what {model} gives; run `loom plan` again")
    check_partitions_planned(plan, fabric, where)
    design = plan.get("design_lfts")
    return CheckedPlan(fabric, tables, lfts_dump(tables), conf_intent(conf), previous,
                       rows_text(design, where, "design_lfts") if design is not None else None)


def check_input_file(fabric: Fabric, text: str, ours: bool) -> list[str]:
    """Failing checks of an OpenSM input file found on disk, on `fabric` as it is cabled (start-up
    after a crash or a restart): what OpenSM must never load — loops, credit loops, QoS, and
    unreachable destinations unless the file is what loom applied last (`ours`).  Loom's own
    tables passed every check on the fabric as it stood; since, a failure may have healed
    (tables around a cable the restart brought back), a switch been marked down (design tables
    through it), or a mark taken back (tables that drain it): they are safe, and far nearer the
    model than OpenSM's own routing, which a refusal falls back to and the next plan took for a
    change made outside loom.  Balance is not asked either; the next plan and apply restore it."""
    try:
        tables = _tables_of(subnet(fabric, 0), text, "input file")
    except DumpMismatch as exc:
        return [f"fit to the model ({exc})"]
    return failing_checks(push_verdict(tables, plan_qos(fabric.model)), balance=False, drops=not ours)


def _tables_of(sn: Subnet, text: str, engine: str) -> Tables:
    """Tables of a dump that must be this subnet's (its switches and LIDs), else DumpMismatch."""
    match_dump(sn, parse_lfts_dump(text), text)
    return tables_from_dump(sn, text, engine)
