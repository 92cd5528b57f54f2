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


def test_a_child_takes_what_the_parent_sends_after_the_fork(monkeypatch, tmp_path):
    """The parent's send() returns before the child asks (a value larger than a pipe holds): the
    child waits for a file the parent writes only after sending, so a send that waited for the
    child would stall both until the child gives up."""
    monkeypatch.setattr(forked, "FORK_CELLS", 0)
    sent = tmp_path / "sent"

    def child(receive):
        for _ in range(200):
            if sent.exists():
                return int(receive().sum())
            time.sleep(0.05)
        return "the parent's send waited for the child"

    job = Forked(child, 1, takes_input=True)
    assert job.pid
    job.send(np.ones(1_000_000, np.int64))  # 8 MB: a pipe holds 64 kB
    sent.touch()
    assert job.result() == 1_000_000


def test_inline_a_taker_runs_after_the_send():
    calls = []
    job = Forked(lambda receive: calls.append(receive()) or len(calls), forked.FORK_CELLS - 1, takes_input=True)
    assert calls == []  # nothing to take yet
    job.send("paths")
    assert job.result() == 1 and calls == ["paths"]


def test_a_taker_that_fails_first_does_not_break_the_send(monkeypatch):
    monkeypatch.setattr(forked, "FORK_CELLS", 0)

    def fails(receive):
        raise ValueError("no groups")

    job = Forked(fails, 1, takes_input=True)
    time.sleep(0.2)  # let it fail and exit: the send then meets a closed pipe
    job.send(np.ones(1_000_000))
    with pytest.raises(ValueError, match="no groups"):
        job.result()
