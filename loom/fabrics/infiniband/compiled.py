"""The C build of madquery's exchange loop (`madexchange.c`): compiled once per version of its
source into Loom's cache directory, and named to the reader processes by `madquery.MADEXCHANGE`.

Why C: under the simulator the reader's loop runs once per MAD, 210,808 times in a two-zone
read-back, and Python spends ~15 µs of CPU on each where ibsim spends ~6 — the no-change plan
and the apply wait mostly on that loop (bench/push.py).  Why optional: a machine without a C
compiler, or with the cache turned off, reads with madquery's own Python loop, which does the
same (a test compares the two on the simulator); the SSH target always does, as it runs
madquery's text alone on the subnet manager's host."""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from loom.expand import cache

SOURCE = Path(__file__).with_name("madexchange.c")
FLAGS = ["-O2", "-shared", "-fPIC"]
LIBS = ["-l:libibumad.so.3"]  # the soname: the machine need not have libibumad-dev


@functools.cache
def exchange_library() -> str | None:
    """The built library's path, built on first use (~0.3 s); None where it cannot be (no C
    compiler, no libibumad, the cache off, not ours or writable by others): madquery then
    reads with Python.  Named by the digest of its source, flags and machine, so another Loom
    (or architecture) sharing the cache builds and keeps its own (~16 KB each)."""
    with _BUILDING:  # the reader threads ask at once on first use
        return _built()


_BUILDING = threading.Lock()


def _built() -> str | None:
    d, cc = cache.directory(), shutil.which("cc") or shutil.which("gcc")
    try:
        if d is None or cc is None or d.stat().st_mode & 0o022:  # a .so others could swap is not loaded
            return None
        digest = hashlib.sha256(SOURCE.read_bytes() + " ".join([*FLAGS, *LIBS, platform.machine(), cc]).encode())
        lib = d / f"madexchange-{digest.hexdigest()[:16]}.so"
        if lib.is_file() and lib.stat().st_uid == os.getuid() and not lib.stat().st_mode & 0o022:
            return str(lib)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".madexchange-", suffix=".so")
        os.close(fd)
        try:
            done = subprocess.run([cc, *FLAGS, "-o", tmp, str(SOURCE), *LIBS], capture_output=True, timeout=120)
            if done.returncode != 0:
                return None
            os.chmod(tmp, 0o755)
            os.replace(tmp, lib)  # atomic: a reader never loads half a library
        finally:
            Path(tmp).unlink(missing_ok=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return str(lib)
