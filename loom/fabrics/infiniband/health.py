"""Link health of a running fabric: readings through the target (`port_counters`), kept over
time and judged per cable (`loom.checks.link_health`).  `loom health` takes two readings
`interval` seconds apart; the watcher keeps one `Monitor` and reads at every step."""

from __future__ import annotations

import time

import numpy as np

from loom.checks.link_health import History, LinkHealth, cables_of_plane, judge
from loom.expand import HOST, Fabric
from loom.routing import subnet


class Monitor:
    """Readings of one fabric through one target, and the verdicts they give."""

    def __init__(self, target, fabric: Fabric) -> None:
        self.target, self.fabric = target, fabric
        self.policy = fabric.model.health
        self.sn = subnet(fabric, 0)
        self.cables = cables_of_plane(fabric, 0)
        self.history = History(max(self.policy.window_s, self.policy.clean_s))
        self.last_seconds = 0.0  # how long the last reading took

    def read(self) -> None:
        sample = self.target.read_ports(self.fabric, self.sn)
        self.last_seconds = sample["seconds"]
        self.history.add(sample)

    def judge(self) -> list[LinkHealth]:
        return judge(self.fabric, self.history, self.policy, self.cables)


def survey(target, fabric: Fabric, interval: float) -> tuple[list[LinkHealth], float]:
    """Two readings `interval` seconds apart, judged; and how long a reading took."""
    m = Monitor(target, fabric)
    m.read()
    time.sleep(interval)
    m.read()
    return m.judge(), m.last_seconds


def _pieces(fabric: Fabric, out: set[int]) -> int:
    """Connected pieces of the switch graph (every switch a node) over the switch-to-switch cables
    not in `out` and not on a switch the model lists as down."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    c, down = fabric.cables, np.array(sorted(fabric.down_switches), dtype=np.int64)
    keep = (c.a_kind != HOST) & ~np.isin(c.a_dev, down) & ~np.isin(c.b_dev, down)
    if out:
        keep[list(out)] = False
    n = len(fabric.switches)
    graph = coo_matrix((np.ones(int(keep.sum())), (c.a_dev[keep], c.b_dev[keep])), shape=(n, n))
    return connected_components(graph, directed=False)[0]


def cuts_off(fabric: Fabric, out: set[int], more: set[int]) -> bool:
    """Would taking the links `more` out of service, besides `out`, cut a switch (and its nodes)
    off from the rest?  A physical failure may do that; a drain never does: routing would
    silently leave the cut-off part out of the tables, which no check refuses."""
    return _pieces(fabric, out | more) > _pieces(fabric, out)
