"""`loads.min_max_load`, the as-built bound every balance verdict and repair is held to, against
placements enumerated by brute force on small port groups (its shortcuts and its memo included)."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from loom.routing.loads import min_max_load


def brute(patterns, counts, others, total):
    """The least max of counted items per port over every placement that keeps every port within
    `total` items in all (None: no such placement)."""
    items = [(g, True) for g in range(len(counts)) for _ in range(counts[g])] + \
        [(g, False) for g in range(len(others)) for _ in range(others[g])]
    best = None
    for ports in itertools.product(*(np.flatnonzero(patterns[g]) for g, _ in items)):
        mine = np.bincount([p for p, (_, c) in zip(ports, items) if c], minlength=patterns.shape[1])
        every = np.bincount(ports, minlength=patterns.shape[1])
        if every.max(initial=0) <= total:
            best = int(mine.max(initial=0)) if best is None else min(best, int(mine.max(initial=0)))
    return best


@st.composite
def groups(draw):
    p = draw(st.integers(1, 3))
    g = draw(st.integers(1, 3))
    patterns = np.array([[draw(st.booleans()) for _ in range(p)] for _ in range(g)])
    patterns[np.arange(g), [draw(st.integers(0, p - 1)) for _ in range(g)]] = True  # every set has a port
    counts = np.array([draw(st.integers(0, 3)) for _ in range(g)])
    others = np.array([draw(st.integers(0, 2)) for _ in range(g)])
    return patterns, counts, others


@settings(max_examples=300, deadline=None)
@given(groups())
def test_the_bound_is_the_best_placement(group):
    patterns, counts, others = group
    assert min_max_load(patterns, counts) == brute(patterns, counts, np.zeros_like(counts), int(counts.sum()))
    total = brute(patterns, counts + others, np.zeros_like(others), int((counts + others).sum()))  # the total's bound
    got = min_max_load(patterns, counts, others, total)
    assert got == brute(patterns, counts, others, total)
    assert min_max_load(patterns, counts, others, total) == got  # asked again: from the memo, the same


def test_pinned_items_crowd_the_counted_ones():
    """Two ports, three switch LIDs pinned to port 0 and three CAs free: at a total of 3 per
    port the CAs must all take port 1 — the counting bound (2) is not reachable."""
    patterns = np.array([[True, True], [True, False]])
    assert min_max_load(patterns, np.array([3, 0]), np.array([0, 3]), 3) == 3
    assert min_max_load(patterns, np.array([3, 0]), np.array([0, 3]), 4) == 2


def test_at_counting_bound_judges_every_role_as_one_role_at_a_time():
    """`PortGroup.at_counting_bound` counts every role at once; here each role (and the total)
    is judged by itself with `counting_bound`, on random groups with some destinations off
    their group's ports."""
    from loom.routing.loads import PortGroup, counting_bound

    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(3000):
        ports, kinds, dests = int(rng.integers(1, 6)), int(rng.integers(1, 5)), int(rng.integers(1, 30))
        pats = rng.random((kinds, ports)) < 0.6
        pats[np.arange(kinds), rng.integers(0, ports, kinds)] = True
        pattern = rng.integers(0, kinds, dests)
        chosen = np.array([rng.choice(np.flatnonzero(pats[p])) if rng.random() < 0.95 else -1 for p in pattern])
        roles = rng.integers(0, 3, dests)
        g = PortGroup(0, np.arange(ports), "up", np.arange(dests), roles, pats, pattern, chosen, np.ones(dests, bool))
        want = True
        for r in [None, *np.unique(roles).tolist()]:
            of = np.ones(dests, bool) if r is None else roles == r
            load = np.bincount(chosen[of & (chosen >= 0)], minlength=ports).max(initial=0)
            want &= bool(load <= counting_bound(pats, np.bincount(pattern[of], minlength=kinds)))
        assert g.at_counting_bound() == want
        seen.add(want)
    assert seen == {True, False}


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.sampled_from([1, 8, 9, 33, 63, 64, 65, 130]), st.integers(0, 2**32 - 1))
def test_distinct_rows_equal_numpys_unique(rows, cols, seed):
    """`groups.distinct_rows` (each row one integer up to 63 columns, packed bytes beyond)
    against `np.unique(axis=0)`: the same rows in the same order, the same inverse."""
    from loom.routing.groups import distinct_rows

    rng = np.random.default_rng(seed)
    mask = rng.random((rows, cols)) < rng.random()
    if rows:
        mask[rng.integers(0, rows, rows // 2)] = mask[0]  # repeated rows
    got, inverse = distinct_rows(mask)
    want, want_inverse = np.unique(mask, axis=0, return_inverse=True) if rows else (mask, np.zeros(0, np.int64))
    assert got.shape == want.shape and (got == want).all() and (inverse == want_inverse.reshape(-1)).all()
