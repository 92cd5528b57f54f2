"""The fabric lock (loom.push.lock): the holder's record is in place before the lock can be seen
as taken, a dead holder is taken over, and a lock file of an older Loom is still respected."""

import fcntl
import json
import os
import socket

import pytest

from loom.push.lock import FabricLock, LockHeld, is_free


def test_a_loser_reads_the_holders_whole_record_at_once(tmp_path):
    holder = FabricLock(tmp_path, "sim up").acquire()
    try:
        assert not is_free(tmp_path)
        with pytest.raises(LockHeld) as err:
            FabricLock(tmp_path, "apply").acquire()
        text = str(err.value)
        assert "another sim up is running: held by " in text and f"(pid {os.getpid()} on {socket.gethostname()}, running `" in text
        assert "?" not in text.split(";")[0], text
    finally:
        holder.release()
    assert is_free(tmp_path) and not (tmp_path / "fabric.lock").exists()
    with FabricLock(tmp_path, "apply") as again:
        assert again.took_over is None


def test_a_dead_holders_file_is_taken_over_and_reported(tmp_path):
    dead = {"pid": 2**22 + 7, "start": 1, "user": "gone", "host": socket.gethostname(), "purpose": "apply"}
    (tmp_path / "fabric.lock").write_text(json.dumps(dead))
    (tmp_path / f".fabric.lock.{socket.gethostname()}.{2**22 + 7}.1").write_text("{}")  # a taker killed before it linked
    assert is_free(tmp_path)
    with FabricLock(tmp_path, "sim up") as lock:
        assert lock.took_over == dead
        assert json.loads((tmp_path / "fabric.lock").read_text())["purpose"] == "sim up"
    assert list(tmp_path.iterdir()) == []


def test_an_older_looms_empty_locked_file_is_still_respected(tmp_path):
    fd = os.open(tmp_path / "fabric.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert not is_free(tmp_path)  # `sim status` says "held" too
        with pytest.raises(LockHeld) as err:
            FabricLock(tmp_path, "apply").acquire()
    finally:
        os.close(fd)
    assert str(err.value).startswith("another change is running")
    with FabricLock(tmp_path, "apply") as lock:  # its holder gone, the empty file is replaced
        assert lock.took_over is None


def test_an_interrupted_apply_of_another_technology_is_not_resolved_by_this_one(tmp_path):
    """Two models of one name share a state directory: an Ethernet apply's journal is never
    "restored" by the InfiniBand resolver (nor the other way round); the refusal says why."""
    from loom.push.engine import Resolver, recover
    from loom.push.errors import PlanError
    from loom.push.journal import Journal

    class Target:
        dir = tmp_path

        def clean_leftovers(self):
            pass

    Journal(tmp_path).begin({"kind": "frr", "fabric": "x"})
    called = []
    lft = Resolver(finish=lambda *a: called.append(a), restore=lambda *a: called.append(a) or (True, "restored"))
    with pytest.raises(PlanError, match="share the state directory"):
        recover(Target(), lft)
    assert called == [] and Journal(tmp_path).load() is not None
    frr = Resolver(finish=lft.finish, restore=lft.restore, kind="frr")
    assert "restored" in recover(Target(), frr) and len(called) == 1
