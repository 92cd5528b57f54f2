"""Traffic classes → service levels, virtual lanes and arbitration weights (InfiniBand), and
DSCP, traffic classes, PFC, ECN and scheduler weights (RoCE).

InfiniBand (seed 000 §VI-A1): each class gets its own SL; the default class (unmarked
traffic) SL 0.  Isolated classes each get a VL of their own; classes that may share ride one
more VL together.  One SL→VL map serves every port type (CA, switch port 0, switch external
ports), so a packet keeps its VL end to end.  All data VLs sit in the low-priority VLArb
table with weights proportional to their classes' shares; the high-priority table is empty
(`qos_high_limit 0`).

Weight rounding: VLArb weights are 8-bit (units of 64 bytes).  The largest share gets 255 and
every other share `round(share / largest × 255)`, at least 1.  Each weight is off by at most
0.5 from its exact value, so a VL's realised fraction w/Σw differs from its intended one by at
most 0.5·(1 + number of VLs) / Σw — under 0.4 percentage points for the Fire-Flyer classes;
`loom check` verifies it.

Cross-zone direction split (inter-zone links leaving a zone from several leaves): every class
gets a second SL (s + number of classes) and VL (v + number of VLs) with the same weight, for
traffic to lower-numbered zones; the SA hands it out by source and destination zone
(`templates/opensm/qos-policy.conf.j2`), and `loom check` proves each set of VLs acyclic.

RoCE (`loom.model.marking.roce_marking`): each class gets a priority = traffic class = queue of its own: the
default class 0, lossless classes 3 and 4 first (the priorities SONiC and NVIDIA's RoCE
defaults make lossless), the others what is left; priority 6 carries the congestion
notification packets (CNP, DSCP 48 by default) in a strict-priority queue.  DSCP: the class's
own `dscp`, else 0 for the default class, 26 for the first lossless class (NVIDIA's RoCE
default), AF (8·tc + 2) for further lossless classes and CS (8·tc) for lossy ones.  PFC runs on
the lossless priorities, ECN marking (WRED) on their queues, DWRR weights are the shares in
percent (`loom.qos.lossless` derives the buffers, and `loom.render.sonic` the tables).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from loom.model.marking import CNP_TC, LOSSLESS_TCS, roce_marking
from loom.model.rules import direction_split
from loom.model.schema import Model, TrafficClass

MAX_WEIGHT = 255
SLS = 16


@dataclass(frozen=True)
class ClassQos:
    name: str
    sl: int
    vl: int
    tc: int  # RoCE traffic class = priority = queue
    dscp: int
    share: float  # intended fraction of the link (shares normalised)
    weight: int  # VLArb weight of the class's VL
    realised: float  # fraction the VL's weight gives all classes on it
    isolated: bool
    lossless: bool
    destinations: tuple[str, ...] | None
    env: dict[str, str] = field(default_factory=dict)
    #: RoCE on a BiGraph (EFLOPS): a lossless class's priority and DSCP for traffic that starts in
    #: the lower part (`loom.model.rules.zone_layers` set 1); `tc`/`dscp` carry the upper part's
    part_tc: int | None = None
    part_dscp: int | None = None


@dataclass(frozen=True)
class QosPlan:
    classes: tuple[ClassQos, ...]
    sl2vl: tuple[int, ...]  # 16 entries
    vlarb_low: tuple[tuple[int, int], ...]  # (VL, weight)
    vlarb_high: tuple[tuple[int, int], ...]
    high_limit: int
    max_vls: int
    rounding_bound: float
    #: with the cross-zone direction split (`loom.model.rules.direction_split`): class SL s and VL v
    #: carry traffic within a zone and to higher-numbered zones, SL s + sl_offset and VL v +
    #: vl_offset traffic to lower-numbered zones (0: no split)
    sl_offset: int = 0
    vl_offset: int = 0


def _ordered(classes: list[TrafficClass]) -> list[TrafficClass]:
    """The default class first (SL 0 / TC 0), then the others in model order."""
    return [c for c in classes if c.default] + [c for c in classes if not c.default]


def plan_qos(model: Model) -> QosPlan | None:
    split = direction_split(model)
    if model.qos is None and not split:
        return None
    classes = _ordered(model.qos.classes) if model.qos else [TrafficClass(name="all", share=1, default=True)]
    total = sum(c.share for c in classes)
    # VLs: isolated classes one each, the others together on one more
    vl_of: dict[str, int] = {}
    nxt = 0
    for c in classes:
        if c.isolated:
            vl_of[c.name] = nxt
            nxt += 1
    shared = [c for c in classes if not c.isolated]
    for c in shared:
        vl_of[c.name] = nxt
    vls = nxt + (1 if shared else 0)
    vl_share = [sum(c.share for c in classes if vl_of[c.name] == v) / total for v in range(vls)]
    top = max(vl_share)
    weights = [max(1, round(s / top * MAX_WEIGHT)) for s in vl_share]
    wsum = sum(weights)
    marking = roce_marking(classes) if model.technology == "ethernet" else [(i, 8 * i) for i in range(len(classes))]
    out = []
    for i, (c, (tc, dscp)) in enumerate(zip(classes, marking)):
        env = {k: str(i) for k in c.env_sl} | {k: str(dscp * 4) for k in c.env_tc}  # TC byte = DSCP << 2
        v = vl_of[c.name]
        out.append(ClassQos(c.name, i, v, tc, dscp, c.share / total, weights[v], weights[v] / wsum,
                            c.isolated, c.lossless, tuple(c.destinations) if c.destinations else None, env))
    if model.technology == "ethernet" and any(z.kind == "bigraph" for z in model.zones):
        out = _part_priorities(out)
    default_vl = out[0].vl
    n = len(out) if split else 0
    sl2vl = tuple(out[sl].vl if sl < len(out) else out[sl - n].vl + vls if sl < 2 * n else default_vl for sl in range(SLS))
    arb = tuple((v, weights[v]) for v in range(vls)) + (tuple((v + vls, weights[v]) for v in range(vls)) if split else ())
    limit = model.qos.limits.data_vls if model.qos else 8
    return QosPlan(tuple(out), sl2vl, arb, (), 0, limit, 0.5 * (1 + len(arb)) / sum(w for _, w in arb) * (2 if split else 1),
                   n, vls if split else 0)


def _part_priorities(classes: list[ClassQos]) -> list[ClassQos]:
    """A second priority per lossless class for traffic from a BiGraph's lower part (the
    priorities lossless classes take, not yet taken), with the AF DSCP of that priority
    (the next free one if the model uses it).  On one priority the two parts' 2-hop paths close
    PFC pause loops; on a priority per part neither can (`loom check` proves it per set)."""
    used_tcs = {c.tc for c in classes} | {CNP_TC}
    free = [t for t in LOSSLESS_TCS if t not in used_tcs]
    used_dscp = {c.dscp for c in classes} | {48}
    out = []
    for c in classes:
        if c.lossless:
            tc = free.pop(0)  # enough: the model's rules allow at most 3 lossless classes on a BiGraph
            dscp = next(d for d in range(8 * tc + 2, 64) if d not in used_dscp)
            used_dscp.add(dscp)
            c = replace(c, part_tc=tc, part_dscp=dscp)
        out.append(c)
    return out

