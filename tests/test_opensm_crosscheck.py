"""Cross-checks against the tools the InfiniBand world trusts, on the simulated fabric:
OpenSM loads Loom's LFTs (`-R file -U`), `dump_fts` reads them back entry for entry, and
ibdmchk gives the same credit-loop verdict as `loom check` on clean and planted routing."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom.checks import Walk, check_deadlock, check_tables
from loom.expand import expand
from loom.model import load_model
from loom.fabrics.infiniband.sim import SimFabric, ibdmchk, tools_missing
from loom.model.rules import zone_layers
from loom.qos import plan_qos
from loom.render.opensm_qos import opensm_qos_policy
from loom.render.opensm import guid2lid, ibdmchk_path_sls, ibdmchk_sl2vl, lfts_dump, parse_lfts_dump
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
    """Equal entry for entry on every switch OpenSM can reach (the ones Loom gives a table)."""
    sn = t.subnet
    live = [row for row in range(sn.n) if (t.lft[row] != 255).any()]
    assert len(read_back) == len(live)
    for row in live:
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


def degraded_zone(tmp_path: Path) -> Path:
    """The two-zone Fire-Flyer fabric with zone z0 missing spine 3 and three cables."""
    text = (TOPO / "fire-flyer-2.yaml").read_text()
    z0 = "leaf_up: 20, oversubscription: 1}"
    out = text.replace(z0, "leaf_up: 20, oversubscription: 1, missing_switches: [{role: spine, index: 3}], "
                       "missing_links: [{leaf: 5, up_port: 7}, {leaf: 12, up_port: 0}, {leaf: 39, up_port: 15}]}", 1)
    assert out != text
    (tmp_path / "catalogue").symlink_to(TOPO / "catalogue")
    path = tmp_path / "degraded.yaml"
    path.write_text(out)
    return path


@pytest.mark.slow
def test_degraded_fabric_loaded_read_back_and_judged_loop_free(tmp_path):
    fabric = expand(load_model(degraded_zone(tmp_path)))
    t = route(fabric)[0]
    assert check_tables(t, ebb_samples=0)["balance"]["within_bound"]
    with SimFabric(fabric, tmp_path) as sim:
        back, run = push_and_read_back(sim, "degraded", t)
        assert_same_tables(back, t)  # the dead spine is neither discovered nor given a table
        free, report, _ = ibdmchk(run.dir)
        assert free and check_deadlock(Walk(t)).deadlock_free, report[-2000:]


@pytest.mark.slow
def test_three_zone_ring_needs_and_gets_a_vl_per_direction(tmp_path):
    model = load_model(Path(__file__).parent / "models" / "ring3.yaml")
    fabric = expand(model)
    t = route(fabric)[0]
    plan = plan_qos(model)
    layers = zone_layers(model)
    assert check_deadlock(Walk(t), layers=layers).deadlock_free and not check_deadlock(Walk(t)).deadlock_free
    with SimFabric(fabric, tmp_path) as sim:
        back, run = push_and_read_back(sim, "ring", t)
        assert_same_tables(back, t)
        (run.dir / "path.sl").write_text(ibdmchk_path_sls(t, lambda a, b: plan.sl_offset * layers[a][b]))
        (run.dir / "sl2vl").write_text(ibdmchk_sl2vl(t, plan.sl2vl))
        free, report, _ = ibdmchk(run.dir, ("-c", "path.sl", "-d", "sl2vl"))
        assert free, report[-2000:]
        # OpenSM's own parser takes the policy that hands out the SLs per direction
        policy = tmp_path / "qos-policy.conf"
        policy.write_text(opensm_qos_policy(fabric, plan))
        loaded = sim.opensm_once("policy", "file", lfts_dump(t), guid2lid(t), extra=["-Q", "-Y", str(policy)])
        qos_log = [l for l in (loaded.dir / "osm.log").read_text().splitlines() if "osm_qos" in l]
        assert any("Loading QoS policy file" in l for l in qos_log) and not any("ERR" in l for l in qos_log), qos_log
        # and on one VL (every pair on SL 0) ibdmchk finds the loop loom check predicts
        (run.dir / "path.sl").write_text(ibdmchk_path_sls(t, lambda a, b: 0))
        free, report, _ = ibdmchk(run.dir, ("-c", "path.sl", "-d", "sl2vl"))
        assert free is False, report[-2000:]
