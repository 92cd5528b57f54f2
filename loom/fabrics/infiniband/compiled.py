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
import threading
from pathlib import Path

from loom import native

SOURCE = Path(__file__).with_name("madexchange.c")
LIBS = ("-l:libibumad.so.3",)  # the soname: the machine need not have libibumad-dev


@functools.cache
def exchange_library() -> str | None:
    """The built library's path, built on first use (`loom.native.build`); None where it cannot
    be (no C compiler, no libibumad, the cache off, not ours or writable by others): madquery
    then reads with Python."""
    with _BUILDING:  # the reader threads ask at once on first use
        return native.build(SOURCE, LIBS)


_BUILDING = threading.Lock()
