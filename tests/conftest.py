"""Fixtures shared by the simulated-fabric tests."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from loom.fabrics.infiniband.daemon import Daemons
from loom.fabrics.infiniband.sim import tools_missing

from .simfabric import TINY, loom, procs_using

#: Expanded fabrics are cached (loom.expand.cache) in a directory of this run's own: no test reads
#: another run's entries or the user's ~/.cache, and the suite leaves none behind.
_CACHE = os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="loom-test-cache-")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


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
