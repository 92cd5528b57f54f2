"""Follow forwarding tables: where does a packet for LID d go from switch s, and where does it end?

Everything is computed for all (switch, LID) pairs as [switches × LIDs] arrays, so a check over
every CA-to-CA pair costs O(switches × LIDs × path length) numpy work: every CA on a switch
shares that switch's path to a destination.  The arrays are kept narrow (int16 switch numbers,
int8 outcomes) and built a chunk of LIDs at a time (`lid_chunks`): at the LID limit a subnet has
~150 million cells, and one int64 temporary of that size alone would be 1.2 GB.  The two passes
that touch every cell, and the deadlock check's, run in C where it can be built (walk.c: each cell
resolved once, ~5x less CPU there: `loom.routing.kernels`); the numpy passes compute the same
(tests/test_paths.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from loom.forked import Forked
from loom.routing.base import Tables, lid_chunks
from loom.routing.kernels import halves, kernels
from loom.routing.loads import carried
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
        """int16 [sw, lid] next switch, DELIVERED if the LID is delivered here, DEAD if dropped.

        Each switch's 256 possible entries are resolved once (the switch behind the port, or the
        LID of the CA behind it), so a cell costs two flat lookups: half the CPU of resolving
        every cell's port from scratch (2.7 → 1.3 s at the LID limit, the same array)."""
        sn, lft = self.tables.subnet, self.tables.lft
        valid = np.zeros(sn.max_lid + 1, bool)
        valid[self.valid_lids] = True
        ports = np.arange(256)
        usable = ports[None, :] <= sn.max_port
        kind = np.where(usable, sn.peer_kind[:, np.minimum(ports, sn.max_port)], 0)
        dev = sn.peer_dev[:, np.minimum(ports, sn.max_port)]
        via = np.where(kind == TO_SWITCH, dev, DEAD).astype(np.int16)  # [sw, entry] the next switch
        ca_lid = np.where(kind == TO_CA, sn.port_lid[np.where(kind == TO_CA, dev, -1)], -1)  # [sw, entry]
        ca_lid[:, 0] = sn.switch_lid  # entry 0: the switch itself
        via, ca_lid = via.ravel(), ca_lid.astype(np.int32).ravel()
        base = np.arange(sn.n, dtype=np.int32)[:, None] * 256
        out = np.empty(lft.shape, np.int16)
        for c in lid_chunks(sn.n, sn.max_lid + 1):
            cell = base + lft[:, c]  # [sw, lid] index into the [sw, entry] tables
            step = via[cell]
            step[ca_lid[cell] == np.arange(c.start, c.stop, dtype=np.int32)[None, :]] = DELIVERED
            step[:, ~valid[c]] = DEAD
            out[:, c] = step
        return out

    @cached_property
    def outcome(self) -> tuple[np.ndarray, np.ndarray]:
        """(end, hops): for a packet for LID d entering at switch s, where it ends.

        end (int8) is DELIVERED, DEAD, or LOOP (-3: still travelling after every switch was
        visited); hops (int16) counts switch-to-switch links.  `dropped_at` names the switch.
        By walk.c where it is built (`kernels`), else by numpy's whole-block steps; on a large
        subnet the second half of the LIDs in a thread (C) or a forked child (numpy)."""
        nxt = self.next_switch
        end, hops = np.empty(nxt.shape, np.int8), np.empty(nxt.shape, np.int16)
        native_walk = kernels()
        if native_walk is not None:
            every = np.arange(nxt.shape[1], dtype=np.int64)
            halves(len(every), nxt.size, lambda lo, hi: native_walk.follow(nxt, *nxt.shape, every, lo, hi, end, hops))
            return end, hops
        half = nxt.shape[1] // 2

        def follow(part: slice) -> tuple[np.ndarray, np.ndarray]:
            e, h = end[:, part], hops[:, part]
            for c in lid_chunks(nxt.shape[0], h.shape[1]):
                e[:, c], h[:, c] = _follow(nxt[:, part][:, c])
            return e, h

        other = Forked(lambda: follow(slice(half, None)), nxt.size)
        try:
            follow(slice(0, half))
            end[:, half:], hops[:, half:] = other.result()
        finally:
            other.close()
        return end, hops

    @cached_property
    def traffic(self) -> "Traffic":
        """Where CA-to-CA traffic goes (`Traffic`), counted from `outcome` in one pass over the
        tables: each switch passes on to the next what reached it, farthest from the
        destination first, so every cell is touched once, not once per source.  Tables with a
        forwarding loop have no such order: their figures are walked packet by packet."""
        sn = self.tables.subnet
        lids = self.valid_lids
        end, _ = self.outcome
        if any((end[:, lids[c]] == LOOP).any() for c in lid_chunks(sn.n, len(lids))):
            return Traffic(lids, carried(sn, self.tables.lft, lids), walked_path_counts(self))
        if kernels() is not None:
            return Traffic(lids, *_passed_on_in_c(self, lids))
        half = len(lids) // 2
        other = Forked(lambda: _passed_on(self, lids[half:]), sn.n * len(lids))
        try:
            first, paths = _passed_on(self, lids[:half])
            second, more = other.result()
        finally:
            other.close()
        return Traffic(lids, np.concatenate([first, second], axis=1), (paths + more).astype(np.int64).reshape(sn.n, 256))

    def dropped_at(self, switch: int, lid: int) -> int:
        """The switch where a packet for `lid` entering at `switch` stops (or the first of a loop)."""
        seen = set()
        while switch not in seen:
            seen.add(switch)
            step = int(self.next_switch[switch, lid])
            if step < 0:
                break
            switch = step
        return switch

    @cached_property
    def cas_on_switch(self) -> np.ndarray:
        sn = self.tables.subnet
        return np.bincount(sn.ca_switch[sn.ca_lids], minlength=sn.n)


