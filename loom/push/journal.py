"""The write-ahead journal of an apply: before a target's files change, the journal records the
intent and everything needed to undo it; each later phase is recorded as it completes.

    intent → written → reloaded → verified        (then the journal is removed)

A journal still present when the next command takes the fabric lock belongs to an apply that
died (SIGKILL, power loss): the lock proves nobody else is working.  `loom.fabrics.infiniband.apply.recover`
then finishes it (phase verified: only the records were missing) or restores the saved inputs.
The journal holds no secrets: table files, OpenSM options and digests.

Big texts (a two-zone fabric's tables are 15 MB) are kept beside the record as plain files,
`apply.journal.<name>`, written before the record that names them: packed into the JSON they
cost a gzip each (0.2 s), which a watcher reacting to a failed link cannot spare.  A local file
(the simulator's input tables) is kept by a hard link, and the record of what was applied takes
the kept tables the same way, so 15 MB are written once per apply, not three times.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from loom.files import write_all_atomic, write_atomic

from .errors import PlanError

PHASES = ("intent", "written", "reloaded", "verified")


class Journal:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / "apply.journal"

    def begin(self, record: dict, texts: dict[str, str | Path | None] | None = None) -> None:
        """Record the intent; `texts` (name → text, or a local file kept by hard link; None:
        absent) are kept beside it (`text`, `file`)."""
        self._drop_texts()
        kept = {name: t for name, t in (texts or {}).items() if t is not None}
        write_all_atomic({self._text_path(name): t for name, t in kept.items()})
        write_atomic(self.path, json.dumps({**record, "texts": sorted(kept), "phase": "intent",
                                            "phases": {"intent": _now()}}))

    def text(self, j: dict, name: str) -> str | None:
        """A text `begin` kept for this journal `j` (None: it was absent)."""
        from loom.model import ModelError
        from loom.model.reading import read_text

        if name not in j.get("texts", ()):
            return None
        try:
            return read_text(self._text_path(name), "apply journal's saved file", tables=True)
        except ModelError as exc:
            raise self._damaged(str(exc)) from None

    def file(self, j: dict, name: str) -> Path | None:
        """Where `begin` kept a text of this journal `j` (None: it was absent), for a record
        that takes it whole: linked there, not read and written again."""
        return self._text_path(name) if name in j.get("texts", ()) and self._text_path(name).is_file() else None

    def mark(self, phase: str, **fields) -> None:
        assert phase in PHASES, phase
        j = self.load() or {}
        j.update(fields, phase=phase)
        j.setdefault("phases", {})[phase] = _now()
        write_atomic(self.path, json.dumps(j))

    def load(self) -> dict | None:
        """The record, None without one; a damaged one (a disk that filled, a hand edit) is a
        PlanError naming it: what the interrupted apply did cannot be known from it."""
        from loom.model import ModelError
        from loom.model.reading import read_text

        if not self.path.exists():
            return None
        try:
            j = json.loads(read_text(self.path, "apply journal", tables=True))
        except ModelError as exc:
            raise self._damaged(str(exc)) from None
        except (ValueError, RecursionError):
            raise self._damaged(f"{self.path}: the apply journal is damaged (not valid JSON)") from None
        texts = j.get("texts", []) if isinstance(j, dict) else None
        if (not isinstance(j, dict) or j.get("phase") not in PHASES or not isinstance(texts, list)
                or not all(isinstance(n, str) and n.replace("_", "").isalnum() for n in texts)):
            raise self._damaged(f"{self.path}: the apply journal is damaged (no phase of {', '.join(PHASES)})")
        return j

    def _damaged(self, why: str) -> PlanError:
        """A journal (or a file it saved) that cannot be read: what the interrupted apply did
        cannot be known from it, so the operator looks and moves it aside."""
        return PlanError(f"{why}; the interrupted apply it records cannot be settled from it: look at the target, move "
                         f"{self.path} and its apply.journal.* files aside, and run `loom plan` (drift shows what is live)")

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)
        self._drop_texts()

    def _text_path(self, name: str) -> Path:
        return self.path.with_name(f"{self.path.name}.{name}")

    def _drop_texts(self) -> None:
        for p in self.path.parent.glob(f"{self.path.name}.*"):
            p.unlink(missing_ok=True)


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")
