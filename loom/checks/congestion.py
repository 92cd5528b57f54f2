"""Link congestion of a collective's communication steps on the routed fabric.

A step is a set of (sender, receiver) endpoint pairs that transfer at the same time (ring: every
rank to the next; halving-doubling step k: rank r with r XOR 2^k, both ways).  Each pair's
packets follow the forwarding tables from the sender's switch to the receiver's LID; a
directed switch-to-switch link carrying c flows at once gives each 1/c of its bandwidth.  Per
step: the most flows on one link (1 = congestion-free, EFLOPS's goal for HDRM), the links used,
and the switch-to-switch hops summed over all pairs (fewer = more traffic kept under a leaf).
Cost: O(pairs × path length) per step.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from loom.routing.base import Tables

from .paths import Walk


def step_load(walk: Walk, lids: np.ndarray, pairs: list[tuple[int, int]]) -> dict:
    """`lids[e]`: the LID of endpoint e; pairs of endpoint indices.  Returns max_flows_per_link,
    links_used, switch_hops, unrouted (pairs whose packets do not arrive)."""
    sn = walk.tables.subnet
    nxt = walk.next_switch
    load: Counter = Counter()
    hops = unrouted = 0
    for a, b in pairs:
        s, d = int(sn.ca_switch[lids[a]]), int(lids[b])
        for _ in range(sn.n + 1):
            t = int(nxt[s, d])
            if t < 0:
                break
            load[(s, t)] += 1
            hops += 1
            s = t
        if nxt[s, d] != -1:  # DELIVERED
            unrouted += 1
    return {"max_flows_per_link": max(load.values(), default=0), "links_used": len(load),
            "switch_hops": hops, "unrouted": unrouted}


def collective_load(tables: Tables, lids: np.ndarray, steps: list[list[tuple[int, int]]]) -> list[dict]:
    walk = Walk(tables)
    return [{"step": k, "pairs": len(pairs), **step_load(walk, lids, pairs)} for k, pairs in enumerate(steps)]
