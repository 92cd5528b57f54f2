"""Tables inside plan and journal files.

A plan is read by people in review, so its tables are JSON rows: per switch (natural name order)
its GUID, LID and the sorted `[lid, port]` entries (`table_rows`), one row per line in the file
(`plan_json`).  Apply turns them back into the text OpenSM reads (`rows_text`), validating every
field, and re-checks the result.  The journal is read only by loom, so it keeps packed text
(`pack`): written on every apply, it must be quick.  Digests are independent of formatting."""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from functools import lru_cache
from typing import Annotated

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, TypeAdapter, ValidationError

from loom.model.names import natural
from loom.render.opensm import parse_lfts_dump
from loom.routing.base import NO_ROUTE, Tables

from .errors import PlanError


@lru_cache(maxsize=4)
def digest_live(text: str) -> str:
    """Digest of tables, independent of dump formatting: sorted (guid, lid, port) rows.  Once
    per text, as its parse (`parse_lfts_dump`): an apply digests the same dumps several times."""
    parsed = parse_lfts_dump(text)
    h = hashlib.sha256()
    for guid in sorted(parsed):
        entries = parsed[guid]
        lids = np.fromiter(entries.keys(), dtype=np.uint32, count=len(entries))
        ports = np.fromiter(entries.values(), dtype=np.uint32, count=len(entries))
        order = np.argsort(lids)
        h.update(guid.to_bytes(8, "big"))
        h.update(np.column_stack([lids[order], ports[order]]).tobytes())
    return h.hexdigest()


def digest_tables(t: Tables) -> str:
    """`digest_live(lfts_dump(t))` straight from the tables (a watcher's apply records the digest
    of what it verified without writing and parsing 15 MB of text)."""
    sn = t.subnet
    owned = np.flatnonzero((sn.lid_switch >= 0) | (sn.lid_port >= 0))
    owned = owned[(owned >= 1) & (owned <= sn.max_lid)]
    h = hashlib.sha256()
    for row in sorted((r for r in range(sn.n) if not (t.lft[r] == NO_ROUTE).all()), key=lambda r: sn.switch(r).guid):
        ports = t.lft[row, owned]
        keep = ports != NO_ROUTE
        h.update(sn.switch(row).guid.to_bytes(8, "big"))
        h.update(np.column_stack([owned[keep], ports[keep]]).astype(np.uint32).tobytes())
    return h.hexdigest()


def pack(text: str) -> str:
    """gzip level 1: 14× faster than the default 9 on a two-zone fabric's 15 MB of tables (0.19 s
    against 2.7 s, three packs per apply) for a blob 20 % larger."""
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=1, mtime=0)).decode()


def unpack(data: str) -> str:
    """A table file packed into a journal (`desired_lfts`, `previous_live`) back to text."""
    return gzip.decompress(base64.b64decode(data)).decode()


def table_rows(t: Tables) -> dict[str, dict]:
    """The entries `lfts_dump` writes, as JSON rows per switch; a switch with no route (down or
    cut off) has no table, as in the dump."""
    sn = t.subnet
    owned = np.flatnonzero((sn.lid_switch >= 0) | (sn.lid_port >= 0))
    owned = owned[(owned >= 1) & (owned <= sn.max_lid)]
    out = {}
    for row in range(sn.n):
        ports = t.lft[row, owned]
        keep = ports != NO_ROUTE
        if not keep.any():
            continue
        s = sn.switch(row)
        out[s.name] = {"guid": f"0x{s.guid:016x}", "lid": s.lid,
                       "rows": np.column_stack([owned[keep], ports[keep]]).tolist()}
    return dict(sorted(out.items(), key=lambda kv: natural(kv[0])))


Lid = Annotated[int, Strict(), Field(ge=1, le=0xBFFF)]
Port = Annotated[int, Strict(), Field(ge=0, lt=NO_ROUTE)]


class SwitchRows(BaseModel):
    """One switch's table in a plan file."""

    model_config = ConfigDict(extra="forbid")
    guid: Annotated[str, Strict()] = Field(pattern=r"^0x[0-9a-fA-F]{1,16}$")
    lid: Lid
    rows: list[tuple[Lid, Port]]


ROWS = TypeAdapter(dict[str, SwitchRows])
ENTRY_LINE = "0x%04x %03d"  # one LFT entry as dump_fts writes it
ROW_JSON = "   [%d, %d]"  # one LFT entry as a plan file writes it


def checked_rows(rows, where: str = "the plan", key: str = "desired_lfts") -> dict[str, SwitchRows]:
    """Plan rows with every field validated: a wrong shape is a PlanError naming the field, never
    a traceback.  (A third of `rows_text`: what checks a plan's shape needs, without the text.)"""
    try:
        return ROWS.validate_python(rows)
    except ValidationError as exc:
        e = exc.errors()[0]
        field = ".".join(str(p) for p in (key, *e["loc"]))
        raise PlanError(f"{where}: {field}: {e['msg']} (a switch is {{\"guid\": \"0x…\", \"lid\": N, \"rows\": "
                        f"[[lid, port], …]}}); run `loom plan` again") from None


def rows_text(rows, where: str = "the plan", key: str = "desired_lfts") -> str:
    """Plan rows back to dump text (`Unicast lids ... guid ...` blocks), validated (`checked_rows`)."""
    switches = checked_rows(rows, where, key)
    out = []
    for s in switches.values():
        out.append(f"Unicast lids of switch Lid {s.lid} guid {s.guid} (plan):")  # no names: keys are not checked
        out.extend(map(ENTRY_LINE.__mod__, s.rows))  # C-level formatting: a plan holds 400,000 rows
    return "\n".join(out) + "\n"


TABLE_KEYS = ("desired_lfts", "previous_lfts")


def plan_json(plan: dict) -> str:
    """A plan as indented JSON with each `[lid, port]` row on a line of its own: readable in a
    pager and in a diff of two plans (and 10× quicker than re-flowing `json.dumps(indent=…)`)."""
    body = json.dumps({k: f"@{k}@" if k in TABLE_KEYS else v for k, v in plan.items()}, indent=1)
    for key in TABLE_KEYS:
        if key in plan:
            body = body.replace(f'"@{key}@"', _tables_json(plan[key]), 1)
    return body + "\n"


def _tables_json(switches: dict[str, dict]) -> str:
    blocks = []
    for name, s in switches.items():
        rows = ",\n".join(map(ROW_JSON.__mod__, map(tuple, s["rows"])))  # C-level formatting, as `rows_text`
        blocks.append(f'  {json.dumps(name)}: {{"guid": {json.dumps(s["guid"])}, "lid": {s["lid"]}, "rows": [\n{rows}\n  ]}}')
    return "{\n" + ",\n".join(blocks) + "\n }" if blocks else "{}"


def mismatch(back_text: str, want_text: str, only: set[int] | None = None) -> str | None:
    """How tables read back differ from the wanted ones (None: equal on every switch, or on the
    switches whose GUIDs are in `only`)."""
    back, want = parse_lfts_dump(back_text), parse_lfts_dump(want_text)
    bad = [f"{g:016x}" for g in want if (only is None or g in only) and back.get(g) != want[g]]
    if bad:
        return f"{len(bad)} switch tables differ (first: {bad[:3]})"
    return None
