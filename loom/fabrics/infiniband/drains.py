"""The record of links the watcher drained for their errors: `watch.drained.json` in the target's
state directory, `{"drained": {cable ID: {"seen": [what was seen]}}}`.

It is the watcher's state, not an operator's mark (`loom mark` goes in the lock file, reviewed
in git): the watcher writes it when it drains or returns a link, a new watcher starts from it,
and `loom plan` counts the links it names as observed down, so a plan made during a drain wants
the tables in force ("No changes") instead of undoing the drain.
"""

from __future__ import annotations

import json
from pathlib import Path

from loom.expand import Fabric
from loom.files import write_atomic

DRAINED = "watch.drained.json"


def drained_ids(directory: Path) -> dict[str, list[str]]:
    """{cable ID: what was seen} as recorded (empty if there is no record or it is unreadable)."""
    try:
        got = json.loads((Path(directory) / DRAINED).read_text())["drained"]
        return {str(k): [str(x) for x in v["seen"]] for k, v in got.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def read_drained(directory: Path, fabric: Fabric) -> dict[int, list[str]]:
    """{cable: what was seen} for the recorded links `fabric` has (others are dropped)."""
    from loom.expand.failures import FailureSpecError, parse_failures

    out = {}
    for name, seen in drained_ids(directory).items():
        try:
            cables = parse_failures(fabric, [name]).cables
        except FailureSpecError:
            continue
        if len(cables) == 1:
            out[next(iter(cables))] = seen
    return out


def write_drained(directory: Path, fabric: Fabric, drained: dict[int, list[str]]) -> None:
    path = Path(directory) / DRAINED
    if drained:
        body = {fabric.cable_id(c): {"seen": seen} for c, seen in sorted(drained.items())}
        write_atomic(path, json.dumps({"drained": body}, indent=1) + "\n")
    else:
        path.unlink(missing_ok=True)
