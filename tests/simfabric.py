"""Shared by the tests that run the simulated fabric: the CLI as a function and a scan for the
processes of a state directory (the `tiny_up` fixture is in conftest.py)."""

from __future__ import annotations

import time
from pathlib import Path

from typer.testing import CliRunner

from loom.cli import app
from loom.fabrics.infiniband.daemon import alive

TOPO = Path(__file__).parent.parent / "topology"
TINY = str(TOPO / "tiny.yaml")
runner = CliRunner()


def loom(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args))
    assert "Traceback" not in r.output, r.output
    return r.exit_code, r.output


def procs_using(directory: Path) -> list[int]:
    """Processes whose command line names the state directory (ibsim's net file, OpenSM's files)."""
    found = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if str(directory).encode() in (p / "cmdline").read_bytes() and alive(int(p.name)):
                    found.append(int(p.name))
            except OSError:
                pass
    return found


def between_readings(monkeypatch, plant) -> list:
    """Call `plant` once, when the first of `loom health`'s two readings is done: errors planted
    on a timer raced a first reading slowed by a busy machine, and then both readings saw them.
    Returns the list each plant appends to (assert it is not empty: the plant happened).  Called
    again, it replaces the earlier plant rather than adding to it."""
    from loom.fabrics.infiniband import health

    first_read = getattr(health.Monitor.read, "__wrapped__", health.Monitor.read)
    planted = []

    def read_then_plant(monitor):
        first_read(monitor)
        if len(monitor.history.points) == 1:
            plant()
            planted.append(True)

    read_then_plant.__wrapped__ = first_read
    monkeypatch.setattr(health.Monitor, "read", read_then_plant)
    return planted


def opensm_dies_in_first_sweep_wait(monkeypatch, d) -> list:
    """Kill OpenSM once, when the apply first waits for its sweep (the sweep that loads the new
    inputs).  An OpenSM the apply has just restarted is killed only once it is attached to ibsim
    (`Entering MASTER state` in what the log got since this call): killed while ibsim connects
    back to it, ibsim panics and the whole simulated fabric goes, which is another fault.
    Returns the list the kill appends to."""
    from loom.fabrics.infiniband.daemon import Daemons

    real_wait, killed = Daemons.wait_sweep, []
    first_pid, offset = d.pid("opensm"), d.log.stat().st_size

    def crash_once(self, before, timeout):
        if not killed:
            deadline = time.monotonic() + 30
            while (self.pid("opensm") != first_pid and b"Entering MASTER state" not in self.log.read_bytes()[offset:]
                   and time.monotonic() < deadline):
                time.sleep(0.01)
            self.kill("opensm")
            killed.append(True)
        return real_wait(self, before, timeout)

    monkeypatch.setattr(Daemons, "wait_sweep", crash_once)
    return killed
