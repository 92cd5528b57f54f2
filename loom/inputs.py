"""Files and values given on the command line, read strictly.

`--lfts` dumps, host facts and git revisions come from outside the
model, often from another tool or another person.  Each is read through the bounded reader
(`loom.model.reading`), parsed against its exact format, and refused with `InputError` naming the
file, the line and the fix.  No refusal quotes the file's content back (a file named by
mistake may hold secrets), and no value reaches `git` where it could be read as an option.
Cable catalogues, named by the model, are confined and read in `loom.model.catalogue`.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from loom.model.errors import ModelError
from loom.model.limits import MAX_UNICAST_LID
from loom.model.reading import read_text


class InputError(Exception):
    """A file or value from the command line that cannot be used; the message says why and what to do."""


def _text(path: Path, what: str, tables: bool = False) -> str:
    from loom.model.reading import room_to_parse

    why = room_to_parse(path, what) if tables else None
    if why:
        raise InputError(why)
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


# ------------------------------------------------------------------------- topology files

def read_topology_file(path: Path) -> str:
    """A saved `ibnetdiscover` output (bounded, regular, UTF-8); its lines are checked by the parser."""
    if not path.exists():
        raise InputError(f"{path}: no such file; save the fabric's topology with `ibnetdiscover > FILE` on a "
                         "subnet-manager host")
    return _text(path, "topology file", tables=True)


# --------------------------------------------------------------------------- git revisions

_REV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./~^@{}-]{0,199}$")


def git_revision(rev: str) -> str:
    """A revision as the user typed it, if it can only be a revision: no leading `-` (an option to
    git), no whitespace, `:` or control characters.  `git` then gets it after `--end-of-options`."""
    if not _REV.match(rev) or ".." in rev or rev.endswith((".lock", "/", ".")):
        raise InputError(f"{rev[:60]!r} is not a git revision (letters, digits and _./~^@{{}}-, not starting with '-')\n"
                         "  fix: give a commit, branch or tag, e.g. HEAD~1 or main")
    return rev

