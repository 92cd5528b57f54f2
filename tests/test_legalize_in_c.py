"""The engine's legality pass with walk.c (`loom_suspect` finds the entries that are not plainly
legal, Python judges only those) against the pass judging every entry in numpy: the same tables,
on routed fat trees whose entries are planted wrong (dead ports, ports to channel adapters, a
spine sent back up, "no route", another zone's links) — degraded trees, BiGraphs, several zones."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loom.expand import expand
from loom.model import load_model
from loom.model.schema import Model
from loom.routing import asbuilt, route
from loom.routing.fattree import FatTreeEngine
from loom.routing.kernels import kernels
from loom.routing.updown import UpDown
from tests.test_as_built import degraded_trees

pytestmark = pytest.mark.skipif(kernels() is None, reason="walk.c cannot be built here")
TOPOLOGY = Path(__file__).resolve().parent.parent / "topology"


def _planted(tables, seed: int, share: float) -> np.ndarray:
    """The tables with a share of their entries set to random ports (any port of the switch,
    cabled or not), half of those to 255 ("no route")."""
    rng = np.random.default_rng(seed)
    sn, lft = tables.subnet, tables.lft.copy()
    cells = rng.random(lft.shape) < share
    ports = rng.integers(0, sn.max_port + 1, int(cells.sum()))
    lft[cells] = np.where(rng.random(len(ports)) < 0.5, 255, ports).astype(lft.dtype)
    return lft


def _both(tables, lft: np.ndarray, monkeypatch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`_legalize` of `lft` with walk.c and without (the numpy pass over every entry), and
    [switch, lid] where a planted "no route" must have been judged and replaced: the engine had a
    (legal) port there, towards a target other than the switch itself."""
    sn = tables.subnet
    ud = UpDown.of(sn)
    lids = np.flatnonzero(ud.live_lids)
    lft[~ud.live, :] = 255
    lft[:, ~ud.live_lids] = 255
    target, roles = ud.targets(lft), FatTreeEngine._roles(sn)
    towards = target[ud.zone]  # [switch, lid]
    must = (lft == 255) & (tables.lft != 255) & (towards >= 0) & (towards != np.arange(sn.n)[:, None])
    out = []
    for native in (kernels, lambda: None):
        monkeypatch.setattr(asbuilt, "kernels", native)
        mine = lft.copy()
        asbuilt._legalize(ud, mine, target, lids, roles)
        out.append(mine)
    return out[0], out[1], must


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                                                 HealthCheck.function_scoped_fixture])
@given(degraded_trees(), st.integers(0, 2**31), st.sampled_from([0.0, 0.02, 0.3]))
def test_legalize_with_c_equals_numpy_on_planted_degraded_trees(monkeypatch, data, seed, share):
    tables = route(expand(Model.model_validate(data)))[0]
    with_c, without, must = _both(tables, _planted(tables, seed, share), monkeypatch)
    assert np.array_equal(with_c, without)
    assert (with_c[must] != 255).all()  # the planted entries were judged


@pytest.mark.parametrize("name", ["eflops-bigraph", "fire-flyer-2", "fat-tree-3", "c4-dualport"])
def test_legalize_with_c_equals_numpy_on_catalogue_fabrics(monkeypatch, name):
    for tables in route(expand(load_model(TOPOLOGY / f"{name}.yaml"))):
        with_c, without, must = _both(tables, _planted(tables, 7, 0.05), monkeypatch)
        assert np.array_equal(with_c, without)
        assert must.any() and (with_c[must] != 255).all()


def test_legalize_with_c_equals_numpy_with_links_that_skip_a_layer(monkeypatch):
    """A leaf that lost its up-links cabled straight to the cores (no model builds this, but a
    hand-made subnet can have it): the C pass must not take an entry up to a core as legal
    towards a turn leaf the leaf does not reach up-then-down (`candidates` requires it)."""
    from tests.test_as_built import fat_tree

    from loom.routing.subnet import TO_SWITCH

    data = fat_tree(ports=12, spines=2, links=1, leaves=2, pods=2, cores=2, spine_up=1, nodes=8, missing_links=[(0, 0), (0, 1)])
    tables = route(expand(Model.model_validate(data)))[0]
    sn = tables.subnet
    role = [sn.switch(i).role for i in range(sn.n)]
    leaf = next(i for i in range(sn.n) if role[i] == "leaf" and not (sn.peer_kind[i] == TO_SWITCH).any())
    kind, dev, port = sn.peer_kind.copy(), sn.peer_dev.copy(), sn.peer_port.copy()
    free = [p for p in range(1, sn.max_port + 1) if kind[leaf, p] == 0]
    for lp, core in zip(free, [i for i in range(sn.n) if role[i] == "core"]):
        cp = next(p for p in range(1, sn.max_port + 1) if kind[core, p] == 0)
        kind[leaf, lp], dev[leaf, lp], port[leaf, lp] = TO_SWITCH, core, cp
        kind[core, cp], dev[core, cp], port[core, cp] = TO_SWITCH, leaf, lp
    skipping = dataclasses.replace(tables, subnet=dataclasses.replace(sn, peer_kind=kind, peer_dev=dev, peer_port=port))
    for up in free[:2]:
        lft = skipping.lft.copy()
        lft[leaf, 1:] = up
        with_c, without, _ = _both(skipping, lft, monkeypatch)
        assert np.array_equal(with_c, without)
