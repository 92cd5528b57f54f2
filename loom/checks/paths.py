"""Follow forwarding tables: where does a packet for LID d go from switch s, and where does it end?

Everything is computed for all (switch, LID) pairs at once as [switches × LIDs] arrays, so a
check over every CA-to-CA pair costs O(switches × LIDs × path length) numpy work: every CA
on a switch shares that switch's path to a destination.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from loom.routing.base import Tables
from loom.routing.subnet import TO_CA, TO_SWITCH

DELIVERED, DEAD, LOOP = -1, -2, -3


@dataclass(frozen=True)
class Walk:
    tables: Tables

    @cached_property
    def valid_lids(self) -> np.ndarray:
        sn = self.tables.subnet
        return np.flatnonzero((sn.lid_switch >= 0) | (sn.lid_port >= 0))

    @cached_property
    def next_switch(self) -> np.ndarray:
        """[sw, lid] next switch, DELIVERED if the LID is delivered here, DEAD if dropped."""
        sn, lft = self.tables.subnet, self.tables.lft.astype(np.int64)
        rows = np.arange(sn.n)[:, None]
        port = np.where(lft <= sn.max_port, lft, 0)
        kind = sn.peer_kind[rows, port]
        dev = sn.peer_dev[rows, port]
        lids = np.arange(sn.max_lid + 1)[None, :]
        out = np.full(lft.shape, DEAD, np.int64)
        out = np.where(kind == TO_SWITCH, dev, out)
        to_right_ca = (kind == TO_CA) & (sn.port_lid[np.where(kind == TO_CA, dev, -1)] == lids)
        out = np.where(to_right_ca, DELIVERED, out)
        own = (lft == 0) & (sn.switch_lid[:, None] == lids)
        out = np.where(own, DELIVERED, out)
        out[:, ~np.isin(np.arange(sn.max_lid + 1), self.valid_lids)] = DEAD
        out = np.where((lft > sn.max_port) & (lft != 0), DEAD, out)
        return out

    @cached_property
    def outcome(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(end, hops, stuck_at): for a packet for LID d entering at switch s, where it ends.

        end is DELIVERED, DEAD, or LOOP (-3: still travelling after every switch was visited);
        hops counts switch-to-switch links; stuck_at is the switch where it was dropped.
        """
        nxt = self.next_switch
        n, L = nxt.shape
        cur = np.repeat(np.arange(n)[:, None], L, axis=1)
        hops = np.zeros((n, L), np.int64)
        end = np.zeros((n, L), np.int64)  # 0 = travelling
        stuck = np.full((n, L), -1, np.int64)
        cols = np.arange(L)[None, :].repeat(n, axis=0)
        for _ in range(n + 1):
            live = end == 0
            if not live.any():
                break
            step = nxt[cur[live], cols[live]]
            done = step < 0
            idx = np.flatnonzero(live.ravel())
            end.ravel()[idx[done]] = step[done]
            stuck.ravel()[idx[done]] = cur.ravel()[idx[done]]
            moving = idx[~done]
            cur.ravel()[moving] = step[~done]
            hops.ravel()[moving] += 1
        end[end == 0] = LOOP
        return end, hops, stuck

    @cached_property
    def cas_on_switch(self) -> np.ndarray:
        sn = self.tables.subnet
        return np.bincount(sn.ca_switch[sn.ca_lids], minlength=sn.n)

