"""Expanded fabrics kept between commands, so that `loom configs MODEL --only DEVICE` does not
expand 32,768 GPUs' ports to write one switch's files (1.4 s of expansion against 0.2 s to
read it back).

An entry is keyed by everything expansion reads: the model's and the lock's bytes, the size caps
they were read under, whether `as_built` applied, and the size and time of every source file of
loom (an edited loom misses, as Python's own bytecode cache does).  Only a load that succeeded is
kept, so a hit is a model that validated with the same bytes and the same code.  A file whose
checksum does not match its body (torn, truncated, edited) is a miss and is removed; a cache that
cannot be written is skipped without a word: it only ever saves time.

The directory is `$LOOM_CACHE_DIR` (`off` turns the cache off), else `$XDG_CACHE_HOME/loom/fabrics`,
else `~/.cache/loom/fabrics`; it is made private to the user (0700), and a directory another user owns is
not used.  Fabrics that expand in under `WORTH_SECONDS` are not kept: reading them is no faster.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
from pathlib import Path

from loom.model.errors import ModelError
from loom.model.reading import max_bytes, read_bytes

from .fabric import Fabric, HostPort, Node, Switch

CACHE_ENV = "LOOM_CACHE_DIR"
#: Entries kept; the least recently used go first (an entry of the 32,768-GPU fabric is 7.5 MB).
KEEP = 8
#: Expansion time under which an entry is not worth a file (`loom.expand.load_fabric` decides).
WORTH_SECONDS = 0.15
_MAGIC = b"loom-fabric-cache 1\n"
_LOOM = Path(__file__).resolve().parent.parent


def cache_dir() -> Path | None:
    """The cache's directory, None when it is turned off."""
    raw = os.environ.get(CACHE_ENV, "")
    if raw == "off":
        return None
    if raw:
        return Path(raw)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "loom" / "fabrics"


def _code() -> bytes:
    """Size and modification time of every source file of loom, sorted: a changed loom misses."""
    out: list[str] = []

    def walk(d: str) -> None:
        for e in os.scandir(d):
            if e.is_dir(follow_symlinks=False) and e.name != "__pycache__":
                walk(e.path)
            elif e.name.endswith(".py"):
                s = e.stat()
                out.append(f"{e.path}\0{s.st_size}\0{s.st_mtime_ns}")

    walk(str(_LOOM))
    return "\n".join(sorted(out)).encode()


def key(model: Path, lock: Path, as_built: bool) -> str | None:
    """The entry's name for these inputs as they are now; None when one cannot be read, or is
    over its size cap (the load that follows names the problem)."""
    texts: list[bytes | None] = []
    for path, tables in ((model, False), (lock, True)):
        if not path.exists():
            texts.append(None)
            continue
        try:
            texts.append(read_bytes(path, tables=tables))
        except ModelError:
            return None
    return key_of(*texts, as_built)


def key_of(model: bytes | None, lock: bytes | None, as_built: bool) -> str:
    """The entry's name for a model's and a lock's bytes (None: no such file)."""
    h = hashlib.sha256(_code())
    h.update(f"\0{as_built}\0{max_bytes()}\0{max_bytes(tables=True)}\0".encode())
    for text in (model, lock):
        h.update(b"\0absent\0" if text is None else b"\0file\0" + hashlib.sha256(text).digest())
    return h.hexdigest()


def directory() -> Path | None:
    """The cache directory, made if need be; None if it is off, not ours, or cannot be made."""
    d = cache_dir()
    if d is None:
        return None
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if d.stat().st_uid != os.getuid():
            return None
    except OSError:
        return None
    return d


def get(name: str):
    """The fabric kept under `name`, None on a miss (a damaged entry is removed)."""
    d = directory()
    if d is None:
        return None
    path = d / f"{name}.fabric"
    try:
        if not path.is_file():  # a FIFO would block the read
            return None
        raw = path.read_bytes()
    except OSError:
        return None
    head = len(_MAGIC) + 32
    if raw[:len(_MAGIC)] != _MAGIC or hashlib.sha256(raw[head:]).digest() != raw[len(_MAGIC):head]:
        path.unlink(missing_ok=True)
        return None
    try:
        os.utime(path)  # recently used: kept longest
    except OSError:
        pass
    try:
        fabric = _unpacked(pickle.loads(raw[head:]))
    except Exception:  # noqa: BLE001 - written by this loom (the key says so): only a bug lands here
        fabric = None
    if not isinstance(fabric, Fabric):
        path.unlink(missing_ok=True)
        return None
    return fabric


def put(name: str, fabric) -> None:
    """Keep `fabric` under `name`; the least recently used entries beyond KEEP go."""
    from loom.files import write_atomic

    d = directory()
    if d is None:
        return
    body = pickle.dumps(_packed(fabric), protocol=pickle.HIGHEST_PROTOCOL)
    try:
        write_atomic(d / f"{name}.fabric", _MAGIC + hashlib.sha256(body).digest() + body)
        entries = sorted(d.glob("*.fabric"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in entries[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass


_ROWS, _KINDS = ("switches", "nodes", "ports"), (Switch, Node, HostPort)


def _packed(fabric) -> tuple:
    """The fabric with its switches, nodes and ports as rows of field values: a frozen slotted
    dataclass unpickles through `dataclasses`' generic `__setstate__`, five times slower than its
    own `__init__` (0.36 s for the 37,632 of the 32,768-GPU fabric)."""
    rows = {}
    for k, kind in zip(_ROWS, _KINDS):
        names = [f.name for f in dataclasses.fields(kind)]
        rows[k] = [tuple(getattr(x, n) for n in names) for x in getattr(fabric, k)]
    return dataclasses.replace(fabric, **{k: () for k in _ROWS}), rows


def _unpacked(packed: tuple):
    fabric, rows = packed
    return dataclasses.replace(fabric, **{k: tuple(kind(*r) for r in rows[k]) for k, kind in zip(_ROWS, _KINDS)})

