"""stdout read by a pipe whose reader leaves early (`loom check M | head -1`): the command runs to
its end and exits with its own code, quietly (Click alone exits 1 at the first write, which a
script under `set -o pipefail` reads as a failed check)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TINY = ROOT / "topology" / "tiny.yaml"


def run_with_reader_gone(*args: str) -> subprocess.CompletedProcess:
    """Run loom with its stdout a pipe whose read end is closed before loom writes anything."""
    proc = subprocess.Popen([sys.executable, "-m", "loom.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    proc.stdout.close()
    stderr = proc.stderr.read()
    return subprocess.CompletedProcess(args, proc.wait(), "", stderr)


def test_a_command_that_succeeds_exits_0_when_its_reader_left():
    r = run_with_reader_gone("show", str(TINY))
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr and "Broken pipe" not in r.stderr


def test_a_failed_check_still_exits_1_when_its_reader_left(tmp_path):
    dump = tmp_path / "lfts.dump"
    subprocess.run([sys.executable, "-m", "loom.cli", "route", str(TINY), "--out", str(tmp_path)], check=True,
                   capture_output=True, cwd=ROOT)
    text = dump.read_text().splitlines()
    entry = next(i for i, line in enumerate(text) if line.startswith("0x"))
    text[entry] = text[entry][:7] + "255" + text[entry][10:]  # an entry to a port the switch does not have
    dump.write_text("\n".join(text) + "\n")
    args = ("check", str(TINY), "--lfts", str(dump), "--ebb-samples", "5")
    read = subprocess.run([sys.executable, "-m", "loom.cli", *args], capture_output=True, text=True, cwd=ROOT)
    assert read.returncode == 1 and "reachable:      NO" in read.stdout  # the check's verdict, read in full
    r = run_with_reader_gone(*args)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
