"""walk.c's loops over every [switch × LID] cell, in C: where each packet ends and what the CAs'
traffic passes (`loom.checks.paths.Walk`), the deadlock check's channel dependencies
(`loom.checks.deadlock`), which switches the traffic to each destination reaches
(`loom.routing.loads.carried`, which the engine counts on between its balancing passes) and which
entries the engine's legality pass must judge (`loom.routing.asbuilt._legalize`).  Built by
`loom.native` into Loom's cache; where it cannot be (no C compiler, the cache off) `kernels()` is
None and each caller runs its numpy version of the same pass, which the tests compare with C."""

from __future__ import annotations

import ctypes
import functools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from loom import native
from loom.forked import FORK_CELLS

SOURCE = Path(__file__).with_name("walk.c")
_LOADING = threading.Lock()


@functools.cache
def kernels():
    """walk.c's functions with their argument types, or None where it cannot be built."""
    with _LOADING:
        path = native.build(SOURCE)
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        functions = lib.loom_follow, lib.loom_passed_on, lib.loom_dependencies, lib.loom_carried, lib.loom_suspect
    except (OSError, AttributeError):  # built but not loadable (a cache on a noexec mount): numpy then
        return None
    i64, ptr = ctypes.c_int64, np.ctypeslib.ndpointer
    lib.loom_follow.argtypes = [ptr(np.int16, flags="C"), i64, i64, ptr(np.int64, flags="C"), i64, i64,
                                ptr(np.int8, flags="C"), ptr(np.int16, flags="C")]
    lib.loom_passed_on.argtypes = [ptr(np.int16, flags="C"), ptr(np.int16, flags="C"), ptr(np.uint8, flags="C"), i64, i64,
                                   ptr(np.int64, flags="C"), i64, i64, ptr(np.int64, flags="C"), ptr(np.int64, flags="C"),
                                   i64, ptr(np.bool_, flags="C"), ptr(np.float64, flags="C")]
    lib.loom_dependencies.argtypes = [ptr(np.int16, flags="C"), ptr(np.uint8, flags="C"), i64, i64, ptr(np.int64, flags="C"),
                                      i64, i64, i64, ptr(np.uint8, flags="C")]
    lib.loom_carried.argtypes = [ptr(np.uint8, flags="C"), ptr(np.int16, flags="C"), i64, i64, ptr(np.int64, flags="C"), i64, i64,
                                 ptr(np.bool_, flags="C"), i64, ptr(np.bool_, flags="C")]
    lib.loom_suspect.argtypes = [ptr(np.uint8, flags="C"), ptr(np.int16, flags="C"), i64, i64, ptr(np.int64, flags="C"), i64, i64,
                                 ptr(np.int64, flags="C"), i64, ptr(np.int64, flags="C"), ptr(np.int64, flags="C"), ptr(np.int64, flags="C"),
                                 ptr(np.bool_, flags="C"), ptr(np.bool_, flags="C"), ptr(np.int64, flags="C"), ptr(np.int64, flags="C"),
                                 ctypes.c_void_p]
    return _Kernels(*functions)


@dataclass(frozen=True)
class _Kernels:
    follow: Callable[..., int]
    passed_on: Callable[..., int]
    dependencies: Callable[..., int]
    carried: Callable[..., int]
    suspect: Callable[..., int]


def halves(count: int, cells: int, run: Callable[[int, int], int]) -> None:
    """run(lo, hi) over [0, count), a walk.c function returning 0 or -1 (out of memory): on a
    large subnet the second half in a thread of its own (ctypes lets go of the GIL while C
    runs, so both cores work)."""
    split = count // 2 if cells >= FORK_CELLS and count >= 2 else count
    codes: list = []

    def call(lo: int, hi: int) -> None:
        try:
            codes.append(run(lo, hi))
        except BaseException as exc:  # noqa: BLE001 - raised again below, in the caller's thread
            codes.append(exc)

    other = threading.Thread(target=call, args=(split, count)) if split < count else None
    if other:
        other.start()
    try:
        call(0, split)
    finally:
        if other:
            other.join()
    for code in codes:
        if isinstance(code, BaseException):
            raise code
        if code:
            raise MemoryError("a walk over the forwarding tables (walk.c) could not allocate its buffers")


