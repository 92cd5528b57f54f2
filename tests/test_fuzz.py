"""The fuzzer in the test suite: a few hundred cases by default, ~2,000 in the slow run (CI),
`make fuzz N=10000` for the full campaign; half the cases are models, half the other inputs
(plans, lock files, dumps, topologies, hostlists, inventories, a hostile NetBox: surfaces.py).
Any traceback, hang or memory blow-up fails, and the failing case is written out as a
reproducer (see tests/fuzz/campaign.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fuzz.campaign import run_campaign
from tests.fuzz.mutate import make_case
from tests.fuzz.surfaces import SURFACES, surface_case


# one worker per core: the cases share nothing, and a 2-core CI runs the 2,000 in half the time
WORKERS = max(1, min(2, len(os.sched_getaffinity(0))))


def _campaign(tmp_path, n: int, seed: int, start: int = 0) -> None:
    report = run_campaign(n, seed=seed, start=start, seconds=60, memory_mb=1536, out_dir=tmp_path / "reproducers",
                          workers=WORKERS)
    assert report.cases == n
    assert report.failed == 0, report.summary() + "".join(
        f"\n  case {f['index']}: {f['outcome']} -> {f['reproducer']}\n{f['detail'][-1500:]}" for f in report.failures)
    assert report.outcomes["ok"] > 0 and report.outcomes["refused"] > 0  # both kinds of case were reached
    assert set(report.by_input) == {"model", *SURFACES}, report.by_input  # every input was fuzzed


def test_cases_are_reproducible():
    assert make_case(5, 17).text == make_case(5, 17).text
    assert make_case(5, 17).text != make_case(5, 18).text
    assert surface_case(5, 17).files == surface_case(5, 17).files and surface_case(5, 17).args == surface_case(5, 17).args
    assert surface_case(5, 17).files != surface_case(5, 19).files


def test_fuzz_default_share(tmp_path):
    _campaign(tmp_path, 200, seed=11)


@pytest.mark.slow
def test_fuzz_ci_share(tmp_path):
    _campaign(tmp_path, 2000, seed=12, start=200)


def test_a_failure_is_caught_and_written_out(tmp_path, monkeypatch):
    """The fuzzer's own check: a planted crash, hang and memory blow-up in the pipeline are each
    reported as such, with a reproducer that holds the model and the traceback."""
    import tests.fuzz.campaign as campaign

    def planted(path):
        kind = ("crash", "hang", "memory")[int(path.stem.rsplit("-", 1)[1]) % 3]  # case-<seed>-<index>: two of each
        if kind == "crash":
            raise IndexError("planted")
        if kind == "hang":
            while True:
                pass
        return [bytearray(1 << 30) for _ in range(10)]  # ~10 GB; over the 512 MB limit at once, however busy the machine

    monkeypatch.setattr(campaign, "run_pipeline", planted)
    report = campaign.run_campaign(6, seed=1, seconds=2, memory_mb=512, out_dir=tmp_path, only=[0, 2, 4, 6, 8, 10], workers=2)
    assert report.outcomes["traceback"] + report.outcomes["hang"] + report.outcomes["memory"] == 6, report.summary()
    assert {"traceback", "hang", "memory"} <= set(report.outcomes)
    for f in report.failures:
        repro = tmp_path / f"case-1-{f['index']}.yaml"
        assert repro.read_text() == make_case(1, f["index"]).text
        assert f["outcome"] in repro.with_suffix(".txt").read_text()


@pytest.mark.parametrize("surface, reader", [("plan", "loom.push.planfile.read_plan"),
                                             ("inventory", "loom.fabrics.infiniband.inventory._group"),
                                             ("lfts-dump", "loom.inputs.read_lft_dump"),
                                             ("fabric-cache", "loom.expand.cache.get"),
                                             ("switch-output", "loom.fabrics.ethernet.answers._read"),
                                             ("state-records", "loom.push.links.links_down"),
                                             ("help-cache", "loom.cli.helpcache.load")])
def test_a_crash_in_a_reader_is_caught_with_its_files(tmp_path, monkeypatch, surface, reader):
    """A surface case reaches the reader it is for: a KeyError planted there is reported as a
    traceback, and the reproducer holds the case's files and the command that runs them."""
    import importlib

    module, name = reader.rsplit(".", 1)

    def planted(*args, **kwargs):
        raise KeyError("planted")

    # the cases are made before the plant: making a fabric-cache case expands tiny, which reads the cache
    indices = [i for i in range(1, 400, 2) if surface_case(1, i).surface == surface][:6]  # some are refused before it
    monkeypatch.setattr(importlib.import_module(module), name, planted)
    report = run_campaign(len(indices), seed=1, seconds=20, out_dir=tmp_path, only=indices)
    assert report.outcomes["traceback"] >= 1, report.summary()
    index = report.failures[0]["index"]
    repro = tmp_path / f"case-1-{index}"
    assert sorted(p.name for p in repro.rglob("*") if p.is_file()) == sorted(Path(r).name for r in surface_case(1, index).files)
    text = repro.with_suffix(".txt").read_text()
    assert f"surface: {surface}" in text and "planted" in text and "command: loom" in text
