"""Reachability: every CA-to-CA pair delivered, every LID from every switch, no forwarding loops,
minimal hop counts in a zone.

Proves: for every source CA port and destination CA LID of the subnet, following the LFTs from
the source's switch ends at the destination (not dropped, not looping), and pairs within one
zone take as few switch-to-switch hops as the zone's cabling allows; and from every switch the
subnet manager can reach, every LID it can reach (switch LIDs included: management traffic)
is delivered.  A forwarding loop is named by its LID, owner and the switches it cycles through.
Parts cut off from the subnet manager (a switch down, a leaf with every link missing) are
listed, not counted as failures: no table can reach them.
Cost: O(switches × LIDs × path length) for the walk plus one BFS per zone
(scipy.sparse.csgraph.shortest_path on the zone's switch graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from loom.routing.subnet import TO_SWITCH
from loom.routing.updown import UpDown

from .paths import DEAD, DELIVERED, LOOP, Walk


@dataclass
class Reachability:
    reachable: bool
    ca_pairs: int
    unreachable_pairs: int
    loop_pairs: int
    max_hops: int
    nonminimal_pairs: int
    switch_pairs: int = 0  # (live switch, live LID) pairs followed
    switch_unreachable: int = 0
    loops: list[str] = field(default_factory=list)
    cut_off: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def check_reachability(walk: Walk) -> Reachability:
    sn = walk.tables.subnet
    end, hops, stuck = walk.outcome
    ud = UpDown(sn)
    ca = sn.ca_lids[ud.live_lids[sn.ca_lids]]  # what is cut off is listed, not followed
    src_sw = np.flatnonzero((walk.cas_on_switch > 0) & ud.live)
    # sources per (switch, destination): the CAs on the switch, less the destination itself
    weight = walk.cas_on_switch[src_sw][:, None] - (sn.ca_switch[ca][None, :] == src_sw[:, None])
    e = end[np.ix_(src_sw, ca)]
    h = hops[np.ix_(src_sw, ca)]
    bad = e != DELIVERED
    examples = []
    for i, j in zip(*np.nonzero(bad)):
        if len(examples) >= 5:
            break
        what = {DEAD: f"dropped at {sn.name(int(stuck[src_sw[i], ca[j]]))}", LOOP: "loops"}[int(e[i, j])]
        examples.append(f"from CAs on {sn.name(int(src_sw[i]))} to {sn.lid_name(int(ca[j]))} (LID {int(ca[j])}): {what}")
    # minimal hops within a zone: compare with BFS distance between the two CAs' switches
    zone_of = np.array([sn.switch(i).zone for i in range(sn.n)])
    rows, cols = np.nonzero(sn.peer_kind == TO_SWITCH)
    dst_sw = sn.peer_dev[rows, cols]
    same = zone_of[rows] == zone_of[dst_sw]
    graph = csr_matrix((np.ones(same.sum()), (rows[same], dst_sw[same])), shape=(sn.n, sn.n))
    dist = shortest_path(graph, unweighted=True, directed=True)
    dst_of_ca = sn.ca_switch[ca]
    in_zone = zone_of[src_sw][:, None] == zone_of[dst_of_ca][None, :]
    minimal = dist[np.ix_(src_sw, dst_of_ca)]
    nonminimal = in_zone & ~bad & (h > minimal)
    bad &= weight > 0
    live_lids = np.flatnonzero(ud.live_lids)
    live_sw = np.flatnonzero(ud.live)
    sw_end = end[np.ix_(live_sw, live_lids)]
    sw_bad = sw_end != DELIVERED
    for i, j in zip(*np.nonzero(sw_bad)):
        if len(examples) >= 10:
            break
        lid = int(live_lids[j])
        what = {DEAD: f"dropped at {sn.name(int(stuck[live_sw[i], lid]))}", LOOP: "loops"}[int(sw_end[i, j])]
        examples.append(f"from switch {sn.name(int(live_sw[i]))} to LID {lid} ({sn.lid_name(lid)}): {what}")
    return Reachability(
        reachable=not bad.any() and not sw_bad.any(),
        ca_pairs=int(weight.sum()),
        unreachable_pairs=int((weight * bad).sum()),
        loop_pairs=int((weight * (e == LOOP)).sum()),
        max_hops=int(h[~bad].max()) if (~bad).any() else 0,
        nonminimal_pairs=int((weight * nonminimal).sum()),
        switch_pairs=int(sw_end.size),
        switch_unreachable=int(sw_bad.sum()),
        loops=_loops(walk, live_lids),
        cut_off=ud.cut_off(),
        examples=examples,
    )


def _loops(walk: Walk, lids: np.ndarray, limit: int = 5) -> list[str]:
    """One line per looping LID (up to `limit`): its owner and the switches it cycles through."""
    sn = walk.tables.subnet
    end, _, _ = walk.outcome
    out = []
    for lid in lids[(end[:, lids] == LOOP).any(axis=0)][:limit]:
        x = int(np.flatnonzero(end[:, lid] == LOOP)[0])
        seen: list[int] = []
        while x not in seen:
            seen.append(x)
            x = int(walk.next_switch[x, lid])
        cycle = seen[seen.index(x):] + [x]
        out.append(f"LID {int(lid)} ({sn.lid_name(int(lid))}) loops: " + " -> ".join(sn.name(s) for s in cycle))
    return out
