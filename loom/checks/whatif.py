"""What a failure does: the minimal-churn reroute, judged like any routing, and what it cost.

For a failure set (cables and switches down) and the tables in force (the design's), per plane:
- the engine's `repair` gives the reroute a watcher would apply; every check `loom check` runs
  (reachability, deadlock freedom per VL, balance against the *as-built* bound) judges it;
- churn: the entries, switches and destinations that change, against the destinations whose
  traffic used a failed cable (`affected`): a reroute is *minimal* when nothing else moves; the
  same figures for a full recompute of the degraded fabric show what a recompute costs;
- the bandwidth each leaf keeps: its working up-links over its design up-links (C4's figure:
  one of U uplinks down leaves that leaf (U-1)/U and every other leaf 1), and the worst
  destinations per up-port before and after.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from loom.expand import Fabric
from loom.expand.failures import FailureSet, without
from loom.routing import Tables, get_engine, subnets
from loom.routing.asbuilt import affected_destinations
from loom.routing.changes import table_changes
from loom.routing.repair import repair_or_widen
from loom.routing.subnet import LAYER

from . import check_tables


@dataclass
class Churn:
    entries: int  # LFT entries that differ from the tables in force
    switches: int  # switches with at least one changed entry
    destinations: int  # LIDs with at least one changed entry

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class LeafKept:
    leaf: str
    up_links: int  # in the design
    working: int  # after the failure
    max_before: int  # worst destinations per up-port, tables in force
    max_after: int  # ... after the reroute

    @property
    def kept(self) -> float:
        return self.working / self.up_links if self.up_links else 1.0


@dataclass
class PlaneOutcome:
    plane: int
    failed_cables: int
    checks: dict  # check_tables of the reroute (the `loom check --json` keys)
    repair: Churn
    recompute: Churn
    affected: int  # destinations whose entries used a failed cable (they must move)
    extra: int  # other destinations the repair moved (to keep a switch at its as-built bound)
    leaves: list[LeafKept] = field(default_factory=list)
    how: str = "minimal repair"  # or "widened (...)": the minimal repair failed a check (`loom.routing.repair`)

    @property
    def minimal(self) -> bool:
        """Only destinations that used a failed cable moved."""
        return self.extra == 0

    @property
    def ok(self) -> bool:
        """The reroute passes every check `loom check` makes (churn is reported, not judged:
        where the bound needs an extra move, balance wins)."""
        c = self.checks
        return bool(c["reachable"] and c["deadlock_free"] and c["balance"]["within_bound"])

    def as_dict(self) -> dict:
        return {"plane": self.plane, "failed_cables": self.failed_cables, "ok": self.ok, "minimal": self.minimal,
                "routing": self.how,
                "affected_destinations": self.affected, "extra_destinations": self.extra, "repair": self.repair.as_dict(),
                "recompute": self.recompute.as_dict(),
                "reachable": self.checks["reachable"], "deadlock_free": self.checks["deadlock_free"],
                "within_bound": self.checks["balance"]["within_bound"],
                "design_within_bound": self.checks["balance"]["design_within_bound"],
                "worst": self.checks["balance"]["worst"], "warnings": self.checks["warnings"],
                "min_leaf_kept": round(min((l.kept for l in self.leaves), default=1.0), 4),
                "leaves_losing": [{"leaf": l.leaf, "kept": round(l.kept, 4), "up_links": l.up_links,
                                   "working": l.working, "max_before": l.max_before, "max_after": l.max_after}
                                  for l in self.leaves if l.working < l.up_links]}


def churn(before: Tables, after: Tables) -> Churn:
    """Entries that change and the destinations that move, on the switches in service after
    the change (`loom.routing.changes`, the count plan and the watcher make too)."""
    ch = table_changes(before, after)
    return Churn(ch.entries, ch.switches, len(ch.destinations_moved))


def leaf_kept(design: Tables, after: Tables) -> list[LeafKept]:
    sn, fn = design.subnet, after.subnet
    lids = np.flatnonzero((sn.lid_switch >= 0) | (sn.lid_port >= 0))
    out = []
    for x in range(sn.n):
        if LAYER[sn.switch(x).role] != 0:
            continue
        ups = np.flatnonzero(sn.up_port_mask[x])
        work = [p for p in ups if fn.up_port_mask[x, p]]
        before = _max_per_port(design.lft[x, lids], ups)
        out.append(LeafKept(sn.name(x), len(ups), len(work), before, _max_per_port(after.lft[x, lids], np.array(work, int))))
    return out


def _max_per_port(row: np.ndarray, ports: np.ndarray) -> int:
    if len(ports) == 0:
        return 0
    return int(np.bincount(row.astype(np.int64), minlength=256)[ports].max())


def what_if(fabric: Fabric, failure: FailureSet, design: list[Tables], engine: str = "fattree",
            ebb_samples: int = 0, qos=None, recompute: bool = True) -> list[PlaneOutcome]:
    """The outcome of `failure` on every plane it touches (planes without a failed cable keep
    their tables and are left out)."""
    eng = get_engine(engine)  # an unknown engine is refused before any work
    failed_fabric = without(fabric, failure)
    planes = {int(p) for p in fabric.cables.plane[list(failure.cables)]} if failure else set()
    out = []
    for t, fsn in zip(design, subnets(failed_fabric)):
        if t.subnet.plane not in planes:
            continue
        verdicts: dict[int, dict] = {}

        def failing(x: Tables) -> list[str]:
            verdicts[id(x)] = v = check_tables(x, ebb_samples, qos)
            return [name for name, ok in (("reachability", v["reachable"]), ("deadlock freedom", v["deadlock_free"]),
                                          ("balance", v["balance"]["within_bound"]),
                                          ("QoS", v["qos"] is None or v["qos"]["ok"])) if not ok]

        repaired, how, _ = repair_or_widen(fsn, t, failing, engine)
        moved = table_changes(t, repaired).moved.any(axis=0)
        affected = affected_destinations(t, fsn)
        full = churn(t, eng.route(fsn)) if recompute else Churn(0, 0, 0)
        out.append(PlaneOutcome(t.subnet.plane, sum(1 for i in failure.cables if fabric.cables.plane[i] == t.subnet.plane),
                                verdicts[id(repaired)], churn(t, repaired), full,
                                int(affected.sum()), int((moved & ~affected).sum()), leaf_kept(t, repaired), how))
    return out




def trials_summary(outcomes: list[list[PlaneOutcome]]) -> dict:
    """Worst and median over random trials (one list of plane outcomes per trial)."""
    flat = [o for trial in outcomes for o in trial]
    figures = {
        "repair_entries": [o.repair.entries for o in flat],
        "recompute_entries": [o.recompute.entries for o in flat],
        "repair_destinations": [o.repair.destinations for o in flat],
        "min_leaf_kept": [min((l.kept for l in o.leaves), default=1.0) for o in flat],
    }
    worst = {"repair_entries": max, "recompute_entries": max, "repair_destinations": max, "min_leaf_kept": min}
    return {
        "trials": len(outcomes),
        "failed_trials": sum(not all(o.ok for o in trial) for trial in outcomes),
        "not_minimal": sum(not o.minimal for o in flat),
        "extra_destinations": {"worst": max((o.extra for o in flat), default=0),
                               "median": _num(np.median([o.extra for o in flat])) if flat else 0},
        **{k: {"worst": _num(worst[k](v)), "median": _num(np.median(v))} for k, v in figures.items() if v},
    }


def opensm_trials(per_draw: list[dict]) -> dict:
    """Worst and median, per OpenSM engine, of what its recompute changed over the random draws
    (`{engine: {entries, switches, destinations, ...}}` per draw)."""
    engines = per_draw[0] if per_draw else {}
    return {e: {k: {"worst": _num(max(d[e][k] for d in per_draw)), "median": _num(np.median([d[e][k] for d in per_draw]))}
                for k in ("entries", "destinations")} for e in engines}


def _num(x) -> int | float:
    """A figure as JSON shows it: whole numbers as integers, fractions to 4 places."""
    x = float(x)
    return int(x) if x.is_integer() else round(x, 4)
