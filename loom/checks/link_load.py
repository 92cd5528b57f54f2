"""Load against bound per switch port, for drawing: the figures of the balance check
(`balance.group_figures`), kept per port instead of summed per level.

`loom check --format html` colours every link by the worse of its two directions: the
destinations routed out of the port against the as-built bound of the port's group (the least
max-load any routing can reach there).  Inter-zone links are judged per direction against
ceil(LIDs sent across / links), as `check_balance` judges them.  The same figures, so a link
drawn red is a group `loom check` counts as over its bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loom.routing.subnet import TO_SWITCH

from .balance import dest_counts, group_figures
from .paths import Walk


@dataclass(frozen=True)
class PortLoad:
    load: int  # destinations routed out of the port
    bound: int  # as-built bound of its group
    level: str  # leaf_up, spine_down, ..., inter_zone

    @property
    def ratio(self) -> float:
        return self.load / self.bound if self.bound else (0.0 if self.load == 0 else float("inf"))


def port_loads(tables) -> dict[tuple[str, int], PortLoad]:
    """(switch name, port) → load, bound and level of every port in a balance group, and of
    every inter-zone port."""
    walk = Walk(tables)
    out = {}
    for g in group_figures(walk):
        for port, load in zip(g.ports, g.loads.tolist()):
            out[(g.switch, port)] = PortLoad(int(load), int(g.bound), g.level)
    out.update(_inter_zone(walk))
    return out


def _inter_zone(walk: Walk) -> dict[tuple[str, int], PortLoad]:
    sn = walk.tables.subnet
    zone = np.array([sn.switch(i).zone for i in range(sn.n)])
    rows, cols = np.nonzero(sn.peer_kind == TO_SWITCH)
    across = zone[rows] != zone[sn.peer_dev[rows, cols]]
    rows, cols = rows[across], cols[across]
    if not len(rows):
        return {}
    loads = dest_counts(walk, walk.valid_lids)[rows, cols]
    pair = [(zone[r], zone[sn.peer_dev[r, c]]) for r, c in zip(rows, cols)]
    out = {}
    for p in set(pair):
        sel = [i for i, q in enumerate(pair) if q == p]
        bound = -(-int(loads[sel].sum()) // len(sel))
        for i in sel:
            out[(sn.name(int(rows[i])), int(cols[i]))] = PortLoad(int(loads[i]), bound, "inter_zone")
    return out


def histogram(loads: dict[tuple[str, int], PortLoad], bins: int = 10) -> dict[str, list[int]]:
    """Per level: ports counted by load/bound in `bins` bins of [0, 1], then one bin over the
    bound — what the report draws as bars."""
    out: dict[str, list[int]] = {}
    for pl in loads.values():
        counts = out.setdefault(pl.level, [0] * (bins + 1))
        counts[bins if pl.ratio > 1 else min(int(pl.ratio * bins), bins - 1)] += 1
    return out
