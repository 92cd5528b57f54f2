"""A pytest plugin for `make test*` (tests/suite.py loads it with `-p`): a failure is named the
moment it happens — the test, its time and the line that failed — and each test file's outcome
and time, with the time since the start, as the file ends.  `pytest -q` alone prints a dot per
test and names failures only after the last one, which in a 27-minute run is 27 minutes later
(issue 37: `make test-fast` cut short after 30 minutes named no failure)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest


class LiveReport:
    """Works from the reports alone, so the same lines come from a plain run and from pytest-xdist's
    controller (`-n 2 --dist loadfile`: a file's tests run together on one worker, while the
    controller, which prints, sees only reports).  A file ends when each of its collected tests
    has reported its teardown."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.t0 = time.monotonic()
        self.left: Counter[str] = Counter()  # file → its tests not yet torn down
        self.started: dict[str, float] = {}  # file → when its first test's setup began (epoch)
        self.outcome: dict[str, dict[str, str]] = {}  # file → test → passed | failed | skipped
        self.took: dict[str, int] = {}  # file → seconds, for tests/durations.json

    def _say(self, line: str) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            if tr._tw.width_of_current_line:  # after -q's dots: a line of its own
                tr._tw.line()
            tr.write_line(f"[make test] {line}")

    def _since(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}:{s % 60:02d}"

    def _collected(self, nodeids) -> None:
        if not self.left:  # each xdist worker collects the same tests: count them once
            self.left.update(n.split("::")[0] for n in nodeids)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids) -> None:
        self._collected(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::")[0]
        self.started.setdefault(path, getattr(report, "start", time.time()))  # its setup's start
        outcome = self.outcome.setdefault(path, {})
        if report.skipped:
            outcome.setdefault(report.nodeid, "skipped")
        elif report.passed and report.when == "call":
            outcome.setdefault(report.nodeid, "passed")
        if report.failed:
            outcome[report.nodeid] = "failed"  # also a teardown failing after the test passed
            crash = getattr(report.longrepr, "reprcrash", None)
            why = crash.message.splitlines()[0] if crash is not None and crash.message else str(report.longrepr)[-300:]
            where = f" ({report.when})" if report.when != "call" else ""
            self._say(f"FAILED {report.nodeid}{where} after {report.duration:.1f} s: {why}")
        if report.when == "teardown":
            self.left[path] -= 1
            if self.left[path] == 0:
                took = time.time() - self.started.pop(path)
                self.took[path] = round(took)
                shown = ", ".join(f"{n} {k}" for k, n in sorted(Counter(self.outcome.pop(path).values()).items()))
                self._say(f"{path}: {shown} in {took:.0f} s ({self._since()} elapsed)")


    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """This run's file times, longest first, beside the suite's logs (the order the next runs
        take is tests/durations.json: copy this file there to refresh it)."""
        if self.took and not hasattr(self.config, "workerinput"):
            out = Path(self.config.rootpath) / ".loom" / "suite" / "durations.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(dict(sorted(self.took.items(), key=lambda kv: -kv[1])), indent=1) + "\n")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LiveReport(config), "loom-live-report")
