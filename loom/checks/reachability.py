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
(`UpDown.hops`, shared with the engine).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from loom.routing.base import lid_chunks
from loom.routing.updown import UpDown

from .paths import DELIVERED, LOOP, Walk


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
    end, hops = walk.outcome
    ud = UpDown.of(sn)
    ca = sn.ca_lids[ud.live_lids[sn.ca_lids]]  # what is cut off is listed, not followed
    src_sw = np.flatnonzero((walk.cas_on_switch > 0) & ud.live)
    # minimal hops within a zone: compare with the BFS distance between the two CAs' switches
    # over the zone's working links (`UpDown.hops`, the subnet's one BFS)
    dist, zone_code = ud.hops, ud.zone
    pairs = unreachable = looping = nonminimal = max_hops = 0
    examples: list[str] = []
    for c in lid_chunks(len(src_sw), len(ca)):
        lids = ca[c]
        # sources per (switch, destination): the CAs on the switch, less the destination itself
        weight = walk.cas_on_switch[src_sw][:, None] - (sn.ca_switch[lids][None, :] == src_sw[:, None])
        e, h = end[np.ix_(src_sw, lids)], hops[np.ix_(src_sw, lids)]
        bad = e != DELIVERED
        for i, j in zip(*np.nonzero(bad & (weight > 0))):
            if len(examples) >= 5:
                break
            examples.append(f"from CAs on {sn.name(int(src_sw[i]))} to {sn.lid_name(int(lids[j]))} (LID {int(lids[j])}): "
                            + _fate(walk, int(src_sw[i]), int(lids[j]), int(e[i, j])))
        dst = sn.ca_switch[lids]
        longer = ~bad & (zone_code[src_sw][:, None] == zone_code[dst][None, :]) & (h > dist[np.ix_(src_sw, dst)])
        pairs += int(weight.sum())
        unreachable += int((weight * (bad & (weight > 0))).sum())
        looping += int((weight * (e == LOOP)).sum())
        nonminimal += int((weight * longer).sum())
        max_hops = max(max_hops, int(h[~bad].max(initial=0)))
    live_lids, live_sw = np.flatnonzero(ud.live_lids), np.flatnonzero(ud.live)
    switch_unreachable = 0
    for c in lid_chunks(len(live_sw), len(live_lids)):
        sw_bad = end[np.ix_(live_sw, live_lids[c])] != DELIVERED
        switch_unreachable += int(sw_bad.sum())
        for i, j in zip(*np.nonzero(sw_bad)):
            if len(examples) >= 10:
                break
            s, lid = int(live_sw[i]), int(live_lids[c][j])
            examples.append(f"from switch {sn.name(s)} to LID {lid} ({sn.lid_name(lid)}): "
                            + _fate(walk, s, lid, int(end[s, lid])))
    return Reachability(
        reachable=unreachable == 0 and switch_unreachable == 0,
        ca_pairs=pairs,
        unreachable_pairs=unreachable,
        loop_pairs=looping,
        max_hops=max_hops,
        nonminimal_pairs=nonminimal,
        switch_pairs=len(live_sw) * len(live_lids),
        switch_unreachable=switch_unreachable,
        loops=_loops(walk, live_lids),
        cut_off=ud.cut_off(),
        examples=examples,
    )


def _fate(walk: Walk, switch: int, lid: int, end: int) -> str:
    return "loops" if end == LOOP else f"dropped at {walk.tables.subnet.name(walk.dropped_at(switch, lid))}"


def _loops(walk: Walk, lids: np.ndarray, limit: int = 5) -> list[str]:
    """One line per looping LID (up to `limit`): its owner and the switches it cycles through."""
    sn = walk.tables.subnet
    end, _ = walk.outcome
    out = []
    looping = np.concatenate([lids[c][(end[:, lids[c]] == LOOP).any(axis=0)] for c in lid_chunks(sn.n, len(lids))] or [lids[:0]])
    for lid in looping[:limit]:
        x = int(np.flatnonzero(end[:, lid] == LOOP)[0])
        seen: list[int] = []
        while x not in seen:
            seen.append(x)
            x = int(walk.next_switch[x, lid])
        cycle = seen[seen.index(x):] + [x]
        out.append(f"LID {int(lid)} ({sn.lid_name(int(lid))}) loops: " + " -> ".join(sn.name(s) for s in cycle))
    return out
