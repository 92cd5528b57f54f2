"""Stage 6: checks over forwarding tables. Each check is a plain function usable alone;
`check_all` runs them for every subnet and gives the verdict `loom check` exits on."""

from __future__ import annotations

from loom.forked import Forked
from loom.model.rules import direction_split, zone_layers
from loom.routing.base import Tables

from .balance import check_balance, into_part, with_into
from .deadlock import check_deadlock
from .ebb import effective_bisection_bandwidth, fabric_ebb, zone_estimates
from .paths import Walk
from .qos import check_qos
from .reachability import check_reachability


#: Random bisections for eBB, at most (sampling stops once the interval is tight, `ebb.py`):
#: `loom check` and `loom diff` use the same count (and seed), so a model shows one figure
#: wherever it is reported.
EBB_SAMPLES = 200


def check_tables(tables: Tables, ebb_samples: int = EBB_SAMPLES, qos=None, balance_only=None, into: bool = True) -> dict:
    """Every check on one subnet; keys are the JSON contract of `loom check --json`.

    With a QoS plan, `deadlock_free` is the per-VL verdict (what the hardware needs) and
    `deadlock_free_single_vl` says whether the routing would also be safe on one VL.
    `balance_only` ([switch] bool): judge balance on those switches alone (`check_balance`);
    `into=False`: without the figures of the links into each leaf and pod, which only `loom
    check` judges (`Balance.into_within_bound`)."""
    walk = Walk(tables)
    # where every packet ends and what the CAs' traffic carries, once, for every check (on a
    # large subnet each pass splits its LIDs in two: threads in C, `loom.routing.kernels`, or a forked
    # child); then the balance check's port groups in a child of their own (most of its CPU), and
    # its links into leaves and pods here, after reachability, deadlock and eBB
    walk.traffic
    balance = Forked(lambda: check_balance(walk, balance_only, into=False), tables.lft.size)
    try:
        report = _other_checks(walk, ebb_samples, qos)
        part = into_part(walk, balance_only) if into else None
        bal = balance.result()
    finally:
        balance.close()
    bal = with_into(bal, part) if part else bal
    return {**report, "balance": bal.as_dict()}


def _other_checks(walk: Walk, ebb_samples: int, qos) -> dict:
    """Everything of `check_tables` but balance (which runs beside it, `Forked`), in its key order."""
    tables = walk.tables
    reach = check_reachability(walk)
    layers = zone_layers(tables.subnet.fabric.model)
    dead = check_deadlock(walk, layers=layers)
    q = check_qos(walk, qos, dead.deadlock_free and layers is None, layers) if qos is not None else None
    if q:
        vl_cycles = [v["cycle"] for v in q["per_vl"].values() if not v["deadlock_free"]]
        free, cycle = not vl_cycles, (vl_cycles[0] if vl_cycles else None)
    else:
        free, cycle = dead.deadlock_free, dead.cycle
    est = zone_estimates(walk, ebb_samples) if ebb_samples else {}
    ebb = {zone: e.value for zone, e in est.items()}
    whole = fabric_ebb(walk, ebb_samples) if ebb_samples and len(ebb) > 1 else (next(iter(est.values())) if est else None)
    return {
        "plane": tables.subnet.plane,
        "engine": tables.engine,
        "reachable": reach.reachable,
        "deadlock_free": free,
        "deadlock_free_single_vl": dead.deadlock_free if layers is None else check_deadlock(walk).deadlock_free,
        "cross_zone_vls": direction_split(tables.subnet.fabric.model),
        "part_vls": layers is not None and any(z.kind == "bigraph" for z in tables.subnet.fabric.model.zones),
        "cycle": cycle,
        "qos": q,
        "balance": None,  # filled in by check_tables
        "ebb": round(sum(ebb.values()) / len(ebb), 4) if ebb else None,
        # the mean of independent zone estimates: its half-width is theirs in quadrature / zones
        "ebb_ci95": round(sum(e.ci95 ** 2 for e in est.values()) ** 0.5 / len(est), 4) if est else None,
        "ebb_samples": ebb_samples,
        "ebb_bisections": sum(e.bisections for e in est.values()),
        "ebb_by_zone": ebb,
        "ebb_fabric": whole.value if whole else None,
        "warnings": list(tables.warnings),
        "reachability": reach.as_dict(),
        "deadlock": {"channels": dead.channels, "dependencies": dead.dependencies,
                     "ca_to_ca_deadlock_free": check_deadlock(walk, "ca", layers=layers).deadlock_free
                     if not dead.deadlock_free else True},
    }


__all__ = ["EBB_SAMPLES", "Walk", "check_balance", "check_deadlock", "check_reachability", "check_tables", "effective_bisection_bandwidth"]
