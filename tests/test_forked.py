"""The forked halves of routing and checking (loom.forked): the same tables and report as
inline, a child's failure raised in the parent, and no child left behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

import loom.forked as forked
from loom.checks import check_tables
from loom.expand import expand
from loom.forked import Forked
from loom.model import load_model
from loom.routing import route

from .faults import plant_credit_loop

TOPO = Path(__file__).parent.parent / "topology"


@pytest.fixture(scope="module")
def fabric():
    return expand(load_model(TOPO / "fire-flyer-2.yaml"))


def test_forked_route_and_check_equal_inline(monkeypatch, fabric):
    inline = route(fabric)[0]
    report = check_tables(plant_credit_loop(inline, "z1")[0], ebb_samples=5)
    monkeypatch.setattr(forked, "FORK_CELLS", 0)  # every pass forks
    children = []
    monkeypatch.setattr(forked.os, "fork", lambda real=os.fork: children.append(1) or real())
    split = route(fabric)[0]
    assert children, "nothing was forked"
    assert np.array_equal(split.lft, inline.lft)
    assert check_tables(plant_credit_loop(split, "z1")[0], ebb_samples=5) == report
    assert not report["deadlock_free"]  # the planted fault is seen through the fork too


def test_a_childs_exception_is_raised_in_the_parent(monkeypatch):
    monkeypatch.setattr(forked, "FORK_CELLS", 0)

    def fails():
        raise ValueError("bad table row 7")

    job = Forked(fails, 1)
    assert job.pid  # it did fork
    with pytest.raises(ValueError, match="bad table row 7"):
        job.result()


def test_a_failing_parent_leaves_no_child(monkeypatch):
    monkeypatch.setattr(forked, "FORK_CELLS", 0)
    job = Forked(lambda: time.sleep(60), 1)
    pid = job.pid
    job.close()  # what check_tables' finally does when its own half fails
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_small_passes_run_inline():
    job = Forked(lambda: 42, forked.FORK_CELLS - 1)
    assert job.pid == 0 and job.result() == 42
