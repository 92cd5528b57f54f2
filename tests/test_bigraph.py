"""Engine `bigraph` on EFLOPS's 4×16 BiGraph (seed 002): one hop across, two within a part,
balanced; deadlock-free only with a VL set per part, and a planted same-VL turn is caught."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from loom.checks import Walk, check_deadlock, check_reachability, check_tables
from loom.cli import app
from loom.expand import expand
from loom.model import load_model
from loom.model.rules import zone_layers
from loom.routing import RoutingError, route

from .faults import plant_bigraph_upper_turns

TOPO = Path(__file__).parent.parent / "topology"
runner = CliRunner()


@pytest.fixture(scope="module")
def bg():
    return route(expand(load_model(TOPO / "eflops-bigraph.yaml")))[0]


def test_auto_picks_bigraph_and_check_passes():
    result = runner.invoke(app, ["check", str(TOPO / "eflops-bigraph.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.output)
    assert r["engine"] == "bigraph" and r["reachable"] and r["deadlock_free"] and r["balance"]["within_bound"]
    assert r["part_vls"] and not r["deadlock_free_single_vl"]  # the split is what makes it free
    assert r["reachability"]["max_hops"] == 2 and r["reachability"]["nonminimal_pairs"] == 0


def test_paths_one_hop_across_two_within(bg):
    sn, w = bg.subnet, Walk(bg)
    end, hops = w.outcome
    part = np.array([sn.switch(i).role for i in range(sn.n)])
    ca = sn.ca_lids
    dst = sn.ca_switch[ca]
    for s in range(sn.n):
        want = np.where(dst == s, 0, np.where(part[dst] != part[s], 1, 2))
        assert (hops[s, ca] == want).all() and (end[s, ca] == -1).all()


def test_turns_spread_over_the_other_part(bg):
    """Every switch sends its own part's destinations over all N/2 ports across, evenly."""
    sn = bg.subnet
    ca = sn.ca_lids
    for s in range(sn.n):
        same = ca[(np.array([sn.switch(int(t)).role for t in sn.ca_switch[ca]]) == sn.switch(s).role) & (sn.ca_switch[ca] != s)]
        loads = np.bincount(bg.lft[s, same], minlength=sn.max_port + 1)
        used = loads[loads > 0]
        assert len(used) == 8 and used.max() - used.min() <= 1


def test_one_vl_closes_the_papers_credit_loop(bg):
    """EFLOPS Fig. 7: upper and lower turns on one VL form a loop; a VL set per part breaks it."""
    w = Walk(bg)
    one = check_deadlock(w)
    assert not one.deadlock_free and len(one.cycle) >= 4
    assert check_deadlock(w, layers=zone_layers(bg.subnet.fabric.model)).deadlock_free


def test_planted_same_vl_turn_in_the_other_part_is_caught(bg):
    bad, info = plant_bigraph_upper_turns(bg, "bg")
    w = Walk(bad)
    assert check_reachability(w).reachable  # every packet still arrives: only the CDG sees it
    d = check_deadlock(w, layers=zone_layers(bad.subnet.fabric.model))
    assert not d.deadlock_free
    assert {hop.rsplit("/", 1)[0] for hop in d.cycle} == info["channels"]
    assert not check_tables(bad, ebb_samples=0)["deadlock_free"]


def test_planted_imbalance_is_caught(bg):
    r = check_tables(bg, ebb_samples=0)
    assert r["balance"]["within_bound"] and r["balance"]["levels"]["across"]["groups"] == 16
    sn = bg.subnet
    s = 0
    ports = np.flatnonzero(sn.peer_kind[s] == 1)
    same = [int(l) for l in sn.ca_lids if sn.switch(int(sn.ca_switch[l])).role == sn.switch(s).role and sn.ca_switch[l] != s]
    bad = bg.with_entries({(s, l): int(ports[0]) for l in same[:6]})
    rb = check_tables(bad, ebb_samples=0)
    assert rb["reachable"] and not rb["balance"]["within_bound"]


def test_hint_keeps_turns(bg):
    sn = bg.subnet
    s = 0
    ports = np.flatnonzero(sn.peer_kind[s] == 1)
    lid = next(int(l) for l in sn.ca_lids if sn.switch(int(sn.ca_switch[l])).role == "upper" and sn.ca_switch[l] != s)
    other = int(next(p for p in ports if p != bg.lft[s, lid]))
    again = route(sn.fabric, hint=[bg.with_entries({(s, lid): other})])[0]
    assert again.lft[s, lid] == other and check_tables(again, ebb_samples=0)["balance"]["within_bound"]


def test_fattree_engine_refuses_a_bigraph_and_bigraph_a_fat_tree():
    result = runner.invoke(app, ["check", str(TOPO / "eflops-bigraph.yaml"), "--engine", "fattree"])
    assert result.exit_code == 1 and "BiGraph" in result.output and "Traceback" not in result.output
    with pytest.raises(RoutingError, match="BiGraph zones only"):
        route(expand(load_model(TOPO / "tiny.yaml")), "bigraph")


def test_show_prints_the_seed_facts():
    result = runner.invoke(app, ["show", str(TOPO / "eflops-bigraph.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    z = json.loads(result.output)["bigraph"]["bg"]
    assert z == {"switches": 16, "per_part": 8, "hosts_per_switch": 4, "links": 64, "links_n2_over_4": 64,
                 "diameter_hops": 2, "sub_nodes": 64}
    text = runner.invoke(app, ["show", str(TOPO / "eflops-bigraph.yaml")]).output
    assert "64 links (N²/4 = 64)" in text and "diameter 2 hops" in text
