"""The benches' figures: a miss is marked, runs are saved as JSON and compared (issue 24)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.figures import Figures, join

ROOT = Path(__file__).parent.parent


def test_targets_are_judged_both_ways_and_saved(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_BENCH_OUT", str(tmp_path / "run"))
    r = Figures("demo")
    slow = r.add("plan", 11.3, "s", target=5)
    fast = r.add("ratio", 25, "×", target=20, better="higher")
    low = r.add("ratio 2", 12, "×", target=20, better="higher")
    free = r.add("entries", 145, "entries")
    assert (slow.met, fast.met, low.met, free.met) == (False, True, False, None)
    assert [f.name for f in r.missed()] == ["plan", "ratio 2"] and slow.target_text() == "≤ 5 s"
    doc = json.loads(r.save().read_text())
    assert doc["bench"] == "demo" and [f["value"] for f in doc["figures"]] == [11.3, 25, 12, 145]
    assert json.loads(join(tmp_path / "run").read_text())["benches"][0]["bench"] == "demo"


def test_compare_marks_a_regression_and_exits_1(tmp_path, monkeypatch):
    for run, value in (("old", 4.0), ("new", 11.3)):
        monkeypatch.setenv("LOOM_BENCH_OUT", str(tmp_path / run))
        r = Figures("demo")
        r.add("no-change plan", value, "s", target=5)
        r.save()
        join(tmp_path / run)
    res = subprocess.run([sys.executable, str(ROOT / "bench/compare.py"), str(tmp_path / "old.json"), str(tmp_path / "new.json")],
                         capture_output=True, text=True)
    assert res.returncode == 1 and "MISS (was met)" in res.stdout and "% (worse)" in res.stdout, res.stdout + res.stderr
    same = subprocess.run([sys.executable, str(ROOT / "bench/compare.py"), str(tmp_path / "old.json"), str(tmp_path / "old.json")],
                          capture_output=True, text=True)
    assert same.returncode == 0
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    res = subprocess.run([sys.executable, str(ROOT / "bench/compare.py"), str(bad), str(tmp_path / "old.json")],
                         capture_output=True, text=True)
    assert res.returncode == 1 and "holds no figures" in res.stderr and "Traceback" not in res.stderr
