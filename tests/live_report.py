"""A pytest plugin for `make test*` (tests/suite.py loads it with `-p`): a failure is named the
moment it happens — the test, its time and the line that failed — and each test file's outcome
and time, with the time since the start, as the file ends.  `pytest -q` alone prints a dot per
test and names failures only after the last one, which in a 27-minute run is 27 minutes later
(issue 37: `make test-fast` cut short after 30 minutes named no failure)."""

from __future__ import annotations

import time
from collections import Counter

import pytest


class LiveReport:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.t0 = time.monotonic()
        self.file_t0: float | None = None
        self.outcome: dict[str, str] = {}  # test → passed | failed | skipped, in the file running now

    def _say(self, line: str) -> None:
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            if tr._tw.width_of_current_line:  # after -q's dots: a line of its own
                tr._tw.line()
            tr.write_line(f"[make test] {line}")

    def _since(self) -> str:
        s = int(time.monotonic() - self.t0)
        return f"{s // 60}:{s % 60:02d}"

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None):
        if self.file_t0 is None:
            self.file_t0 = time.monotonic()
        yield
        if nextitem is None or nextitem.path != item.path:
            took = time.monotonic() - self.file_t0
            shown = ", ".join(f"{n} {k}" for k, n in sorted(Counter(self.outcome.values()).items()))
            self._say(f"{item.nodeid.split('::')[0]}: {shown} in {took:.0f} s ({self._since()} elapsed)")
            self.file_t0, self.outcome = None, {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped:
            self.outcome.setdefault(report.nodeid, "skipped")
        elif report.passed and report.when == "call":
            self.outcome.setdefault(report.nodeid, "passed")
        if report.failed:
            self.outcome[report.nodeid] = "failed"  # also a teardown failing after the test passed
            crash = getattr(report.longrepr, "reprcrash", None)
            why = crash.message.splitlines()[0] if crash is not None and crash.message else str(report.longrepr)[-300:]
            where = f" ({report.when})" if report.when != "call" else ""
            self._say(f"FAILED {report.nodeid}{where} after {report.duration:.1f} s: {why}")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LiveReport(config), "loom-live-report")
