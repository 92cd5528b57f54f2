"""The test suite as `make test` runs it: what it will do and how long it takes, said up front;
the cold machine's two long builds (NetBox's migrated database, OpenTofu) started beside the
first tests instead of before them; each phase's time printed as it ends.

    python -m tests.suite [--prebuild] [--under-load] [PYTEST ARGS...]

`--prebuild` starts `python -m tests.netboxlab build` and `make tf-tools` in the background at
nice 10; the tests that need them wait on the builders' own file locks, so a test never sees half
a cache.  Migrating NetBox is pure Python (Django renders its model states once per migration:
90% of the time in a profile), one core for ~8 min; the database under it is already tuned for
throw-away data (tests/pglab.py), so overlap is what shortens a cold run, not PostgreSQL settings.
`--under-load` runs two CPU hogs and a disk hog (tests/load.py) beside pytest.

The tests run on two pytest-xdist workers, a test file at a time on one of them (`--dist
loadfile`: a file's module fixtures, such as a simulated fabric, are set up once).  Half of the
suite's time is waiting on servers (OpenSM's sweeps, NetBox, FRR, sshd, ansible), so on two cores
two workers take ~30 minutes where one took ~42.  Every test owns its servers (free ports, its own
state directory, ibsim socket and namespaces), which is what makes two at once safe.
LOOM_TEST_WORKERS=1 runs one file after another in one process, as before.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / ".loom" / "suite"


def say(text: str) -> None:
    print(f"[make test] {text}", file=sys.stderr, flush=True)


@dataclass
class Background:
    """A builder running beside the tests, its output in a log file."""

    name: str
    cmd: list[str]
    t0: float = field(default_factory=time.time)
    proc: subprocess.Popen | None = None

    @property
    def log(self) -> Path:
        return LOGS / f"{self.name.replace(' ', '-')}.log"

    def start(self) -> "Background":
        LOGS.mkdir(parents=True, exist_ok=True)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(["nice", "-n", "10", *self.cmd], cwd=ROOT, stdout=out, start_new_session=True,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return self

    def finish(self) -> bool:
        rc = self.proc.wait()
        took = max(0.0, self.log.stat().st_mtime - self.t0)  # its last words: when it was done, not the tests
        if rc == 0:
            say(f"{self.name}: ready after {took:.0f} s, beside the tests")
            return True
        tail = self.log.read_text(errors="replace")[-2000:]
        say(f"{self.name}: FAILED (exit {rc} after {took:.0f} s); its log is {self.log}:\n{tail}")
        return False

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:  # its whole session: make's go build, netbox's migrate
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait()


def _cold() -> list[str]:
    """What a cold machine still has to build, for the up-front message."""
    from tests.netboxlab import CACHE

    missing = []
    if not (CACHE / "migrated.dump").exists():
        missing.append("NetBox's migrated database (~10 min of one core)")
    tofu = sorted(CACHE.parent.glob("tofu-*/tofu"))
    if not tofu:
        missing.append("OpenTofu (~6 min)")
    return missing


def main(argv: list[str]) -> int:
    prebuild = "--prebuild" in argv
    under_load = "--under-load" in argv
    pytest_args = [a for a in argv if a not in ("--prebuild", "--under-load")]
    t0 = time.monotonic()
    marks = " ".join(pytest_args)
    workers = os.environ.get("LOOM_TEST_WORKERS", "2")
    # in collection order (tests/conftest.py puts the longest files first), not by number of tests
    parallel = ["-n", workers, "--dist", "loadfile", "--no-loadscope-reorder"] if workers != "1" else []
    say("the tests not marked slow: ~8 min on an idle 2-core machine" if "not slow" in marks else
        "the slow tests: ~22 min on an idle 2-core machine once warm" if "slow" in marks else
        "the whole suite, slow tests included: ~30 min on an idle 2-core machine once warm (~42 min on one worker)")
    say(f"{workers} pytest workers (LOOM_TEST_WORKERS), a test file at a time on each")
    builders: list[Background] = []
    if prebuild and (cold := _cold()):
        say("cold machine: building " + " and ".join(cold) + " beside the first tests; the tests that "
            f"need them wait for them (logs in {LOGS.relative_to(ROOT)}/)")
        builders = [Background("netbox cache", [sys.executable, "-m", "tests.netboxlab", "build"]).start(),
                    Background("opentofu", ["make", "-s", "tf-tools"]).start()]
    hog = None
    if under_load:
        say("under load: two CPU hogs and a disk hog run beside the tests")
        hog = subprocess.Popen([sys.executable, "-m", "tests.load"], cwd=ROOT)
    try:
        t1 = time.monotonic()
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "tests.live_report", "--durations=15",
                              *parallel, *pytest_args], cwd=ROOT)
        say(f"pytest: exit {rc} after {time.monotonic() - t1:.0f} s")
        ok = all([b.finish() for b in builders])
    finally:
        for b in builders:
            b.stop()
        if hog:
            hog.terminate()
            hog.wait()
    say(f"done in {time.monotonic() - t0:.0f} s")
    return rc or (0 if ok else 1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
