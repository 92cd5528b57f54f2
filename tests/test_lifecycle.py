"""The test servers' lifecycle (tests/lifecycle.py): stopped when the process is told to stop."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SERVER = """
import sys, time
from pathlib import Path
from tests.lifecycle import Started

class Marker(Started):
    def start(self):
        Path(sys.argv[1]).write_text("running")
    def stop(self):
        Path(sys.argv[1]).write_text("stopped")

with Marker():
    print("up", flush=True)
    time.sleep(60)
"""


def test_sigterm_stops_what_was_started(tmp_path):
    """A `kill` (SIGTERM) of a bench or test run stops its servers: the default would end the
    process without running `stop` (a killed `make bench` left NetBox running)."""
    marker = tmp_path / "marker"
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(marker)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "up"
        assert marker.read_text() == "running"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 128 + signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
    assert marker.read_text() == "stopped"
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # this process's own handler is left alone
