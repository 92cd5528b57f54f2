"""The write-ahead journal of an apply: before a target's files change, the journal records the
intent and everything needed to undo it; each later phase is recorded as it completes.

    intent → written → reloaded → verified        (then the journal is removed)

A journal still present when the next command takes the fabric lock belongs to an apply that
died (SIGKILL, power loss): the lock proves nobody else is working.  `loom.push.apply.recover`
then finishes it (phase verified: only the records were missing) or restores the saved inputs.
The journal holds no secrets: table files, OpenSM options and digests.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .files import write_atomic

PHASES = ("intent", "written", "reloaded", "verified")


class Journal:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / "apply.journal"

    def begin(self, record: dict) -> None:
        write_atomic(self.path, json.dumps({**record, "phase": "intent", "phases": {"intent": _now()}}))

    def mark(self, phase: str, **fields) -> None:
        assert phase in PHASES, phase
        j = self.load() or {}
        j.update(fields, phase=phase)
        j.setdefault("phases", {})[phase] = _now()
        write_atomic(self.path, json.dumps(j))

    def load(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return None

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
