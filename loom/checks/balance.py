"""Balance: how evenly the routing spreads destinations and CA-to-CA paths over switch ports.

Figures (the ones `ibdiagnet -r` reports): destinations (LIDs) routed through each switch
out-port, and CA-to-CA paths through each out-port.  For leaf up-ports the max is compared
with the lower bound ceil(routed-up / up-ports) of the worst leaf: no destination-based routing
can do better than spreading a leaf's routed-up destinations evenly over its up-ports.  The
same figures are given per destination role (storage spread on its own, not only in total)
and for inter-zone links.
Cost: O(switches × LIDs) for the destination counts; O(switches × CA LIDs × path length) for
the path counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from loom.routing.subnet import LAYER, TO_SWITCH

from .paths import Walk


@dataclass
class PortFigures:
    max: int
    min: int
    lower_bound: int

    @property
    def at_bound(self) -> bool:
        return self.max <= self.lower_bound


@dataclass
class Balance:
    max_dest_per_up_port: int
    min_dest_per_up_port: int
    lower_bound: int
    per_role: dict[str, dict]
    spine_up: dict | None
    inter_zone: dict | None
    max_paths_per_up_port: int
    min_paths_per_up_port: int
    within_bound: bool
    worst: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def up_ports(walk: Walk, layer: int) -> tuple[np.ndarray, np.ndarray]:
    """(switch rows, port columns) of up-ports leaving switches of `layer`."""
    sn = walk.tables.subnet
    layers = np.array([LAYER[sn.switch(i).role] for i in range(sn.n)])
    rows, cols = np.nonzero(sn.up_port_mask & (layers == layer)[:, None])
    return rows, cols


def design_up_ports(sn) -> np.ndarray:
    """Up-ports each switch has by design (leaf_up, spine_up), whether or not all are cabled:
    the bound is that of the intact fabric, so a missing link shows as imbalance."""
    zones = {z.name: z for z in sn.fabric.model.zones}
    out = np.zeros(sn.n, np.int64)
    for i in range(sn.n):
        s, z = sn.switch(i), zones[sn.switch(i).zone]
        out[i] = getattr(z, "leaf_up", 0) if s.role == "leaf" else getattr(z, "spine_up", 0) if s.role == "spine" else 0
    return out


def leaf_port_loads(walk: Walk) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(rows, cols, destinations, bound) for every leaf up-port; bound is its leaf's
    ceil(routed up / design up-ports)."""
    sn = walk.tables.subnet
    rows, cols = up_ports(walk, 0)
    loads = dest_counts(walk, walk.valid_lids)[rows, cols]
    per = np.bincount(rows, weights=loads, minlength=sn.n)
    nports = np.maximum(np.bincount(rows, minlength=sn.n), design_up_ports(sn))
    return rows, cols, loads, np.ceil(per[rows] / np.maximum(nports[rows], 1)).astype(np.int64)


def _figures(counts: np.ndarray, rows: np.ndarray, cols: np.ndarray, design: np.ndarray) -> PortFigures | None:
    """Max/min over the given ports and the lower bound: max over switches of
    ceil(destinations routed up / up-ports of the design)."""
    if len(rows) == 0:
        return None
    loads = counts[rows, cols]
    per_switch = np.bincount(rows, weights=loads)
    nports = np.maximum(np.bincount(rows), design[: len(per_switch)])
    has = nports > 0
    bound = int(np.max(np.ceil(per_switch[has] / nports[has])))
    return PortFigures(int(loads.max()), int(loads.min()), bound)


def dest_counts(walk: Walk, lids: np.ndarray) -> np.ndarray:
    """[sw, port] number of the given destination LIDs routed out of each port."""
    sn, lft = walk.tables.subnet, walk.tables.lft
    counts = np.zeros((sn.n, 256), np.int64)
    sub = lft[:, lids].astype(np.int64)
    rows = np.repeat(np.arange(sn.n), len(lids))
    np.add.at(counts, (rows, sub.ravel()), 1)
    return counts


