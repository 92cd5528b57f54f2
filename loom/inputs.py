"""Files and values given on the command line, read strictly.

`--lfts` dumps, plans, host facts and git revisions come from outside the
model, often from another tool or another person.  Each is read through the bounded reader
(`loom.model.reading`), parsed against its exact format, and refused with `InputError` naming the
file, the line and the fix.  No refusal quotes the file's content back (a file named by
mistake may hold secrets), and no value reaches `git` where it could be read as an option.
Cable catalogues, named by the model, are confined and read in `loom.model.catalogue`.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import re
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from loom.model.errors import ModelError
from loom.model.limits import MAX_UNICAST_LID
from loom.model.names import Name
from loom.model.reading import read_text


class InputError(Exception):
    """A file or value from the command line that cannot be used; the message says why and what to do."""


def _text(path: Path, what: str, tables: bool = False) -> str:
    try:
        return read_text(path, what, tables)
    except ModelError as exc:
        p = exc.problems[0]
        raise InputError(f"{p.render(exc.file)}") from None


# ------------------------------------------------------------------------------- LFT dumps

_HEADER = re.compile(r"^Unicast lids \[\S+\] of switch Lid (\d+) guid 0x([0-9a-fA-F]{1,16})\b")
_ENTRY = re.compile(r"^0x([0-9a-fA-F]{1,4}) (\d{1,3})(?:\s|$)")
_SKIP = re.compile(r"^(?:\s*$|#|\d+ (?:valid )?lids dumped\s*$|\s+Lid\s+Out\b|\s+Port\s+Info\b)")


def read_lft_dump(path: Path, subnet, engine: str):
    """`opensm-lfts.dump` / `dump_fts` file → `Tables` over `subnet`, every line checked: a
    header per switch, `0xLID PORT` entries under it; then the switches and LIDs must be the
    model's (`loom.render.opensm.match_dump`) and every port one the switch has."""
    from loom.render.opensm import DumpMismatch, match_dump, parse_lfts_dump
    from loom.routing.base import NO_ROUTE, Tables

    text = _text(path, "LFT dump", tables=True)
    fix = "give an opensm-lfts.dump or dump_fts output of this model's subnet"
    entries: list[tuple[int, int, int, int]] = []  # (line, switch guid, lid, port)
    current, seen = None, set()

    def bad(n: int, why: str) -> InputError:
        return InputError(f"{path}:{n}: not an LFT dump line ({why})\n  fix: {fix}")

    if not any(_HEADER.match(line) for line in text.splitlines()):
        raise InputError(f"{path}: not the tables of {subnet.fabric.name}: holds no forwarding tables "
                         f"(no `Unicast lids ... of switch ...` block)\n  fix: {fix}")
    for n, line in enumerate(text.splitlines(), 1):
        if m := _HEADER.match(line):
            current = int(m.group(2), 16)
            if current in seen:
                raise bad(n, f"switch guid 0x{current:016x} appears twice")
            seen.add(current)
        elif "Unicast lids" in line:
            raise bad(n, "`Unicast lids` outside a switch header")
        elif m := _ENTRY.match(line):
            if current is None:
                raise bad(n, "an entry before the first `Unicast lids ... of switch` header")
            lid, port = int(m.group(1), 16), int(m.group(2))
            if not 0 < lid <= MAX_UNICAST_LID:
                raise bad(n, f"LID 0x{lid:04x} is not a unicast LID")
            entries.append((n, current, lid, port))
        elif not _SKIP.match(line):
            raise bad(n, "expected a switch header, `0xLID PORT`, or `N lids dumped`")
    try:
        match_dump(subnet, parse_lfts_dump(text), text)
    except DumpMismatch as exc:
        raise InputError(f"{path}: not the tables of {subnet.fabric.name}: {exc}\n  fix: {fix}") from None
    row_of = {subnet.switch(r).guid: r for r in range(subnet.n)}
    lft = np.full((subnet.n, subnet.max_lid + 1), NO_ROUTE, dtype=np.uint8)
    for n, guid, lid, port in entries:
        row = row_of[guid]
        if port != NO_ROUTE and port > subnet.switch(row).ports:
            raise bad(n, f"port {port} on switch {subnet.switch(row).name}, which has {subnet.switch(row).ports} ports")
        lft[row, lid] = port
    return Tables(subnet, lft, engine)


