"""Which cables of a simulated fabric are down: `links-down.json` in its state directory, kept
by `loom sim link down|up` whatever the technology (ibsim's console pulls an InfiniBand cable, a
veth pair an Ethernet one), read by `loom sim status` and the commands that plan around it; and
which cables the watcher's tables route around (`watch.down.json`), while they are in force."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from loom.expand import Fabric

from . import audit
from loom.files import write_atomic

LINKS_DOWN = "links-down.json"


def links_down(directory: Path) -> list[str]:
    path = Path(directory) / LINKS_DOWN
    try:
        return json.loads(path.read_text())["down"]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def watcher_down(directory: Path) -> list[str]:
    """The cables the watcher's applied tables route around (`watch.down.json`), while those are
    the tables loom applied last (their digest is `last-applied.sha256`): after a plan of the
    model is applied, or when the watcher died before its apply finished, the record is stale —
    `loom status` would report a cable routed around that the tables in force do not avoid."""
    try:
        record = json.loads((Path(directory) / "watch.down.json").read_text())
        names, digest = record["down"], record.get("tables_sha256")
        if digest is not None and digest != (Path(directory) / "last-applied.sha256").read_text().strip():
            return []
        return names if isinstance(names, list) else []
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return []


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