def path_counts(walk: Walk) -> np.ndarray:
    """[sw, port] number of CA-to-CA paths leaving each port (each CA to every other CA)."""
    sn, lft = walk.tables.subnet, walk.tables.lft
    nxt = walk.next_switch
    ca = sn.ca_lids
    counts = np.zeros((sn.n, 256), np.int64)
    weight = np.repeat(walk.cas_on_switch[:, None], len(ca), axis=1)
    weight[sn.ca_switch[ca], np.arange(len(ca))] -= 1  # not to itself
    cur = np.repeat(np.arange(sn.n)[:, None], len(ca), axis=1)
    cols = np.repeat(ca[None, :], sn.n, axis=0)
    live = weight > 0
    for _ in range(sn.n):
        if not live.any():
            break
        c, d, w = cur[live], cols[live], weight[live]
        np.add.at(counts, (c, lft[c, d].astype(np.int64)), w)
        step = nxt[c, d]
        keep = step >= 0
        idx = np.flatnonzero(live.ravel())
        live.ravel()[idx[~keep]] = False
        cur.ravel()[idx[keep]] = step[keep]
    return counts


def check_balance(walk: Walk) -> Balance:
    sn = walk.tables.subnet
    lids = walk.valid_lids
    rows, cols = up_ports(walk, 0)
    counts = dest_counts(walk, lids)
    design = design_up_ports(sn)
    total = _figures(counts, rows, cols, design)
    if total is None:
        total = PortFigures(0, 0, 0)
    roles = np.array([sn.lid_role(int(l)) for l in lids])
    per_role = {}
    ok = total.at_bound
    for role in sorted(set(roles.tolist())):
        f = _figures(dest_counts(walk, lids[roles == role]), rows, cols, design)
        if f:
            per_role[role] = {"max_dest_per_up_port": f.max, "min_dest_per_up_port": f.min, "lower_bound": f.lower_bound}
            ok &= f.at_bound
    srows, scols = up_ports(walk, 1)
    spine = _figures(counts, srows, scols, design)
    spine_up = None
    if spine:
        spine_up = {"max_dest_per_up_port": spine.max, "min_dest_per_up_port": spine.min, "lower_bound": spine.lower_bound}
        ok &= spine.at_bound
    inter_zone = _inter_zone(walk, counts)
    if inter_zone:
        ok &= inter_zone["max_dest_per_link"] <= inter_zone["lower_bound"]
    paths = path_counts(walk)[rows, cols] if len(rows) else np.zeros(1, np.int64)
    worst = []
    for r, c in sorted(zip(rows.tolist(), cols.tolist()), key=lambda rc: -counts[rc])[:3]:
        worst.append(f"{sn.name(r)} port {c}: {int(counts[r, c])} destinations")
    return Balance(total.max, total.min, total.lower_bound, per_role, spine_up, inter_zone,
                   int(paths.max()), int(paths.min()), bool(ok), worst)


def _inter_zone(walk: Walk, counts: np.ndarray) -> dict | None:
    """Destinations per inter-zone link direction, against ceil(remote LIDs / links)."""
    sn = walk.tables.subnet
    zone = np.array([sn.switch(i).zone for i in range(sn.n)])
    rows, cols = np.nonzero(sn.peer_kind == TO_SWITCH)
    m = zone[rows] != zone[sn.peer_dev[rows, cols]]
    if not m.any():
        return None
    rows, cols = rows[m], cols[m]
    f = _by_zone_pair(counts, rows, cols, zone, sn)
    return {"max_dest_per_link": f.max, "min_dest_per_link": f.min, "lower_bound": f.lower_bound, "links": int(m.sum())}


def _by_zone_pair(counts, rows, cols, zone, sn) -> PortFigures:
    """Lower bound per (from-zone, to-zone) direction: ceil(LIDs sent across / links)."""
    pair = np.array([f"{zone[r]}>{zone[sn.peer_dev[r, c]]}" for r, c in zip(rows, cols)])
    loads = counts[rows, cols]
    bound = 0
    for p in set(pair.tolist()):
        sel = pair == p
        bound = max(bound, int(np.ceil(loads[sel].sum() / sel.sum())))
    return PortFigures(int(loads.max()), int(loads.min()), bound)
