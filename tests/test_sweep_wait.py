"""Waiting for OpenSM's sweep reads only the log written since the wait began (a push waits
there seconds while OpenSM and ibsim need both cores): a sweep is counted once, also when its
line reaches the log in two pieces."""

from __future__ import annotations

import threading
import time

from loom.fabrics.infiniband.daemon import Daemons


def _appending(d: Daemons, *pieces: bytes) -> threading.Thread:
    def write() -> None:
        for piece in pieces:
            time.sleep(0.05)
            with open(d.log, "ab") as f:
                f.write(piece)
    t = threading.Thread(target=write)
    t.start()
    return t


def test_a_sweep_whose_mark_is_written_in_two_pieces_is_counted_once(tmp_path, monkeypatch):
    monkeypatch.setattr(Daemons, "health", lambda self: None)  # no daemons here: only the log
    d = Daemons(tmp_path)
    d.osm.mkdir(parents=True)
    d.log.write_bytes(b"sweep 1: SUBNET UP\nsweep 2: SUBN")  # the second mark cut where the wait begins
    writer = _appending(d, b"ET UP\n")
    assert d.await_sweeps(1, timeout=5)  # 1 finished before, the cut one makes 2
    writer.join()
    assert not d.await_sweeps(2, timeout=0.2)  # and it is not counted twice
    writer = _appending(d, b"sweep 3: SUBNET UP\n")
    assert d.await_sweeps(2, timeout=5)
    writer.join()


def test_a_log_started_anew_is_counted_from_its_start(tmp_path, monkeypatch):
    monkeypatch.setattr(Daemons, "health", lambda self: None)
    d = Daemons(tmp_path)
    d.osm.mkdir(parents=True)
    d.log.write_bytes(b"old log: SUBNET UP\n" * 50)

    def new_log() -> None:
        time.sleep(0.05)
        d.log.write_bytes(b"new: SUBNET UP\n")  # shorter than where the wait began
    t = threading.Thread(target=new_log)
    t.start()
    assert not d.await_sweeps(50, timeout=0.3)  # one sweep in the new log: not 51
    t.join()
    assert d.await_sweeps(0, timeout=1)
