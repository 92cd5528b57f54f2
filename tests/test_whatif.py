"""`loom whatif`: the minimal-churn reroute after failures, checked, with C4's bandwidth figure (issue 17)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from loom.checks import check_tables
from loom.checks.whatif import what_if
from loom.cli import app
from loom.expand import load_fabric
from loom.expand.failures import FailureSpecError, parse_failures, random_failures, without
from loom.routing import Tables, route, subnets
from loom.routing.fattree import FatTreeEngine

TOPO = Path(__file__).parent.parent / "topology"
runner = CliRunner()


def whatif_json(*args: str) -> tuple[int, dict]:
    res = runner.invoke(app, ["whatif", *args, "--json"])
    return res.exit_code, json.loads(res.stdout)


@pytest.fixture(scope="module")
def ff2():
    f = load_fabric(TOPO / "fire-flyer-2.yaml")
    return f, route(f)


@pytest.mark.parametrize("model, cable, uplinks", [("fire-flyer-2.yaml", "z0-leaf3/30", 20), ("c4-dualport.yaml", "pod-leaf0/40", 32)])
def test_one_uplink_down_costs_its_leaf_one_uplink_and_nobody_else_anything(model, cable, uplinks):
    code, rep = whatif_json(str(TOPO / model), "--fail", cable)
    assert code == 0 and rep["ok"], rep
    (p,) = rep["planes"]
    assert p["reachable"] and p["deadlock_free"] and p["within_bound"] and p["minimal"]
    leaf = cable.split("/")[0]
    assert p["leaves_losing"] == [{**p["leaves_losing"][0], "leaf": leaf, "working": uplinks - 1, "up_links": uplinks}]
    assert p["min_leaf_kept"] == round((uplinks - 1) / uplinks, 4)
    assert p["repair"]["entries"] < p["recompute"]["entries"]


def test_a_spine_down_moves_only_the_destinations_it_carried(ff2):
    f, design = ff2
    (o,) = what_if(f, parse_failures(f, ["z0-spine4"]), design)
    assert o.ok and o.minimal and o.repair.destinations == o.affected
    losing = [l for l in o.leaves if l.kept < 1]
    assert len(losing) == 40 and all(l.working == 19 for l in losing)  # every z0 leaf lost its one link to spine4
    assert all(l.leaf.startswith("z0-") for l in losing)


def test_tables_that_ignore_the_failure_are_caught(ff2):
    """The check whatif relies on: the design tables on the degraded fabric are not reachable."""
    f, design = ff2
    fsn = subnets(without(f, parse_failures(f, ["z0-leaf3/30"])))[0]
    stale = check_tables(Tables(fsn, design[0].lft, "stale"), ebb_samples=0)
    assert not stale["reachable"]


def test_a_repair_that_does_nothing_is_caught_and_widened(monkeypatch):
    """The checks catch a repair that leaves traffic on the failed cable; the repair is then
    widened (routed afresh keeping its choices) and says so.  If the widening fails too, whatif
    fails: nothing it reports as ok is unchecked."""
    import loom.routing.repair as repair

    monkeypatch.setattr(FatTreeEngine, "repair", lambda self, sn, t: Tables(sn, t.lft.copy(), "noop"))
    code, rep = whatif_json(str(TOPO / "tiny.yaml"), "--fail", "z0-leaf0/5")
    plane = rep["planes"][0]
    assert code == 0 and rep["ok"] and plane["routing"] == "widened (the minimal repair fails reachability)", rep
    assert not plane["minimal"] and plane["extra_destinations"] > 0
    monkeypatch.setattr(repair, "settled", lambda sn, hint, engine="auto": hint)  # planted: widening changes nothing
    code, rep = whatif_json(str(TOPO / "tiny.yaml"), "--fail", "z0-leaf0/5")
    assert code == 1 and not rep["ok"] and not rep["planes"][0]["reachable"]


def test_random_trials_are_reproducible_and_summarised():
    args = (str(TOPO / "tiny.yaml"), "--random", "2", "--trials", "6", "--seed", "3")
    code, rep = whatif_json(*args)
    assert code == 0, rep
    assert rep["trials"] == 6 and rep["failed_trials"] == 0
    assert rep["min_leaf_kept"]["worst"] <= rep["min_leaf_kept"]["median"] <= 1
    assert rep["repair_entries"]["median"] <= rep["recompute_entries"]["median"]
    assert whatif_json(*args) == (code, rep)


def test_random_draws_are_switch_to_switch_cables():
    f = load_fabric(TOPO / "tiny.yaml")
    fs = random_failures(f, 3, np.random.default_rng(1))
    assert len(fs.cables) == 3 and all("(" in n and "hca" not in n for n in fs.names)


@pytest.mark.parametrize("spec, words", [
    ("z9-leaf0/3", "no switch or NIC named `z9-leaf0`"),
    ("z0-leaf0/99", "`z0-leaf0:99` has no cable; cabled ports of z0-leaf0: 1, 2, 3, 4, 5, 6, 7, 8"),
    ("z0-leaf0/x", "the port must be a number"),
])
def test_bad_failure_names_are_refused(spec, words):
    f = load_fabric(TOPO / "tiny.yaml")
    with pytest.raises(FailureSpecError, match=words.replace("(", r"\(")):
        parse_failures(f, [spec])
    res = runner.invoke(app, ["whatif", str(TOPO / "tiny.yaml"), "--fail", spec])
    assert res.exit_code == 2 and words in res.stderr


def test_whatif_needs_exactly_one_kind_of_failure():
    res = runner.invoke(app, ["whatif", str(TOPO / "tiny.yaml")])
    assert res.exit_code == 2 and "--fail" in res.stderr


def test_the_far_end_names_the_same_cable():
    f = load_fabric(TOPO / "tiny.yaml")
    assert parse_failures(f, ["z0-leaf0/5"]).cables == parse_failures(f, ["z0-spine0:1"]).cables


@pytest.mark.sim
def test_opensm_recompute_of_the_same_failure_is_measured_beside():
    code, rep = whatif_json(str(TOPO / "tiny.yaml"), "--fail", "z0-leaf0/5", "--vs-opensm", "updn")
    assert code == 0, rep
    up = rep["opensm"]["updn"]
    assert up["engine_used"] == "updn" and up["entries"] > 0 and up["seconds"] > 0
    assert rep["planes"][0]["repair"]["entries"] < up["entries"]


@pytest.mark.sim
def test_random_draws_are_measured_against_opensm_too():
    """Issue 33: `--random K --vs-opensm E` ran the draws and silently left OpenSM out."""
    code, rep = whatif_json(str(TOPO / "tiny.yaml"), "--random", "1", "--trials", "2", "--vs-opensm", "ftree")
    assert code == 0, rep
    ft = rep["opensm"]["ftree"]
    assert ft["entries"]["worst"] >= ft["entries"]["median"] > rep["repair_entries"]["worst"]
    assert ft["destinations"]["worst"] > 0


def test_the_text_report_counts_leaves_in_words():
    """One cable down costs one leaf; a spine down costs every leaf under it ("leaves", not "leafves")."""
    one = runner.invoke(app, ["whatif", str(TOPO / "tiny.yaml"), "--fail", "z0-leaf0/5"])
    assert "1 leaf loses some" in one.output
    many = runner.invoke(app, ["whatif", str(TOPO / "fire-flyer-2.yaml"), "--fail", "z0-spine0"])
    assert " leaves lose some" in many.output and "leafves" not in many.output
