"""Fixtures shared by the simulated-fabric tests."""

from __future__ import annotations

import pytest

from loom.fabrics.infiniband.daemon import Daemons
from loom.fabrics.infiniband.sim import tools_missing

from .simfabric import TINY, loom, procs_using


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
