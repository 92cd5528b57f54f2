"""Reachability: every CA-to-CA pair delivered, no forwarding loops, minimal hop counts in a zone.

Proves: for every source CA port and destination CA LID of the subnet, following the LFTs from
the source's switch ends at the destination (not dropped, not looping), and pairs within one
zone take as few switch-to-switch hops as the zone's cabling allows.
Cost: O(switches × LIDs × path length) for the walk plus one BFS per zone
(scipy.sparse.csgraph.shortest_path on the zone's switch graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from loom.routing.subnet import TO_SWITCH

from .paths import DEAD, DELIVERED, LOOP, Walk


@dataclass
class Reachability:
    reachable: bool
    ca_pairs: int
    unreachable_pairs: int
    loop_pairs: int
    max_hops: int
    nonminimal_pairs: int
    examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def check_reachability(walk: Walk) -> Reachability:
    sn = walk.tables.subnet
    end, hops, stuck = walk.outcome
    ca = sn.ca_lids
    src_sw = np.flatnonzero(walk.cas_on_switch)
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
    return Reachability(
        reachable=not bad.any(),
        ca_pairs=int(weight.sum()),
        unreachable_pairs=int((weight * bad).sum()),
        loop_pairs=int((weight * (e == LOOP)).sum()),
        max_hops=int(h[~bad].max()) if (~bad).any() else 0,
        nonminimal_pairs=int((weight * nonminimal).sum()),
        examples=examples,
    )
