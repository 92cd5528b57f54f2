"""Today's multi-plane variants (DeepSeek-V3 MPFT, rail-optimised, HPN dual-ToR dual-plane):
the reference models check, and plane isolation and rail correctness catch planted faults."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from loom.checks.planes import check_planes, check_rails
from loom.cli import app
from loom.expand import HOST, SWITCH, load_fabric

TOPO = Path(__file__).parent.parent / "topology"
runner = CliRunner()
NEW = ("deepseek-v3-mpft", "rail-optimised", "hpn-dual-plane")


@pytest.fixture(scope="module")
def fabrics():
    return {m: load_fabric(TOPO / f"{m}.yaml") for m in NEW}


def _host_switch(f, node: str) -> dict[str, int]:
    """'nic/port' → switch index of a node's cables."""
    c = f.cables
    m = (c.a_kind == HOST) & (c.b_kind == SWITCH)
    idx = f.node_index[node]
    return {f"{f.ports[p].nic}/{f.ports[p].port}": s for p, s in zip(c.a_dev[m].tolist(), c.b_dev[m].tolist())
            if f.ports[p].node == idx}


def test_reference_models_pass_isolation_and_rails(fabrics):
    for name, f in fabrics.items():
        iso, rails = check_planes(f), check_rails(f)
        assert iso["ok"], (name, iso["problems"])
        assert rails is None if name == "deepseek-v3-mpft" else rails["ok"], (name, rails)


def test_mpft_has_the_papers_figures_and_nic_i_on_plane_i(fabrics):
    f = fabrics["deepseek-v3-mpft"]
    r = runner.invoke(app, ["show", str(TOPO / "deepseek-v3-mpft.yaml"), "--json"])
    e = json.loads(r.output)["per_endpoint"]
    assert (e["endpoints"], e["gpus"], e["switches"], e["switch_links"]) == (16384, 16384, 768, 16384)
    for nic, s in _host_switch(f, "n0123").items():
        assert f.switches[s].plane == int(nic.split("_")[1].split("/")[0])


def test_rail_optimised_nic_i_on_rail_i(fabrics):
    f = fabrics["rail-optimised"]
    for node in ("r000", "r031", "r032", "r127"):
        edges = {nic: f.switches[s].edge for nic, s in _host_switch(f, node).items()}
        unit = int(node[1:]) // 32
        assert edges == {f"eth{i}/1": unit * 8 + i for i in range(8)}


def test_hpn_ports_of_a_nic_on_two_tors_of_two_planes(fabrics):
    f = fabrics["hpn-dual-plane"]
    sw = _host_switch(f, "h070")
    for i in range(8):
        a, b = f.switches[sw[f"eth{i}/1"]], f.switches[sw[f"eth{i}/2"]]
        assert (a.plane, b.plane) == (0, 1) and a.edge == b.edge == 8 + i  # rail i of the second segment


def _recabled(f, row: int, end: str, switch: int):
    """The fabric with one end of cable `row` moved to another switch (same port number)."""
    dev = getattr(f.cables, f"{end}_dev").copy()
    dev[row] = switch
    return dataclasses.replace(f, cables=dataclasses.replace(f.cables, **{f"{end}_dev": dev}))


def test_planted_cross_plane_link_is_caught(fabrics):
    f = fabrics["hpn-dual-plane"]
    c = f.cables
    row = int(np.flatnonzero((c.a_kind == SWITCH) & (c.b_kind == SWITCH))[0])
    other = next(s.index for s in f.switches if s.plane != f.switches[int(c.b_dev[row])].plane and s.role == "spine")
    r = check_planes(_recabled(f, row, "b", other))
    assert not r["ok"] and "is cabled to" in r["problems"][0] and "plane 1" in r["problems"][0]


def test_planted_nic_port_on_the_wrong_plane_is_caught(fabrics):
    f = fabrics["deepseek-v3-mpft"]
    c = f.cables
    row = int(np.flatnonzero(c.a_kind == HOST)[5])
    wrong = next(s.index for s in f.switches if s.plane != f.ports[int(c.a_dev[row])].plane and s.role == "leaf")
    r = check_planes(_recabled(f, row, "b", wrong))
    assert not r["ok"] and any("is cabled to" in p for p in r["problems"])


def test_planted_nic_with_both_ports_on_one_tor_is_caught():
    f = load_fabric(TOPO / "c4-dualport.yaml")
    c = f.cables
    hosts = np.flatnonzero(c.a_kind == HOST)
    first, second = (int(r) for r in hosts[:2])  # the two ports of the first NIC
    assert f.ports[int(c.a_dev[first])].nic == f.ports[int(c.a_dev[second])].nic
    r = check_planes(_recabled(f, second, "b", int(c.b_dev[first])))
    assert not r["ok"] and "two ports on" in r["problems"][-1]


def test_planted_node_off_its_rail_is_caught(tmp_path):
    text = (TOPO / "rail-optimised.yaml").read_text().replace(
        'name_pattern: "r{index:03d}"}', 'name_pattern: "r{index:03d}", pinned: {r005: [1, 0, 2, 3, 4, 5, 6, 7]}}')
    m = tmp_path / "rail-optimised.yaml"
    m.write_text(text)
    r = check_rails(load_fabric(m))
    assert not r["ok"] and any("r005 eth0/1 (rail 0)" in p for p in r["problems"])
    res = runner.invoke(app, ["check", str(m), "--ebb-samples", "0"])
    assert res.exit_code == 1 and "rails correct:  NO" in res.output


def test_rail_optimised_check_cli(tmp_path):
    r = runner.invoke(app, ["check", str(TOPO / "rail-optimised.yaml"), "--json", "--ebb-samples", "0"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["isolation"]["ok"] and d["rails"]["ok"] and d["rails"]["rail_leaves"] == 32
    r = runner.invoke(app, ["configs", str(TOPO / "rail-optimised.yaml"), "--out", str(tmp_path), "--only", "fab-leaf0"])
    assert r.exit_code == 0 and (tmp_path / "switches" / "fab-leaf0" / "frr.conf").exists()


@pytest.mark.slow
def test_mpft_check_passes_every_plane():
    r = runner.invoke(app, ["check", str(TOPO / "deepseek-v3-mpft.yaml"), "--json", "--ebb-samples", "20"])
    assert r.exit_code == 0
    d = json.loads(r.output)
    assert len(d["planes"]) == 8 and all(p["reachable"] and p["deadlock_free"] and p["balance"]["within_bound"] for p in d["planes"])
