"""The fabric lock (loom.push.lock): a loser names the holder even when it loses the race to the holder's record."""

import fcntl
import os
import threading
import time

import pytest

from loom.push.lock import FabricLock, LockHeld


def test_a_loser_waits_for_the_holders_record(tmp_path):
    path = tmp_path / "fabric.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # taken, record not yet written (the window two `sim up`s raced in)

    def write_late():
        time.sleep(0.3)
        os.pwrite(fd, b'{"purpose": "sim up", "user": "ana", "pid": 7}', 0)

    t = threading.Thread(target=write_late)
    t.start()
    with pytest.raises(LockHeld) as err:
        FabricLock(tmp_path, "apply").acquire()
    t.join()
    os.close(fd)
    assert "another sim up is running: held by ana (pid 7" in str(err.value)


def test_a_holder_that_never_names_itself_is_still_reported(tmp_path):
    fd = os.open(tmp_path / "fabric.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(LockHeld) as err:
            FabricLock(tmp_path, "apply").acquire()
    finally:
        os.close(fd)
    assert str(err.value).startswith("another change is running")
