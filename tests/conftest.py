"""Fixtures shared by the simulated-fabric tests."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from loom.fabrics.infiniband.daemon import Daemons
from loom.fabrics.infiniband.sim import tools_missing

from .simfabric import TINY, loom, procs_using

#: Expanded fabrics are cached (loom.expand.cache) in a directory of this run's own: no test reads
#: another run's entries or the user's ~/.cache, and the suite leaves none behind.
_CACHE = os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="loom-test-cache-")


def pytest_unconfigure(config):
    shutil.rmtree(_CACHE, ignore_errors=True)


#: Each test file's seconds in a whole run, longest first.  `make test`'s live report writes this
#: run's figures to .loom/suite/durations.json; copy that here to refresh the order.
DURATIONS = Path(__file__).with_name("durations.json")


def pytest_collection_modifyitems(config, items):
    """On pytest-xdist's workers (`tests/suite.py`: a file at a time, in collection order), the
    longest files first: the last file to start is then a short one, and neither worker idles
    while the other finishes a long file.  A file not in the record counts as short."""
    if hasattr(config, "workerinput") and DURATIONS.exists():
        took = json.loads(DURATIONS.read_text())
        items.sort(key=lambda item: -took.get(item.nodeid.split("::")[0], 0))


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
