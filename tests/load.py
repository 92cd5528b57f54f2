"""A busy machine on demand: CPU and disk hogs beside a test, and deadlines that stretch with
the load.  `make test-under-load` runs the slow tests with `python -m tests.load` hogs beside
them; a test that races on purpose (ten `sim up`s at once) starts its own with `hogs()`."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

CPU_HOG = "while True: pass"
# writes and syncs 8 MB again and again: the page cache and the journal stay busy
DISK_HOG = ("import os, sys\n"
            "path = sys.argv[1]\n"
            "block = os.urandom(1 << 20)\n"
            "while True:\n"
            "    with open(path, 'wb') as fh:\n"
            "        for _ in range(8):\n"
            "            fh.write(block)\n"
            "        fh.flush(); os.fsync(fh.fileno())\n")


def slack() -> float:
    """How much longer than on an idle machine things take now, at least 1 (a deadline of
    `n * slack()` seconds holds on a busy machine as on a quiet one): the load per core, or —
    when a burst is newer than the one-minute load average — the share of the last ten seconds
    that runnable tasks waited for a CPU (Linux's pressure stall information)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1), 1 / (1 - min(0.9, _cpu_waiting())))


def _cpu_waiting() -> float:
    """`some avg10` of /proc/pressure/cpu as a fraction; 0 where the kernel does not say."""
    try:
        first = Path("/proc/pressure/cpu").read_text().split("\n", 1)[0]
        return float(dict(f.split("=") for f in first.split()[1:])["avg10"]) / 100
    except (OSError, ValueError, KeyError):
        return 0.0


def wait_for(what: str, condition: Callable[[], object], seconds: float = 60, step: float = 0.05):
    """Poll `condition` until it returns something true; fail naming `what` after `seconds`
    scaled by the machine's load.  Returns what the condition returned."""
    deadline = time.monotonic() + seconds * slack()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds * slack():.0f}s for {what}")
        time.sleep(step)


def wait_line(proc: subprocess.Popen, text: str, seconds: float) -> str:
    """Read `proc`'s output until it holds `text` (scaled deadline); return what was read.
    Fails naming the text and what came instead, also when the process ends first."""
    deadline = time.monotonic() + seconds * slack()
    seen = ""
    while text not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"waited {seconds * slack():.0f}s for {text!r}; the output was:\n{seen}")
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:  # the raw descriptor: a buffered readline could hide lines from select
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"the process ended (exit {proc.wait()}) before {text!r}:\n{seen}")
            seen += chunk.decode(errors="replace")
    return seen


@contextlib.contextmanager
def hogs(cpu: int = 2, disk: bool = True, directory: Path | None = None) -> Iterator[list[subprocess.Popen]]:
    """`cpu` busy loops and (if `disk`) a writer that syncs 8 MB over and over, stopped on exit
    however the body ends."""
    procs: list[subprocess.Popen] = []
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        try:
            procs += [subprocess.Popen([sys.executable, "-c", CPU_HOG]) for _ in range(cpu)]
            if disk:
                procs.append(subprocess.Popen([sys.executable, "-c", DISK_HOG, str(Path(tmp) / "hog")]))
            yield procs
        finally:
            for p in procs:
                p.kill()
            for p in procs:
                p.wait()


def main() -> None:
    """`python -m tests.load`: two CPU hogs and a disk hog until SIGTERM or SIGINT (what
    `make test-under-load` runs beside pytest)."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with hogs():
        try:
            while not stop:
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
