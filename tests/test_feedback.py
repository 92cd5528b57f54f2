"""Feedback while the user waits (issue 37): a command's phase times add up to its wall time,
start-up included (`make test`'s own feedback: tests/test_live_report.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOM = Path(sys.executable).parent / "loom"


def _total(stderr: str) -> tuple[float, dict[str, float]]:
    m = re.search(r"total: ([\d.]+)s wall = (.*)", stderr)
    assert m, stderr
    parts = {name: float(s) for name, s in re.findall(r"(?:^| \+ )([a-z ,-]+?) ([\d.]+)s", m.group(2))}
    return float(m.group(1)), parts


def test_check_says_where_its_wall_time_went():
    t0 = time.perf_counter()
    r = subprocess.run([str(LOOM), "check", "topology/tiny.yaml"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    outside = time.perf_counter() - t0
    assert r.returncode == 0, r.stderr
    wall, parts = _total(r.stderr)
    assert {"start-up", "imports", "load", "route", "checks", "other"} <= set(parts), parts
    assert abs(sum(parts.values()) - wall) <= 0.01 * len(parts), (wall, parts)  # rounding only
    assert parts["start-up"] > 0  # the interpreter's and the imports' share, seen from /proc
    assert wall <= outside and wall >= 0.5 * outside, (wall, outside)  # the process's life, less its exit


def test_quick_commands_say_no_total():
    r = subprocess.run([str(LOOM), "validate", "topology/tiny.yaml"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "total:" not in r.stderr, r.stderr
