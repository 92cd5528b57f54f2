"""Plan for an Ethernet fabric, Terraform-style, with the switches themselves as the state.

Per switch: the FRR configuration Loom renders for it against the one it runs (FRR's own diff,
`loom.fabrics.ethernet.reload`), and the kernel FIB it holds against the FIB the configuration must
produce (`loom.render.frr_intent`).  The plan records each switch's desired configuration, the
digest of the running one it was computed against (a later apply refuses a stale plan) and a
digest of the whole plan (`plan_sha256`), as the InfiniBand plan does.

FRR prints a few lines of a configuration differently from how they were written (`timers bgp
3 9` under `frr defaults datacenter` is a default and is not shown; vtysh shows its own
hostname), so a reload never makes the diff empty.  `loom apply` records, per switch, the lines
still reported right after a verified reload (`residual` in `last-applied-frr.json`); a plan
leaves those out while the desired configuration is the one applied — measured, not hard-coded.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from loom.expand import SWITCH, Fabric, load_fabric
from loom.expand.asbuilt import AsBuilt, load_as_built
from loom.render.frr_intent import Fib, bgp_peers, desired_configs, expected_fibs, fib_differences, link_prefixes, plane_tables

from . import reload as frr_reload
from .answers import carriers
from loom.push.errors import PlanError, TargetError
from loom.push.planfile import as_planned, check_signed, checked_model, content_digest, plan_header
from .target import FrrTarget

LAST_APPLIED = "last-applied-frr.json"
TECHNOLOGY = "ethernet"
WORKERS = 4  # switches read and diffed at once (each a few vtysh runs)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Intent:
    """What every switch must run (`configs`: its frr.conf) and hold (`fibs`)."""

    configs: dict[str, str]
    startup: dict[str, str]  # the bootstrap configuration a fresh switch starts with
    fibs: dict[str, Fib]
    optional: set[str]  # prefixes a FIB may hold without being asked (switch-to-switch /31s)
    peers: dict[str, set[str]]  # BGP neighbours whose sessions must be established (`frr_intent.bgp_peers`)


def intent_of(fabric: Fabric, now: Fabric | None = None) -> Intent:
    """What the switches of `fabric` (the design less what is declared down) must run and hold
    while `now` (less what is observed down too; None when nothing is) carries the traffic.  With
    BGP the configuration is `fabric`'s — a session over a cable that is down just goes down,
    withdrawing its routes — and only the FIBs are those of the fabric as it stands; static
    routes are written for it."""
    tables = plane_tables(fabric)
    files = desired_configs(tables)
    if now is not None:
        held = plane_tables(now)
        fibs = expected_fibs(held, desired_configs(held))
        if fabric.model.addressing.routing == "static":
            tables, files = held, desired_configs(held)
    else:
        fibs = expected_fibs(tables, files)
    up = bgp_peers(fabric if now is None else now)  # a switch gone from the fabric as it stands expects none
    return Intent({k: v["frr.conf"] for k, v in files.items()}, {k: v["zebra.conf"] for k, v in files.items()},
                  fibs, link_prefixes(fabric), {k: up.get(k, set()) for k in files})


def sessions(peers: dict[str, str], expected: set[str]) -> list[int]:
    """[established, expected]: of the neighbours the intent expects up, how many are."""
    return [sum(1 for a in expected if peers.get(a) == "Established"), len(expected)]


def cables_down(target: FrrTarget, design: Fabric) -> list[str]:
    """Design cables (IDs) with a switch end whose interface has no carrier (`ip -j link`): the
    observed part of the fabric as it stands, read from the switches themselves."""
    from loom.render.frr_intent import interface_names

    names = interface_names(design)
    by_switch = {}
    switches = sorted(target.switches())
    for sw, text in zip(switches, parallel(target.links, switches)):
        by_switch[sw] = carriers(text, sw)
    c = design.cables
    down = set()
    for i in range(len(c)):
        for kind, dev, port in ((c.a_kind[i], c.a_dev[i], c.a_port[i]), (c.b_kind[i], c.b_dev[i], c.b_port[i])):
            if int(kind) == SWITCH:
                sw = design.switches[int(dev)].name
                ifname = names.get((int(dev), int(port)))
                if by_switch.get(sw, {}).get(ifname) is False:
                    down.add(design.cable_id(i))
    return sorted(down)


def read_last(directory: Path) -> dict:
    """Per switch, what loom applied last: desired and running digests, residual diff lines."""
    try:
        return json.loads((Path(directory) / LAST_APPLIED).read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def parallel(fn, items: list):
    """`fn` over `items` a few at a time (each call waits on vtysh or ip), results in order."""
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(fn, items))


def config_changes(desired: str, running: str, last: dict | None) -> list[str]:
    """FRR's diff of running → desired, less the residual lines of the same desired config."""
    lines = frr_reload.delta(desired, running)
    residual = set(last["residual"]) if last and last.get("desired_sha256") == sha(desired) else set()
    return [l for l in lines if l not in residual]


def observe(target: FrrTarget, intent: Intent, last: dict) -> dict[str, dict]:
    """Read every switch (running configuration, FIB, sessions) and compare it with the intent."""
    def one(switch: str) -> dict:
        running = target.running_config(switch)
        desired = intent.configs[switch]
        done = last.get(switch)
        return {"desired_sha256": sha(desired), "running_sha256": sha(running),
                "changes": config_changes(desired, running, done),
                "fib": fib_differences(intent.fibs.get(switch, {}), target.fib(switch), intent.optional),
                "sessions": sessions(target.peers(switch), intent.peers[switch]),
                "drift": bool(done) and done.get("running_sha256") != sha(running)}

    names = sorted(intent.configs)
    return dict(zip(names, parallel(one, names)))


