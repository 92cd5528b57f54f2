"""Cross-checks against the tools the InfiniBand world trusts, on the simulated fabric:
OpenSM loads Loom's LFTs (`-R file -U`), `dump_fts` reads them back entry for entry, and
ibdmchk gives the same credit-loop verdict as `loom check` on clean and planted routing."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.checks import Walk, check_deadlock
from loom.expand import expand
from loom.model import load_model
from loom.push.sim import SimFabric, ibdmchk, tools_missing
from loom.render.opensm import guid2lid, lfts_dump, parse_lfts_dump
from loom.routing import route

from .faults import plant_credit_loop

TOPO = Path(__file__).parent.parent / "topology"
pytestmark = pytest.mark.sim


@pytest.fixture(autouse=True)
def _tools():
    if tools_missing():
        pytest.fail(f"simulator tools missing: {tools_missing()} — run `make setup`")


def push_and_read_back(sim: SimFabric, name: str, t) -> tuple[dict, object]:
    run = sim.opensm_once(name, "file", lfts_dump(t), guid2lid(t))
    assert run.engine_used == "file", f"OpenSM fell back to {run.engine_used}"
    return parse_lfts_dump(sim.dump_fts()), run


def assert_same_tables(read_back: dict, t) -> None:
    sn = t.subnet
    assert len(read_back) == sn.n
    for row in range(sn.n):
        s = sn.switch(row)
        mine = {int(l): int(p) for l, p in enumerate(t.lft[row]) if p != 255}
        assert read_back[s.guid] == mine, f"{s.name} differs"


@pytest.mark.parametrize("model, zone", [("tiny", "z0"), pytest.param("fire-flyer-2", "z1", marks=pytest.mark.slow)])
def test_readback_and_ibdmchk_agree(model, zone, tmp_path):
    fabric = expand(load_model(TOPO / f"{model}.yaml"))
    t = route(fabric)[0]
    planted, _ = plant_credit_loop(t, zone)
    with SimFabric(fabric, tmp_path) as sim:
        back, run = push_and_read_back(sim, "clean", t)
        assert_same_tables(back, t)
        free, report, _ = ibdmchk(run.dir)
        assert free and check_deadlock(Walk(t)).deadlock_free, report[-2000:]

        back, run = push_and_read_back(sim, "planted", planted)
        assert_same_tables(back, planted)
        free, report, _ = ibdmchk(run.dir)
        assert not free, report[-2000:]
        assert not check_deadlock(Walk(planted)).deadlock_free
        assert not check_deadlock(Walk(planted), "ca").deadlock_free
