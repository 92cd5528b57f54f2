"""`make test*`'s live report (tests/live_report.py): a failure named as it happens, before the
tests after it run, and each file's outcome and time as it ends."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("workers", [[], ["-n", "2", "--dist", "loadfile"]], ids=["one process", "two xdist workers"])
def test_a_failure_is_named_before_the_next_test_runs(tmp_path, workers):
    (tmp_path / "test_a.py").write_text(
        "import time\n"
        "def test_ok():\n    pass\n"
        "def test_broken():\n    assert 1 + 1 == 3, 'planted'\n"
        "def test_slow_after():\n    print('AFTER')\n")
    (tmp_path / "test_b.py").write_text("import pytest\n@pytest.mark.skip\ndef test_skipped():\n    pass\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "tests.live_report", "-p", "no:cacheprovider",
                        *workers, "--rootdir", str(tmp_path), str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    out = r.stdout
    assert r.returncode == 1, out
    failed = out.index("[make test] FAILED test_a.py::test_broken after ")
    assert "planted" in out[failed:out.index("\n", failed)], out
    # named before the next test ran (a worker's prints are not shown: before its file's line, then)
    after = out.index("AFTER" if not workers else "[make test] test_a.py:")
    assert failed < after < out.index("short test summary")
    assert re.search(r"\[make test\] test_a.py: 1 failed, 2 passed in \d+ s \(\d+:\d\d elapsed\)", out), out
    assert re.search(r"\[make test\] test_b.py: 1 skipped in \d+ s", out), out