# ----------------------------------------------------------------------------------- plans

_SHA = r"^[0-9a-f]{64}$"
#: Largest table text a plan may unpack to (the 32,768-GPU fabric's tables are a few MB).
MAX_UNPACKED = 256 * 1024 * 1024


class _Open(BaseModel):
    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)


class _PlanQos(_Open):
    desired_conf: str
    previous_conf: str
    intent: object = None
    conf_changes: bool
    ports_differing: int = Field(ge=0)
    examples: list[str]


class _PlanChanges(_Open):
    entries_changed: int = Field(ge=0)
    switches_touched: int = Field(ge=0)
    per_switch: dict[str, int]
    destinations_moved: list[dict]


class PlanFile(_Open):
    """The keys `loom apply` reads from a plan, with their types."""

    version: int
    fabric: Name
    model: str = Field(max_length=4096)
    model_sha256: str = Field(pattern=_SHA)
    state_dir: str = Field(max_length=4096)
    live_sha256: str = Field(max_length=128)
    desired_sha256: str = Field(max_length=128)
    drift: str | None
    qos: _PlanQos
    changes: _PlanChanges
    balance_before: dict
    balance_after: dict
    desired_lfts: str
    previous_lfts: str
    guid2lid: str


def _unpacks(data: str) -> bool:
    try:
        raw = base64.b64decode(data, validate=True)
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            out = fh.read(MAX_UNPACKED + 1)
        out.decode()
        return len(out) <= MAX_UNPACKED
    except (binascii.Error, OSError, EOFError, UnicodeDecodeError, ValueError):
        return False


def read_plan_file(path: Path, version: int) -> dict:
    """A plan written by `loom plan`: JSON, the keys apply reads with their types, packed tables
    that unpack, and a state directory that `loom sim up` made (apply writes there)."""
    import json

    fix = f"make a new plan with `loom plan MODEL --out {path}`"
    text = _text(path, "plan", tables=True)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{path}:{getattr(exc, 'lineno', '?')}: not valid JSON ({getattr(exc, 'msg', 'nested too deeply')})\n  fix: {fix}") from None
    if not isinstance(data, dict) or data.get("version") != version:
        raise InputError(f"{path}: not a loom plan of version {version}\n  fix: {fix}")
    try:
        PlanFile.model_validate(data)
    except ValidationError as exc:
        where = ", ".join(".".join(str(p) for p in e["loc"]) + f" ({e['type']})" for e in exc.errors()[:5])
        raise InputError(f"{path}: not a valid plan: {where}\n  fix: {fix}") from None
    for key in ("desired_lfts", "previous_lfts"):
        if not _unpacks(data[key]):
            raise InputError(f"{path}: {key} is not packed tables (base64 of gzip, at most {MAX_UNPACKED} bytes)\n  fix: {fix}")
    state = Path(data["state_dir"])
    if not state.is_dir() or not any((state / f).is_file() for f in ("ibsim.pid", "opensm.pid", "last-plan.json")):
        raise InputError(f"{path}: state_dir is not a directory made by `loom sim up`\n  fix: {fix}")
    return data


# ----------------------------------------------------------------------------- host facts

def read_fact_files(directory: Path, names: dict[str, str]) -> dict[str, str]:
    """The fact files of a host (bounded, regular, UTF-8), by key."""
    missing = [f for f in names.values() if not (directory / f).exists()]
    if missing:
        raise InputError(f"{directory}: missing fact files {', '.join(missing)} (gather them with "
                         "`nvidia-smi topo -m`, `lspci -vvv`, `numactl -H`)")
    return {k: _text(directory / f, "fact file") for k, f in names.items()}


# --------------------------------------------------------------------------- git revisions

_REV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./~^@{}-]{0,199}$")


def git_revision(rev: str) -> str:
    """A revision as the user typed it, if it can only be a revision: no leading `-` (an option to
    git), no whitespace, `:` or control characters.  `git` then gets it after `--end-of-options`."""
    if not _REV.match(rev) or ".." in rev or rev.endswith((".lock", "/", ".")):
        raise InputError(f"{rev[:60]!r} is not a git revision (letters, digits and _./~^@{{}}-, not starting with '-')\n"
                         "  fix: give a commit, branch or tag, e.g. HEAD~1 or main")
    return rev