def make_frr_plan(model_path: Path, fabric: Fabric, target: FrrTarget) -> dict:
    """Read every switch through the target and describe what apply would change."""
    model_path = Path(model_path).resolve()
    try:
        target.health()
    except TargetError as exc:
        raise PlanError(f"{fabric.name}: {exc}") from None
    if not target.cabled_as(load_fabric(model_path, marked=False)):
        raise PlanError(f"the live simulation is cabled differently from {model_path}: `loom sim up {model_path}` "
                        "re-cables it")
    state = load_as_built(model_path)
    try:
        state = state.with_observed(cables_down(target, state.design))
    except TargetError as exc:
        raise PlanError(str(exc)) from None
    intent = intent_of(AsBuilt(state.design, state.declared).fabric, state.fabric if state.observed else None)
    missing = sorted(set(intent.configs) - set(target.switches()))
    if missing:
        raise PlanError(f"{target.where()} lacks switches of {model_path}: {', '.join(missing[:5])}")
    switches = observe(target, intent, read_last(target.dir))
    for name, s in switches.items():
        s["desired"] = intent.configs[name]
    drifted = [n for n, s in switches.items() if s["drift"]]
    plan = {
        **plan_header(model_path, fabric, target),
        "technology": TECHNOLOGY,
        "drift": (f"the running configuration of {len(drifted)} switch(es) changed since loom applied it "
                  f"(outside loom): {', '.join(drifted[:5])}{' ...' if len(drifted) > 5 else ''}") if drifted else None,
        "as_built": state.as_dict(),
        "changes": summary(switches),
        "switches": switches,
    }
    return {**plan, "plan_sha256": content_digest(plan)}


def summary(switches: dict[str, dict]) -> dict:
    return {"switches_touched": sum(1 for s in switches.values() if s["changes"]),
            "lines_changed": sum(len(s["changes"]) for s in switches.values()),
            "fib_differing": sum(1 for s in switches.values() if s["fib"]),
            "per_switch": {n: len(s["changes"]) for n, s in switches.items() if s["changes"]}}


def frr_has_changes(plan: dict) -> bool:
    c = plan["changes"]
    return bool(c["switches_touched"] or c["fib_differing"])


REQUIRED = ("version", "technology", "fabric", "model", "model_sha256", "lock_sha256", "state_dir", "target", "changes", "switches",
            "plan_sha256")


def check_frr_plan(plan: dict, where: str = "the plan") -> Intent:
    """Raise PlanError with the first reason not to push this plan (not made by loom, edited,
    its model changed, its configurations not the model's); else the model's intent."""
    check_signed(plan, REQUIRED, where)
    _check_switches(plan, where)
    model = plan["model"]
    fabric = checked_model(plan, where)
    now = None
    if "as_built" in plan:
        if not isinstance(plan["as_built"], dict):
            raise PlanError(f"{where}: as_built is not a record of what is down; run `loom plan` again")
        state = load_as_built(model)
        fabric = AsBuilt(state.design, state.declared).fabric
        now = as_planned(plan, fabric, where) if plan["as_built"].get("observed") else None
    intent = intent_of(fabric, now)
    wrong = sorted(n for n, s in plan["switches"].items() if intent.configs.get(n) != s.get("desired"))
    if wrong or set(intent.configs) != set(plan["switches"]):
        raise PlanError(f"{where}: the configurations of {', '.join(wrong[:3]) or 'its switches'} are not what "
                        f"{model} renders; run `loom plan` again")
    return intent


SWITCH_KEYS = {"desired": str, "desired_sha256": str, "running_sha256": str, "changes": list, "fib": list,
               "sessions": list, "drift": bool}


def check_shape(plan: dict, where: str) -> None:
    """PlanError unless every field `loom show` prints is there with its type."""
    missing = [k for k in ("fabric", "model", "created", "user", "target", "drift", "switches", "changes") if k not in plan]
    if missing or not isinstance(plan.get("target"), dict) or not isinstance(plan["target"].get("kind"), str) \
            or not isinstance(plan.get("changes"), dict):
        raise PlanError(f"{where}: lacks or mistypes {', '.join(missing) or 'target/changes'}; make a new plan with `loom plan`")
    _check_switches(plan, where)


def _check_switches(plan: dict, where: str) -> None:
    """A plan signed again by hand may hold anything: every switch record must have its keys
    with their types, and the summary must be the switches' own."""
    sw = plan["switches"]
    bad = None
    if not isinstance(sw, dict) or not sw:
        bad = "switches is not a mapping of switch records"
    else:
        for name, rec in sw.items():
            if not isinstance(rec, dict) or any(not isinstance(rec.get(k), t) for k, t in SWITCH_KEYS.items()):
                bad = f"the record of switch {name!r} lacks or mistypes one of {', '.join(SWITCH_KEYS)}"
                break
    if bad is None and plan["changes"] != summary(sw):
        bad = "its change summary is not the one of its switches"
    if bad:
        raise PlanError(f"{where}: {bad}; run `loom plan` again")
