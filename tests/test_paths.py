"""`paths._follow`, the walk every reachability verdict rests on, against a packet followed cell
by cell: whole-block steps, then index lists for the few left, must agree on every end and
every hop count, forwarding loops and drops included.  The same for walk.c's passes, and for
`Walk.traffic` (in C and in numpy) against packets walked one by one."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom.checks.paths import DEAD, DELIVERED, LOOP, Walk, _follow, walked_path_counts
from loom.expand import expand
from loom.model.schema import Model
from loom.routing import route
from loom.routing.loads import carried
from loom.routing.subnet import TO_SWITCH
from tests.test_as_built import degraded_trees, fat_tree


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


# --- walk.c: the same passes in C (`loom.routing.kernels`), against the numpy ones and independent counts


def _native():
    from loom.routing.kernels import kernels

    k = kernels()
    assert k is not None, "walk.c did not build: is cc installed (`make setup`)?"
    return k


def test_the_c_walk_matches_a_packet_followed_cell_by_cell():
    """loom_follow on the same random tables as `_follow` (loops, drops, deliveries), over a
    column subset with gaps, as `Walk.outcome` never asks but `lids` allows."""
    k = _native()
    rng = np.random.default_rng(11)
    for trial in range(200):
        n, w = int(rng.integers(2, 30)), int(rng.integers(1, 150))
        up = np.minimum(np.arange(n)[:, None] + rng.integers(1, 3, (n, w)), n - 1)
        tree = np.where(np.arange(n)[:, None] + 1 < n, up, DELIVERED)
        wild = rng.integers(DEAD, n, (n, w))
        nxt = np.where(rng.random((n, w)) < (0.9 if trial % 2 else 0.5), tree, wild).astype(np.int16)
        cols = np.flatnonzero(rng.random(w) < 0.7).astype(np.int64)
        end, hops = np.full((n, w), 99, np.int8), np.full((n, w), 99, np.int16)
        assert k.follow(nxt, n, w, cols, 0, len(cols), end, hops) == 0
        want_end, want_hops = _one_by_one(nxt)
        assert (end[:, cols] == want_end[:, cols]).all(), trial
        arrived = want_end[:, cols] != LOOP
        assert (hops[:, cols][arrived] == want_hops[:, cols][arrived]).all(), trial
        untouched = np.setdiff1d(np.arange(w), cols)
        assert (end[:, untouched] == 99).all() and (hops[:, untouched] == 99).all(), trial


@pytest.fixture(params=["c", "c in two threads", "numpy"])
def walk_in(request, monkeypatch):
    """Each test below runs with walk.c (on one thread, and split in two as on a large subnet)
    and with the numpy passes (`paths.kernels` None; the engine's `carried` stays in C)."""
    from loom.checks import paths
    from loom.routing import kernels

    if request.param == "numpy":
        monkeypatch.setattr(paths, "kernels", lambda: None)
    else:
        _native()
        if request.param == "c in two threads":
            monkeypatch.setattr(kernels, "FORK_CELLS", 0)
    return request.param


def _planted(t, rng):
    """`t` with a few entries sent to a random port or to no port (drops, dead ports, detours)."""
    lft = t.lft.copy()
    for _ in range(int(rng.integers(0, 6))):
        s, d = int(rng.integers(0, lft.shape[0])), int(rng.integers(1, lft.shape[1]))
        lft[s, d] = int(rng.choice([255, int(rng.integers(0, t.subnet.max_port + 1))]))
    return dataclasses.replace(t, lft=lft)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(degraded_trees(), st.integers(0, 2**32 - 1))
def test_traffic_equals_packets_walked_one_by_one(walk_in, data, seed):
    """`Walk.traffic` (one pass, farthest cells first) against the packets walked step by step
    (`walked_path_counts`) and `loads.carried`'s breadth-first spread, on degraded trees with
    planted drops and detours; a table that loops takes the walked figures."""
    t = _planted(route(expand(Model.model_validate(data)))[0], np.random.default_rng(seed))
    walk = Walk(t)
    traffic = walk.traffic
    assert (traffic.paths == walked_path_counts(Walk(t))).all()
    assert (traffic.carried == carried(t.subnet, t.lft, walk.valid_lids)).all()


def test_traffic_of_tables_that_loop(walk_in):
    """A spine sending a CA's LID back down to the leaf that sent it up: the walked figures,
    not the one pass's (which needs an order the loop does not have)."""
    t = route(expand(Model.model_validate(fat_tree(spines=2))))[0]
    sn, lft = t.subnet, t.lft.copy()
    lid = int(sn.ca_lids[0])
    leaf = next(i for i in range(sn.n) if sn.switch(i).role == "leaf" and i != sn.ca_switch[lid])
    spine = int(sn.peer_dev[leaf, lft[leaf, lid]])
    lft[spine, lid] = next(p for p in range(1, sn.max_port + 1) if sn.peer_kind[spine, p] == TO_SWITCH and sn.peer_dev[spine, p] == leaf)
    looped = dataclasses.replace(t, lft=lft)
    walk = Walk(looped)
    assert (walk.outcome[0][:, lid] == LOOP).any()
    assert (walk.traffic.paths == walked_path_counts(Walk(looped))).all()
    assert (walk.traffic.carried == carried(sn, lft, walk.valid_lids)).all()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(degraded_trees(), st.integers(0, 2**32 - 1))
def test_deadlock_dependencies_in_c_equal_numpys(data, seed):
    """walk.c's dependency bitmap (two threads, each its own) against numpy's, on degraded trees
    with planted drops and detours (the deadlock check's graph is built from it)."""
    from loom.checks import deadlock

    from loom.routing import kernels

    _native()
    t = _planted(route(expand(Model.model_validate(data)))[0], np.random.default_rng(seed))
    in_c = deadlock.dependencies(Walk(t))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(kernels, "FORK_CELLS", 0)
        in_threads = deadlock.dependencies(Walk(t))
    assert all((a == b).all() for a, b in zip(in_c[:2], in_threads[:2]))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(deadlock, "kernels", lambda: None)
        in_numpy = deadlock.dependencies(Walk(t))
    assert (in_c[0] == in_numpy[0]).all() and (in_c[1] == in_numpy[1]).all() and in_c[2] == in_numpy[2]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(degraded_trees(), st.integers(0, 2**32 - 1), st.booleans())
def test_carried_in_c_equals_the_breadth_first_spread(data, seed, some):
    """`loads.carried` by walk.c (a seed's packet followed until it meets a switch reached
    already; one thread and two) against numpy's breadth-first spread, on degraded trees with
    planted drops, detours and loops, over every LID or a scattered few, from the CAs' switches
    or from any."""
    from loom.routing import kernels, loads

    _native()
    t = _planted(route(expand(Model.model_validate(data)))[0], np.random.default_rng(seed))
    sn, rng = t.subnet, np.random.default_rng(seed)
    lids = np.flatnonzero(rng.random(sn.max_lid + 1) < 0.5) if some else Walk(t).valid_lids
    seeds = rng.random(sn.n) < 0.3 if some else np.bincount(sn.ca_switch[sn.ca_lids], minlength=sn.n) > 0
    want = loads._carried(sn, t.lft, lids, seeds)
    assert (loads.carried(sn, t.lft, lids, seeds if some else None) == want).all()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(kernels, "FORK_CELLS", 0)
        assert (loads.carried(sn, t.lft, lids, seeds if some else None) == want).all()


def test_halves_raise_what_a_thread_raised_and_a_failed_allocation(monkeypatch):
    """`kernels.halves` on a large subnet: an exception in the second thread, or walk.c's -1
    (out of memory) from either half, reaches the caller; every half ran over its own range."""
    from loom.routing import kernels

    monkeypatch.setattr(kernels, "FORK_CELLS", 0)
    ranges = []
    kernels.halves(10, 1, lambda lo, hi: ranges.append((lo, hi)) or 0)
    assert sorted(ranges) == [(0, 5), (5, 10)]

    def second_fails(lo, hi):
        if lo:
            raise ValueError("from the thread")
        return 0

    with pytest.raises(ValueError, match="from the thread"):
        kernels.halves(10, 1, second_fails)
    with pytest.raises(MemoryError, match="walk.c"):
        kernels.halves(10, 1, lambda lo, hi: -1 if lo == 0 else 0)


def test_a_library_that_does_not_load_leaves_the_numpy_passes(monkeypatch, tmp_path):
    """Built but not loadable (a cache on a noexec mount, a truncated file): `kernels()` is None
    and every pass runs in numpy, with the same figures."""
    from loom.routing import kernels

    broken = tmp_path / "walk-0000.so"
    broken.write_bytes(b"not a library")
    monkeypatch.setattr(kernels.native, "build", lambda source: str(broken))
    kernels.kernels.cache_clear()
    try:
        assert kernels.kernels() is None
        t = route(expand(Model.model_validate(fat_tree(spines=2))))[0]
        walk = Walk(t)
        assert (walk.traffic.paths == walked_path_counts(Walk(t))).all()
    finally:
        kernels.kernels.cache_clear()


def test_the_c_walk_in_two_ranges_equals_one():
    """loom_follow over [0, k) then [k, n) of the columns, as the two threads call it."""
    k = _native()
    rng = np.random.default_rng(5)
    n, w = 25, 90
    nxt = np.where(rng.random((n, w)) < 0.8, np.minimum(np.arange(n)[:, None] + 1, n - 1), rng.integers(DEAD, n, (n, w)))
    nxt = np.where(np.arange(n)[:, None] == n - 1, DELIVERED, nxt).astype(np.int16)
    cols = np.arange(w, dtype=np.int64)
    whole = np.empty((n, w), np.int8), np.empty((n, w), np.int16)
    split = np.empty((n, w), np.int8), np.empty((n, w), np.int16)
    assert k.follow(nxt, n, w, cols, 0, w, *whole) == 0
    assert k.follow(nxt, n, w, cols, 0, 37, *split) == 0 and k.follow(nxt, n, w, cols, 37, w, *split) == 0
    arrived = whole[0] != LOOP
    assert (whole[0] == split[0]).all() and (whole[1][arrived] == split[1][arrived]).all()
