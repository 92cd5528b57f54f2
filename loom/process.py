"""How a Loom process is set up to run a command: the `loom` program does this first, and so does
a benchmark that runs a command's code in-process (the watcher's), so that it measures what the
command costs, not what the interpreter's defaults cost."""

from __future__ import annotations

import gc
import os


def as_a_command() -> None:
    """Call before numpy loads.

    Loom multiplies no dense float matrices (routing's products are integer or sparse, which
    BLAS never sees), so the OpenBLAS thread pool that numpy and scipy start as they load only
    costs: ~40 ms of CPU per command on 2 cores, spinning.  One thread, unless the user says.

    A command builds one large graph of records (the 32,768-GPU fabric: ~40,000 frozen
    dataclasses and their dicts) that lives until it exits; the cyclic collector's default pace
    (every 700 allocations) walked it again and again, ~20 % of `configs --only`'s CPU, and
    freed nothing.  Collections stay on, at a pace that still bounds a leak."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.set_threshold(100_000, 50, 50)