@dataclass(frozen=True)
class Traffic:
    """What the CAs' traffic does on the tables: the figures balance is judged on."""

    lids: np.ndarray  # the destinations counted (every valid LID)
    carried: np.ndarray  # bool [switch, j]: traffic from some CA to lids[j] passes the switch
    paths: np.ndarray  # int64 [switch, port]: CA-to-CA paths leaving each port (each CA to every other CA)

    def carried_to(self, lids: np.ndarray) -> np.ndarray:
        """`carried`'s columns of these destinations (a subset of `lids`)."""
        if len(lids) == len(self.lids) and (lids == self.lids).all():
            return self.carried
        return self.carried[:, np.searchsorted(self.lids, lids)]


def _passed_on(walk: Walk, lids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(carried [switch, j], flat [switch × 256] path counts) for destinations `lids` of
    loop-free tables.  A cell (s, d) holds the CA sources whose packets to d pass s: its own
    CAs (less d itself), plus what every switch that forwards d to s holds.  Following
    `outcome`'s hop counts down to 0, each cell is complete before it is passed on."""
    sn, lft, nxt = walk.tables.subnet, walk.tables.lft, walk.next_switch
    _, hops = walk.outcome
    is_ca = np.zeros(sn.max_lid + 1, bool)
    is_ca[sn.ca_lids] = True
    seeds = walk.cas_on_switch > 0
    reached = np.empty((sn.n, len(lids)), bool)
    paths = np.zeros(sn.n * 256)
    for c in lid_chunks(sn.n, len(lids)):
        d = lids[c]
        width = len(d)
        sources = np.repeat(walk.cas_on_switch[:, None].astype(np.float64), width, axis=1)
        mine = np.flatnonzero(is_ca[d])
        sources[sn.ca_switch[d[mine]], mine] -= 1  # not to itself
        reach = np.repeat(seeds[:, None], width, axis=1)
        flat_sources, flat_reach = sources.ravel(), reach.ravel()
        h, step = columns(hops, d).ravel(), columns(nxt, d).ravel()
        for k in range(int(h.max(initial=0)), 0, -1):
            cell = np.flatnonzero((h == k) & flat_reach)
            to = step[cell].astype(np.int64) * width + cell % width
            flat_reach[to] = True
            np.add.at(flat_sources, to, flat_sources[cell])  # numpy ≥ 1.25: 5x a full-length bincount here
        reached[:, c] = reach
        sources[:, ~is_ca[d]] = 0  # paths count CA destinations only
        cell = np.flatnonzero(flat_sources)
        port = columns(lft, d).ravel()[cell]
        paths += np.bincount((cell // width) * 256 + port, weights=flat_sources[cell], minlength=len(paths))
    return reached, paths


def columns(a: np.ndarray, lids: np.ndarray) -> np.ndarray:
    """a[:, lids], by a slice where the LIDs run without a gap (most of a subnet's do): a
    fancy index gathers column by column, ten times the cost of copying the rows' runs."""
    if len(lids) and int(lids[-1]) - int(lids[0]) == len(lids) - 1:
        return a[:, int(lids[0]):int(lids[-1]) + 1]
    return a[:, lids]


def _passed_on_in_c(walk: Walk, lids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`_passed_on` by walk.c, two halves of the LIDs in two threads, each with its own path counts."""
    sn, lft, nxt, native_walk = walk.tables.subnet, np.ascontiguousarray(walk.tables.lft), walk.next_switch, kernels()
    _, hops = walk.outcome
    own = np.full(sn.max_lid + 1, -1, np.int64)
    own[sn.ca_lids] = sn.ca_switch[sn.ca_lids]
    cas = walk.cas_on_switch.astype(np.int64)
    reached = np.empty((sn.n, len(lids)), bool)
    parts: list[np.ndarray] = []

    def part(lo: int, hi: int) -> int:
        paths = np.zeros(sn.n * 256)  # this thread's own: `parts[-1]` could be the other thread's by the call
        parts.append(paths)
        return native_walk.passed_on(nxt, hops, lft, *nxt.shape, lids, lo, hi, cas, own, len(lids), reached, paths)

    halves(len(lids), sn.n * len(lids), part)
    return reached, sum(parts).astype(np.int64).reshape(sn.n, 256)


def walked_path_counts(walk: Walk) -> np.ndarray:
    """[sw, port] number of CA-to-CA paths leaving each port, each packet followed step by step
    (what `Walk.traffic` counts when the tables loop, and the independent count its tests
    compare with).  The CAs of a switch travel together (a weight), a chunk of destinations at
    a time, by flat int32 cell numbers into the chunk's columns."""
    sn, lft = walk.tables.subnet, walk.tables.lft
    nxt = walk.next_switch
    counts = np.zeros(sn.n * 256)
    for c in lid_chunks(sn.n, len(sn.ca_lids)):
        ca = sn.ca_lids[c]
        width = len(ca)
        nxt_c, out_c = nxt[:, ca].ravel(), lft[:, ca].ravel()  # the chunk's columns: small and close together
        weight = np.repeat(walk.cas_on_switch[:, None], width, axis=1)
        weight[sn.ca_switch[ca], np.arange(width)] -= 1  # not to itself
        cell = np.flatnonzero(weight > 0).astype(np.int32)
        cur, col, w = cell // width, cell % width, weight.ravel()[cell]
        for _ in range(sn.n):
            if not len(cell):
                break
            counts += np.bincount(cur * 256 + out_c[cell], weights=w, minlength=sn.n * 256)
            step = nxt_c[cell]
            go = step >= 0
            cur, col, w = step[go].astype(np.int32), col[go], w[go]
            cell = cur * width + col
    return counts.astype(np.int64).reshape(sn.n, 256)


def _follow(nxt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(end, hops) of every cell of a [switch × LID] block of next hops.  While many packets
    travel, all cells move a step at a time (one `take_along_axis` per step: a tree's paths are
    a few hops); once few do (a forwarding loop keeps its packets going until every switch was
    visited), only theirs, by index lists.  Whole-block steps beat index lists of the
    travelling cells by 40 % of CPU at the LID limit (7.2 s → 4.4 s, the same arrays).
    A looping packet's hop count is meaningless (never read): its end is LOOP."""
    n, w = nxt.shape
    cur = nxt.copy()
    end, hops = np.zeros(nxt.shape, np.int8), np.zeros(nxt.shape, np.int16)
    moving = cur >= 0
    end[~moving] = cur[~moving]
    left = n  # steps a packet may still take before it counts as looping
    while left and np.count_nonzero(moving) * 16 > moving.size:
        left -= 1
        hops += moving
        step = np.take_along_axis(nxt, np.maximum(cur, 0), axis=0)
        stops = moving & (step < 0)
        end[stops] = step[stops]
        moving &= ~stops
        np.copyto(cur, step, where=moving)
    # the few still travelling: flat index lists that shrink as they arrive
    flat, ends, steps = nxt.ravel(), end.ravel(), hops.ravel()
    cell = np.flatnonzero(moving.ravel())
    col = cell % w
    at = cur.ravel()[cell].astype(np.int64) * w + col
    for _ in range(left):
        if not len(cell):
            break
        steps[cell] += 1
        step = flat[at]
        done = step < 0
        ends[cell[done]] = step[done]
        go = ~done
        cell, col = cell[go], col[go]
        at = step[go].astype(np.int64) * w + col
    ends[cell] = LOOP
    return end, hops
