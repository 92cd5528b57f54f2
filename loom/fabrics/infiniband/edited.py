"""Tables applied from an edited plan are not the model's routing.

A plan is signed with a plain digest, so anyone can edit its tables and sign it again; when
the edit passes every check, `loom apply --from-edited-plan` pushes it on purpose.  Loom then
must not take those tables for what the model routes (a plan of the model applied last is taken
as it is: `design.key_of_last`), or the next plan would say "No changes" and the hand edit
would have become "the model".  So such an apply leaves no `last-applied.key` and records
instead, in `edited-apply.json` in the target's state directory, who applied it, when, and the
tables the model routed then (with their routing key): the next plans route to *those* and
report "live tables differ from the model's routing" until the model routes what is live, or a
plan of the model is applied (which removes the record).
"""

from __future__ import annotations

import json
from pathlib import Path

from loom.push.packing import digest_live
from loom.render.opensm import tables_from_dump
from loom.routing import Tables, subnet

EDITED = "edited-apply.json"


def edited_files(state_dir: Path, record: dict | None, model_lfts: str | None) -> dict[Path, str | None]:
    """The record's file to write with an apply's own records (`loom.files.write_all_atomic`):
    `record` (routing key, user, time, plan digest) and the model's tables, or None to remove it."""
    body = None if record is None or model_lfts is None else \
        json.dumps({**record, "model_lfts": model_lfts, "model_sha256": digest_live(model_lfts)}) + "\n"
    return {Path(state_dir) / EDITED: body}


def edited_record(state_dir: Path, fabric) -> tuple[dict, Tables] | None:
    """The record of the last apply from an edited plan, and the model's tables it kept (None
    without one, or when it is not whole: a torn or foreign file is not a record)."""
    try:
        record = json.loads((Path(state_dir) / EDITED).read_text())
        text = record["model_lfts"]
        if digest_live(text) != record["model_sha256"] or not isinstance(record.get("routing_key"), str):
            return None
        return record, tables_from_dump(subnet(fabric, 0), text, "model")
    except (OSError, ValueError, KeyError, TypeError):
        return None


def edited_note(record: dict) -> str:
    """What a plan says while the live tables are those of an edited plan."""
    return (f"live tables differ from the model's routing: they were applied from an edited plan "
            f"(`loom apply --from-edited-plan` by {record.get('user', '?')} at {record.get('at', '?')}); "
            "applying this plan returns the fabric to the model's routing")
