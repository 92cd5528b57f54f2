"""QoS checks: the traffic-class plan is realisable on the ports and free of deadlock per VL.

Proves: every class lands on a data VL the ports support (below `qos_max_vls`, never VL15);
isolated classes never share a VL; each VL's arbitration weight gives its classes their share
within the documented 8-bit rounding; and, with SL→VL maps the same on every port (a packet
keeps its VL end to end), the channel-dependency graph of each VL — packets of that VL's
classes only, to those classes' destinations — is acyclic.  A routing whose single-VL graph
has a cycle can be deadlock-free this way when the cycle needs packets of two VLs.
Cost: one CDG per VL, each O(switches × destinations).
"""

from __future__ import annotations

import numpy as np

from loom.qos import QosPlan

from .deadlock import check_deadlock, check_layer
from .paths import Walk

MANAGEMENT_VL = 15


def vl_destinations(walk: Walk, plan: QosPlan) -> dict[int, tuple[np.ndarray, str]]:
    """Per VL (InfiniBand) or lossless priority (RoCE: lossy queues drop instead of blocking, so
    only PFC-protected priorities can deadlock): (destination LIDs of its classes, which
    sources send: "all" or "ca")."""
    sn = walk.tables.subnet
    lids = walk.valid_lids
    roles = np.array([sn.lid_role(int(l)) for l in lids])
    ethernet = sn.fabric.technology == "ethernet"
    key = (lambda c: c.tc) if ethernet else (lambda c: c.vl)
    members = [c for c in plan.classes if c.lossless or not ethernet]
    out = {}
    for vl in sorted({key(c) for c in members}):
        on = [c for c in members if key(c) == vl]
        if any(c.destinations is None for c in on):
            out[vl] = (lids, "all")
        else:
            wanted = {r for c in on for r in c.destinations}
            out[vl] = (lids[np.isin(roles, list(wanted))], "ca")
    return out


def check_qos(walk: Walk, plan: QosPlan, whole_graph_acyclic: bool = False, layers=None) -> dict:
    """`whole_graph_acyclic`: the single-VL graph (all sources, all destinations) is already known
    to be acyclic; every VL's graph is a subgraph of it, so none needs building.  `layers`: the
    cross-zone direction split (`loom.model.rules.zone_layers`): each class's second VL carries
    the traffic to lower-numbered zones and gets its own graph."""
    problems = []
    classes = []
    vl_share: dict[int, float] = {}
    for c in plan.classes:
        vl_share[c.vl] = vl_share.get(c.vl, 0.0) + c.share
    ethernet = walk.tables.subnet.fabric.technology == "ethernet"
    for c in plan.classes:
        sharing = [o.name for o in plan.classes if o.vl == c.vl and o.name != c.name]
        isolated = not sharing
        if ethernet:
            pass  # queues: one per isolated class by construction; VLs do not apply
        elif c.vl == MANAGEMENT_VL:
            problems.append(f"{c.name} is on VL15 (management only)")
        elif c.vl + plan.vl_offset >= plan.max_vls:
            problems.append(f"{c.name} is on VL{c.vl + plan.vl_offset} but the ports support VL0..VL{plan.max_vls - 1}")
        if c.isolated and not isolated:
            problems.append(f"{c.name} must be isolated but shares VL{c.vl} with {', '.join(sharing)}")
        if abs(c.realised - vl_share[c.vl]) > plan.rounding_bound + 1e-12:
            problems.append(f"VL{c.vl} weight gives {c.realised:.4f} of the link, intended {vl_share[c.vl]:.4f}")
        classes.append({"name": c.name, "sl": c.sl, "vl": c.vl, "tc": c.tc, "dscp": c.dscp, "lossless": c.lossless,
                        "share": round(c.share, 4),
                        "weight": c.weight, "weight_share": round(c.realised, 4), "isolated": isolated,
                        "destinations": list(c.destinations) if c.destinations else "all", "env": c.env})
    per_vl = {}
    part = {c.tc: c.part_tc for c in plan.classes if c.part_tc is not None}  # RoCE on a BiGraph: set 1's priority
    for vl, (lids, sources) in vl_destinations(walk, plan).items():
        for k in (0, 1) if layers is not None else (None,):
            if k is None or plan.vl_offset:
                key = str(vl + (k or 0) * plan.vl_offset)
            elif vl in part:
                key = str(part[vl] if k else vl)
            else:  # a VL set without VLs of its own in the plan (a BiGraph part on InfiniBand) is named apart
                key = f"{vl}/set{k}"
            if whole_graph_acyclic:
                per_vl[key] = {"deadlock_free": True, "cycle": None, "destinations": int(len(lids))}
                continue
            d = check_deadlock(walk, sources, lids) if k is None else check_layer(walk, sources, lids, layers, k)
            per_vl[key] = {"deadlock_free": d.deadlock_free, "cycle": d.cycle, "destinations": int(len(lids))}
    return {
        "ok": not problems and all(v["deadlock_free"] for v in per_vl.values()),
        "classes": classes,
        "sl2vl": list(plan.sl2vl),
        "vlarb_low": [list(x) for x in plan.vlarb_low],
        "max_vls": plan.max_vls,
        "rounding_bound": round(plan.rounding_bound, 5),
        "per_vl": per_vl,
        "problems": problems,
    }
