"""Loom's few C kernels: each built once per version of its source into Loom's cache directory
and loaded through ctypes, or None where that cannot be done — the caller then runs its own
Python (numpy) version of the same loop, which tests compare with the C one.

Two sets of loops are in C: madquery's MAD exchange (`loom/fabrics/infiniband/madexchange.c`,
once per SMP) and the walks over every [switch × LID] cell of the checks and the engine
(`loom/routing/walk.c`).  A library is named by the digest of its source, flags, machine and compiler, so another Loom (or
architecture) sharing the cache builds and keeps its own (~16 KB each); a cache directory or
library that others could write is not trusted (a .so others could swap is not loaded)."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

from loom.expand import cache

FLAGS = ["-O2", "-shared", "-fPIC"]


def build(source: Path, libs: tuple[str, ...] = ()) -> str | None:
    """The path of `source` built as a shared library (~0.3 s the first time, then found by its
    name); None without a C compiler, a cache directory of our own, or a build that succeeds."""
    d, cc = cache.directory(), shutil.which("cc") or shutil.which("gcc")
    try:
        if d is None or cc is None or d.stat().st_mode & 0o022:
            return None
        digest = hashlib.sha256(source.read_bytes() + " ".join([*FLAGS, *libs, platform.machine(), cc]).encode())
        lib = d / f"{source.stem}-{digest.hexdigest()[:16]}.so"
        if lib.is_file() and lib.stat().st_uid == os.getuid() and not lib.stat().st_mode & 0o022:
            return str(lib)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{source.stem}-", suffix=".so")
        os.close(fd)
        try:
            done = subprocess.run([cc, *FLAGS, "-o", tmp, str(source), *libs], capture_output=True, timeout=120)
            if done.returncode != 0:
                return None
            os.chmod(tmp, 0o755)
            os.replace(tmp, lib)  # atomic: a reader never loads half a library
        finally:
            Path(tmp).unlink(missing_ok=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return str(lib)
