"""Fixtures shared by the simulated-fabric tests."""

from __future__ import annotations

import pytest

from loom.fabrics.infiniband.daemon import Daemons
from loom.fabrics.infiniband.sim import tools_missing

from .simfabric import TINY, loom, procs_using

_TERMINAL = {}


@pytest.hookimpl(trylast=True)  # after pytest's terminal plugin has registered its reporter
def pytest_configure(config):
    _TERMINAL["reporter"] = config.pluginmanager.get_plugin("terminalreporter")


def pytest_runtest_logreport(report):
    """Name a failure the moment it happens: with -q pytest prints an F and names it only at the
    end, which a run cut short after 20 minutes never reaches."""
    tr = _TERMINAL.get("reporter")
    if report.failed and tr is not None:
        tr.write("\n")  # the -q line of dots is not ended by ensure_newline
        tr.write_line(f"FAILED {report.nodeid} ({report.when}, after {report.duration:.1f} s)", red=True)


@pytest.fixture
def tiny_up(tmp_path, monkeypatch):
    """The tiny fabric up under a private state directory (own ibsim socket), then down."""
    if tools_missing():
        pytest.fail(f"simulator tools missing: {tools_missing()} — run `make setup`")
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    code, out = loom("sim", "up", TINY)
    assert code == 0, out
    d = Daemons.of("tiny")
    yield d
    loom("sim", "down", "--force", TINY)
    assert procs_using(d.dir) == []
