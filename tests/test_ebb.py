"""eBB's adaptive sampling: a large fabric stops once its 95 % interval is tight, and the
interval it reports holds the figure every bisection would give; a small one uses them all."""

from __future__ import annotations

from pathlib import Path

import pytest

from loom import pipeline
from loom.checks import Walk, check_tables
from loom.checks import ebb as E

ROOT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def large():
    return pipeline.route(pipeline.load(ROOT / "bench/models/ft3-large.yaml"))[0]


def test_large_fabric_stops_early_and_its_interval_holds_the_full_figure(large, monkeypatch):
    (early,) = E.zone_estimates(Walk(large), 200).values()
    assert E.MIN_SAMPLES <= early.bisections < 200 and early.ci95 <= E.CI_HALF_WIDTH
    monkeypatch.setattr(E, "CI_HALF_WIDTH", 0.0)  # never tight: every bisection drawn
    (full,) = E.zone_estimates(Walk(large), 200).values()
    assert full.bisections == 200 and full.ci95 < early.ci95
    assert abs(full.value - early.value) <= early.ci95


def test_check_reports_the_interval_and_the_bisections(large):
    r = check_tables(large, 200)
    assert r["ebb_bisections"] < r["ebb_samples"] == 200 and 0 < r["ebb_ci95"] <= E.CI_HALF_WIDTH


def test_small_fabric_draws_every_bisection():
    t = pipeline.route(pipeline.load(ROOT / "topology/tiny.yaml"))[0]
    r = check_tables(t, 200)
    assert r["ebb_bisections"] == 2 * 200 and r["ebb_ci95"] > E.CI_HALF_WIDTH  # two zones, never tight
