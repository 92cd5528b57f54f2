"""`loom ranks`: HDRM on the EFLOPS BiGraph is congestion-free in every halving-doubling step
(the paper's claim, measured on the routed tables); leaf-contiguous orders on fat trees."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from loom.checks.congestion import collective_load
from loom.cli import app
from loom.expand import load_fabric
from loom.render.ranks import endpoints, hdrm_base, rank_order, steps
from loom.routing import route

TOPO = Path(__file__).parent.parent / "topology"
runner = CliRunner()


@pytest.fixture(scope="module")
def bg():
    f = load_fabric(TOPO / "eflops-bigraph.yaml")
    t = route(f)[0]
    return t, endpoints(f, t.subnet, [n.name for n in f.nodes])


def _loads(t, eps, order, collective):
    return [s["max_flows_per_link"] for s in collective_load(t, np.array([eps[i].lid for i in order]), steps(collective, len(order)))]


def test_hdrm_base_is_the_papers(bg):
    assert hdrm_base(4) == ([0, 3, 5, 6], [1, 2, 4, 7])


def test_hdrm_is_congestion_free_and_naive_is_not(bg):
    t, eps = bg
    order, method = rank_order(t.subnet, eps, "halving-doubling")
    assert method == "HDRM" and sorted(order) == list(range(64))
    assert _loads(t, eps, order, "halving-doubling") == [1] * 6
    assert max(_loads(t, eps, list(range(64)), "halving-doubling")) > 1


def test_a_planted_swap_in_the_mapping_shows_congestion(bg):
    t, eps = bg
    order, _ = rank_order(t.subnet, eps, "halving-doubling")
    bad = list(order)
    bad[1], bad[2] = bad[2], bad[1]  # rank 1 moves to rank 2's switch (same part as rank 0)
    assert max(_loads(t, eps, bad, "halving-doubling")) > 1


def test_leaf_contiguous_ring_on_a_fat_tree_uses_fewer_links():
    r = runner.invoke(app, ["ranks", str(TOPO / "fire-flyer-2.yaml"), "--job", "z0-c[000-059]", "--collective", "ring", "--json"])
    assert r.exit_code == 0, r.output
    s = json.loads(r.output)["steps"][0]
    assert s["mapped"]["switch_hops"] < s["naive"]["switch_hops"] and s["mapped"]["max_flows_per_link"] == 1


def test_cli_writes_rank_files(tmp_path):
    r = runner.invoke(app, ["ranks", str(TOPO / "eflops-bigraph.yaml"), "--job", "srv[00-15]", "--collective",
                            "halving-doubling", "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    hosts = (tmp_path / "hostfile").read_text().split()
    assert len(hosts) == 64 and set(hosts) == {f"srv{i:02d}" for i in range(16)}
    assert (tmp_path / "rankfile").read_text().startswith("rank 0=")
    assert json.loads((tmp_path / "ranks.json").read_text())["method"] == "HDRM"


@pytest.mark.parametrize("args, message", [
    (["--job", "z0-c[000-059]", "--collective", "halving-doubling"], "power-of-two number of ranks"),
    (["--job", "nope[1-2]"], "does not have: nope1, nope2"),
    (["--job", "z0-c[1-"], "hostlist"),
    (["--job", "all", "--collective", "allreduce"], "--collective must be one of"),
])
def test_bad_requests_are_refused_cleanly(args, message):
    r = runner.invoke(app, ["ranks", str(TOPO / "fire-flyer-2.yaml"), *args])
    assert r.exit_code == 1 and message in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("job, words", [
    ("z0-c[0-" + "9" * 5000 + "]", "numbers of at most 18 digits"),
    ("a" * 100_000 + "[0-999998]", "64 MB of names"),
])
def test_a_hostile_job_is_refused_fast_and_quoted_short(job, words):
    """Issue 35: a 5,000-digit range was a ValueError traceback (int digit limit); a 100 kB prefix
    over a large range took 3 GB.  Both are refused before any name is made, the job quoted in
    60 characters."""
    r = CliRunner().invoke(app, ["ranks", str(TOPO / "tiny.yaml"), "--job", job])
    assert r.exit_code == 1 and words in r.output and "Traceback" not in r.output and len(r.output) < 600, r.output
