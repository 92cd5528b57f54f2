"""Expansion benchmark: load + lock read + expand time and peak memory for every reference fabric.

Each fabric runs in its own child process so its peak RSS is its own.  Run: `make bench`
or `.venv/bin/python bench/expand.py [topology/*.yaml]`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figures  # noqa: E402

CHILD = r"""
import json, resource, sys, time, tracemalloc
from loom.model import load_model
from loom.expand import expand, lock_path, read_lock
t0 = time.perf_counter(); m = load_model(sys.argv[1]); t1 = time.perf_counter()
lock = read_lock(lock_path(sys.argv[1])); tl = time.perf_counter()
f = expand(m, lock); t2 = time.perf_counter()
del f
tracemalloc.start(); f = expand(m, lock)  # second run only to measure Python allocations
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"load_s": t1 - t0, "lock_s": tl - t1, "expand_s": t2 - tl, "py_peak_mb": peak / 2**20,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "switches": len(f.switches), "ports": len(f.ports), "cables": len(f.cables),
                  "gpus": sum(len(m.node_types[n.node_type].gpus) for n in f.nodes)}))
"""


def main(paths: list[str]) -> None:
    root = Path(__file__).resolve().parent.parent
    paths = paths or sorted(str(p) for p in (root / "topology").glob("*.yaml"))
    report = Figures("expand")
    t = Table(title="loom: model load + expansion, one process per fabric")
    for col in ("fabric", "switches", "NIC ports", "cables", "GPUs", "load s", "lock s", "expand s", "py peak MB", "max RSS MB"):
        t.add_column(col, justify="right" if col != "fabric" else "left")
    for p in paths:
        res = subprocess.run([sys.executable, "-c", CHILD, p], capture_output=True, text=True, check=True)
        r = json.loads(res.stdout)
        t.add_row(Path(p).stem, str(r["switches"]), str(r["ports"]), str(r["cables"]), str(r["gpus"]),
                  f"{r['load_s']:.2f}", f"{r['lock_s']:.2f}", f"{r['expand_s']:.2f}", f"{r['py_peak_mb']:.0f}", f"{r['rss_mb']:.0f}")
        report.add(f"{Path(p).stem}: load + lock + expand", r["load_s"] + r["lock_s"] + r["expand_s"], "s")
        report.add(f"{Path(p).stem}: peak RSS", r["rss_mb"] / 1024, "GB")
    console = Console(width=150)
    console.print(t)
    console.print(report.table())
    report.save()


if __name__ == "__main__":
    main(sys.argv[1:])
