"""`loom … --help` answered from the text it printed last time, without loading the command line.

Importing Typer alone takes ~0.1 s of CPU and building every command's parameters more, so no
help printed through it can meet issue 36's 0.15 s.  The text depends only on what this module
puts in the key: the words typed, the environment (COLUMNS, NO_COLOR, TERM, …), whether stdout is
a terminal and its size, the working directory, the interpreter, the installed packages (each
`sys.path` directory's modification time: installing or removing one changes it) and Loom's own
sources (every .py file's size and modification time).  Any of them different and the help is
printed the long way, then kept.  Only a request that is help and nothing else is kept: the last
word is `--help` and no other word is an option, so `--help` cannot be an option's value and the
command never ran.  Entries live in $XDG_CACHE_HOME/loom/help (~/.cache/loom/help), at most
`KEEP` of them, each written whole (`loom.files.write_atomic`) under a digest of its text, and
a damaged one is a miss.

Standard library only until a help is kept: the lookup runs before anything else is imported."""

from __future__ import annotations

import hashlib
import os
import stat
import sys

KEEP = 64
LIMIT = 1 << 20  # bytes: `loom --help` is ~3 KB
_LOOM = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MAGIC = "loom-help-2"


def _cache_dir() -> str | None:
    """Where kept helps live; None when that would not be an absolute path (HOME unset and no
    passwd entry: `~` stays `~`, which would put a cache in the working directory)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "loom", "help") if os.path.isabs(base) else None


def _sources(top: str, h) -> None:
    with os.scandir(top) as entries:
        for e in sorted(entries, key=lambda e: e.name):
            if e.is_dir(follow_symlinks=False) and e.name != "__pycache__":
                _sources(e.path, h)
            elif e.name.endswith(".py"):
                st = e.stat()
                h.update(f"{e.path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))


def _terminal(fd: int) -> str:
    try:
        return f"{os.isatty(fd)}:{tuple(os.get_terminal_size(fd))}"
    except OSError:
        return "-"


def key(argv: list[str], encoding: str | None) -> str | None:
    """The cache key of this invocation, or None when it is not a help request to keep: not
    help alone, no cache directory, or stdout not UTF-8 (Click then writes bytes past the text
    stream that records them).  Anything that cannot be read for the key (a deleted working
    directory, sources in a zip) means no key: the help is printed the long way."""
    if not argv or argv[-1] != "--help" or any(a.startswith("-") for a in argv[:-1]) or _cache_dir() is None \
            or (encoding or "").lower().replace("-", "").replace("_", "") != "utf8":
        return None
    try:
        h = hashlib.sha256()
        h.update(repr((sys.argv[0], argv, os.getcwd(), sys.executable, sys.version, sorted(os.environ.items()),
                       [_terminal(fd) for fd in (0, 1, 2)])).encode("utf-8", "surrogateescape"))
        for p in sys.path:
            try:
                h.update(f"{p}\0{os.stat(p).st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
            except OSError:
                pass
        _sources(_LOOM, h)
    except (OSError, ValueError):
        return None
    return h.hexdigest()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def load(k: str) -> str | None:
    """The help kept under `k`, or None: none kept, or not one whole (its first line names its
    format and the digest of the rest).  Only a regular file of at most `LIMIT` bytes is read,
    without blocking: a FIFO or a device put there is a miss, not a hang."""
    d = _cache_dir()
    if d is None:
        return None
    try:
        fd = os.open(os.path.join(d, k), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > LIMIT:
            return None
        data = os.read(fd, LIMIT + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    head, _, text = data.decode("utf-8", "replace").partition("\n")
    return text if head == f"{_MAGIC} {_digest(text)}" else None


def store(k: str, text: str) -> None:
    """Keep `text` under `k` (`loom.files.write_atomic`: whole or not at all); the oldest entries
    beyond KEEP go.  A cache that cannot be written (read-only home, full disk) only means the
    next help is printed the long way."""
    from loom.files import write_atomic

    d = _cache_dir()
    if d is None or not text:  # nothing recorded: never keep an empty help
        return
    try:
        write_atomic(os.path.join(d, k), f"{_MAGIC} {_digest(text)}\n{text}")
        kept = sorted((e.stat().st_mtime_ns, e.path) for e in os.scandir(d) if not e.name.startswith("."))
        for _, path in kept[:-KEEP]:
            os.unlink(path)
    except (OSError, ValueError):  # ValueError: text that is not UTF-8 (surrogates)
        pass
