"""Which cables of a simulated fabric are down: `links-down.json` in its state directory, kept
by `loom sim link down|up` whatever the technology (ibsim's console pulls an InfiniBand cable, a
veth pair an Ethernet one), read by `loom sim status` and the commands that plan around it;
which cables the watcher's tables route around (`watch.down.json`), while they are in force;
and whether a watcher runs now (`watch.pid`)."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from loom.expand import Fabric

from . import audit
from .procs import ProcessRef, program
from loom.files import write_atomic

LINKS_DOWN = "links-down.json"


def _names(path: Path) -> tuple[list[str], dict]:
    """The cable names of a record (`{"down": [name, ...], ...}`) and the record; a record that is
    missing, damaged or not of that shape (binary, cut short, nested a million deep, names that
    are not strings) reads as none: these files are loom's own notes to itself, never input."""
    try:
        record = json.loads(path.read_text())
        names = record["down"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError):
        return [], {}
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return [], {}
    return names, record


def links_down(directory: Path) -> list[str]:
    return _names(Path(directory) / LINKS_DOWN)[0]


def watcher_down(directory: Path) -> list[str]:
    """The cables the watcher's applied tables route around (`watch.down.json`), while those are
    the tables loom applied last (their digest is `last-applied.sha256`): after a plan of the
    model is applied, or when the watcher died before its apply finished, the record is stale —
    `loom status` would report a cable routed around that the tables in force do not avoid."""
    names, record = _names(Path(directory) / "watch.down.json")
    digest = record.get("tables_sha256")
    try:
        if digest is not None and digest != (Path(directory) / "last-applied.sha256").read_text().strip():
            return []
    except (OSError, ValueError):
        return []
    return names


WATCH_PID = "watch.pid"


@contextmanager
def watching(directory: Path):
    """Say that a watcher runs on this state directory while the block runs (`watch.pid`: pid,
    start time and program, so that a pid the kernel reuses is not taken for it).  The record
    of what it routes around outlives it on purpose (the next watcher starts from it); this tells
    `loom status` whether anyone still keeps that record current."""
    path = Path(directory) / WATCH_PID
    mine: str | None = ProcessRef.of(os.getpid(), program(os.getpid()) or "").line()
    try:
        write_atomic(path, mine)
    except OSError:  # a hint for `loom status` only: the watcher runs without it
        mine = None
    try:
        yield
    finally:
        try:
            if mine is not None and path.read_text() == mine:  # else a watcher started since owns it
                path.unlink()
        except OSError:
            pass


def watcher_running(directory: Path) -> bool:
    """Does the process `watch.pid` names still run (`watching`)?"""
    try:
        ref = ProcessRef.parse((Path(directory) / WATCH_PID).read_text(), "")
    except (OSError, ValueError):
        return False
    return ref is not None and ref.alive()


def record_links(directory: Path, fabric: Fabric, cables: list[int], up: bool,
                 flip: Callable[[list[int], bool], None]) -> list[str]:
    """Pull (up=False) or put back the cables; returns what changed, as cable IDs.  A cable
    already in the wanted state is left alone (the command is idempotent).  `flip(cables, up)`
    changes them in the simulation (ibsim's console; an Ethernet lab's `FrrLab.set_cables`);
    `links-down.json` records them either way."""
    down = links_down(directory)
    keys = [fabric.cable_id(i) for i in cables]
    todo = [(i, k) for i, k in zip(cables, keys) if (k in down) == up]
    if todo:
        flip([i for i, _ in todo], up)
    changed = [k for _, k in todo]
    now = sorted(set(down) - set(changed)) if up else sorted(set(down) | set(changed))
    write_atomic(Path(directory) / LINKS_DOWN, json.dumps({"down": now}, indent=1) + "\n")
    return changed


def audit_link_event(directory: Path, up: bool, changed: list[str]) -> list[str]:
    """Record a link event that changed something in the audit log; return what changed."""
    if changed:
        audit.record(directory, f"sim link {'up' if up else 'down'}", cables=changed)
    return changed
