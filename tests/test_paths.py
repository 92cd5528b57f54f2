"""`paths._follow`, the walk every reachability verdict rests on, against a packet followed cell
by cell: whole-block steps, then index lists for the few left, must agree on every end and
every hop count, forwarding loops and drops included."""

from __future__ import annotations

import numpy as np

from loom.checks.paths import DEAD, DELIVERED, LOOP, _follow


def _one_by_one(nxt: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n, w = nxt.shape
    end, hops = np.zeros((n, w), np.int8), np.zeros((n, w), np.int16)
    for s in range(n):
        for d in range(w):
            at, seen, h = s, set(), 0
            while True:
                step = int(nxt[at, d])
                if step < 0:
                    end[s, d], hops[s, d] = step, h
                    break
                if at in seen:
                    end[s, d] = LOOP
                    break
                seen.add(at)
                at, h = step, h + 1
    return end, hops


def test_follow_matches_a_packet_followed_cell_by_cell():
    rng = np.random.default_rng(7)
    kinds = set()
    for trial in range(200):
        n, w = int(rng.integers(2, 30)), int(rng.integers(1, 40))
        up = np.minimum(np.arange(n)[:, None] + rng.integers(1, 3, (n, w)), n - 1)
        tree = np.where(np.arange(n)[:, None] + 1 < n, up, DELIVERED)  # mostly paths up to the last switch
        wild = rng.integers(DEAD, n, (n, w))  # drops, deliveries, and jumps back (loops)
        nxt = np.where(rng.random((n, w)) < (0.9 if trial % 2 else 0.5), tree, wild).astype(np.int16)
        end, hops = _follow(nxt)
        want_end, want_hops = _one_by_one(nxt)
        assert (end == want_end).all(), trial
        arrived = end != LOOP
        assert (hops[arrived] == want_hops[arrived]).all(), trial
        kinds |= set(np.unique(end).tolist())
    assert kinds == {DELIVERED, DEAD, LOOP}  # every fate was exercised
