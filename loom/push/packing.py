"""Tables inside plan and journal files: packed text and a digest independent of formatting."""

from __future__ import annotations

import base64
import gzip
import hashlib

import numpy as np

from loom.render.opensm import parse_lfts_dump


def digest_live(text: str) -> str:
    """Digest of tables, independent of dump formatting: sorted (guid, lid, port) rows."""
    parsed = parse_lfts_dump(text)
    h = hashlib.sha256()
    for guid in sorted(parsed):
        entries = parsed[guid]
        h.update(guid.to_bytes(8, "big"))
        h.update(np.array(sorted(entries.items()), dtype=np.uint32).tobytes())
    return h.hexdigest()


def pack(text: str) -> str:
    """gzip level 1: 14× faster than the default 9 on a two-zone fabric's 15 MB of tables (0.19 s
    against 2.7 s, three packs per apply) for a blob 20 % larger."""
    return base64.b64encode(gzip.compress(text.encode(), compresslevel=1, mtime=0)).decode()


def unpack(data: str) -> str:
    """A table file packed into a plan (`desired_lfts`, `previous_lfts`) back to text."""
    return gzip.decompress(base64.b64decode(data)).decode()


def mismatch(back_text: str, want_text: str, only: set[int] | None = None) -> str | None:
    """How tables read back differ from the wanted ones (None: equal on every switch, or on the
    switches whose GUIDs are in `only`)."""
    back, want = parse_lfts_dump(back_text), parse_lfts_dump(want_text)
    bad = [f"{g:016x}" for g in want if (only is None or g in only) and back.get(g) != want[g]]
    if bad:
        return f"{len(bad)} switch tables differ (first: {bad[:3]})"
    return None
