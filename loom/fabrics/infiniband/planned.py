"""What `loom plan` routed, so that the apply of its plan need not route the model again.

Apply refuses a plan whose tables are not what its model routes (an edited plan, `edited.py`),
which it learnt by routing the model once more: 9-13 s of the two-zone fabric's apply, right
after the plan routed the very same thing.  So the plan records, in the target's state
directory (`planned-routing.json`), the digest of the tables it routed (and of the design
tables it carries) under a digest of everything that routing read: the routing keys of the
fabric as it stands and of its design (model, lock, what is down, loom's version), the live
tables, and loom's records in the state directory that `model_routing` starts from.  Apply
computes the same inputs digest; when a record has it and names the plan's tables, those are
the model's routing.  A plan made elsewhere, edited, or made before any of those inputs changed
finds no such record, and apply routes the model as before.  The file is a cache: a torn or
foreign one is no record, and a plan that cannot write it loses nothing but time.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from loom.files import write_all_atomic

from .design import DESIGN_KEY, DESIGN_LFTS
from .edited import EDITED

PLANNED = "planned-routing.json"
KEEP = 8  # plans made, not yet applied, whose records are kept (oldest dropped first)
# the records of the state directory that `plan.model_routing` routes from
_READ = ("last-applied.sha256", "last-applied.lfts", "last-applied.key", DESIGN_KEY, DESIGN_LFTS, EDITED)


def inputs_digest(state_dir: Path, key: str, design_key: str, live_sha: str) -> str:
    """A digest of everything the model's routing on this target reads (see the module's doc)."""
    h = hashlib.sha256(f"{key}\n{design_key}\n{live_sha}\n".encode())
    for name in _READ:
        path = Path(state_dir) / name
        try:
            data = path.read_bytes()
        except OSError:
            data = None
        h.update(f"{name} {'-' if data is None else len(data)}\n".encode())
        h.update(data or b"")
    return h.hexdigest()


def _records(state_dir: Path) -> list[dict]:
    try:
        records = json.loads((Path(state_dir) / PLANNED).read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(records, list):
        return []
    return [r for r in records if isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("inputs", "tables_sha256"))]


def remember(state_dir: Path, inputs: str, tables_sha: str, design_sha: str | None) -> None:
    """Record that routing from `inputs` made the tables with digest `tables_sha` (and the design
    tables `design_sha`, or None when the plan carries none)."""
    kept = [r for r in _records(state_dir) if r["inputs"] != inputs][-(KEEP - 1):]
    record = {"inputs": inputs, "tables_sha256": tables_sha, "design_sha256": design_sha}
    try:
        write_all_atomic({Path(state_dir) / PLANNED: json.dumps([*kept, record]) + "\n"})
    except OSError:
        pass  # a cache: apply routes the model again


def recalled(state_dir: Path, inputs: str, tables_sha: str, design_sha: str | None) -> bool:
    """Did a plan route exactly these tables (and design tables) from exactly these inputs?"""
    return any(r["inputs"] == inputs and r["tables_sha256"] == tables_sha and r.get("design_sha256") == design_sha
               for r in _records(state_dir))
