"""The QoS/VL layout of an InfiniBand fabric as a review sees it, and what changes between two
revisions — a verdict of `loom diff` of its own (issue 37): a change that forces a second VL set
for cross-zone traffic rewrites every port's SL2VL and VLArb tables and the SL each job must
use, yet moves no cable and may move few LFT entries, so the forwarding counts alone hide it."""

from __future__ import annotations

from loom.qos import QosPlan


def layout(plan: QosPlan | None, reports: list[dict]) -> dict:
    """Classes with their SL and VL, data VLs, VL sets (2 with the cross-zone direction split or
    a BiGraph's per-part sets, from the check reports) and the SL2VL table (None: loom writes
    no QoS, every SL on VL 0)."""
    why = ("cross-zone" if any(r.get("cross_zone_vls") for r in reports)
           else "bigraph" if any(r.get("part_vls") for r in reports) else None)
    if plan is None:
        return {"classes": {}, "data_vls": 1, "vl_sets": 2 if why else 1, "split": why, "sl2vl": None}
    return {"classes": {c.name: {"sl": c.sl, "vl": c.vl} for c in plan.classes},
            "data_vls": len(plan.vlarb_low), "vl_sets": 2 if why else 1, "split": why, "sl2vl": list(plan.sl2vl)}


SPLIT_WORDS = {"cross-zone": "traffic to lower-numbered zones rides a second VL per class",
               "bigraph": "traffic from a BiGraph's lower part rides a second VL set"}


def changes(a: dict, b: dict) -> list[str]:
    """What differs between two layouts, one sentence each; empty when they are the same."""
    out = []
    if a["vl_sets"] != b["vl_sets"] or a["split"] != b["split"]:
        said = SPLIT_WORDS.get(b["split"]) or f"no longer: {SPLIT_WORDS[a['split']]}"
        out.append(f"VL sets per class: {a['vl_sets']} → {b['vl_sets']} ({said})")
    if a["data_vls"] != b["data_vls"]:
        out.append(f"data VLs: {a['data_vls']} → {b['data_vls']} (every port's VLArb table changes)")
    ca, cb = a["classes"], b["classes"]
    out += [f"class {n} added: SL{cb[n]['sl']}/VL{cb[n]['vl']}" for n in cb if n not in ca]
    out += [f"class {n} removed (was SL{ca[n]['sl']}/VL{ca[n]['vl']})" for n in ca if n not in cb]
    out += [f"class {n}: SL{ca[n]['sl']}/VL{ca[n]['vl']} → SL{cb[n]['sl']}/VL{cb[n]['vl']}"
            for n in ca if n in cb and ca[n] != cb[n]]
    sa, sb = a["sl2vl"] or [0] * 16, b["sl2vl"] or [0] * 16
    moved = [f"SL{sl} VL{x}→VL{y}" for sl, (x, y) in enumerate(zip(sa, sb)) if x != y]
    if moved:
        out.append(f"SL2VL: {len(moved)} of 16 SLs map to another VL ({', '.join(moved[:6])}{' …' if len(moved) > 6 else ''})")
    return out

