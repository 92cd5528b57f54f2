"""Multi-plane scale benchmark: `loom check` (route + every check, every plane) on the
32,768-GPU 4-plane RoCE fabric and DeepSeek-V3's 16,384-GPU 8-plane fat tree, wall time and
peak memory of the process, next to the target (10 s, 4 GB).

Run: `make bench-roce` or `.venv/bin/python bench/roce.py`.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures  # noqa: E402


MODELS = (("roce-4plane", "4 planes × 8,192 NIC ports, 768 switches"),
          ("deepseek-v3-mpft", "8 planes × 2,048 NIC ports, 768 switches"))


def main() -> int:
    report = Figures("roce")
    t = Table(title="loom check on the multi-plane fabrics, 2 cores")
    for col in ("model", "run", "wall s", "peak RSS GB", "planes ok", "eBB", "target"):
        t.add_column(col)
    for name, what in MODELS:
        model = ROOT / "topology" / f"{name}.yaml"
        for run in (1, 2):
            t0 = time.perf_counter()
            res = subprocess.run([str(ROOT / ".venv/bin/loom"), "check", str(model), "--json"], capture_output=True, text=True)
            wall = time.perf_counter() - t0
            rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
            d = json.loads(res.stdout)
            ok = sum(p["reachable"] and p["deadlock_free"] and p["balance"]["within_bound"] for p in d["planes"])
            t.add_row(f"{name} ({what})", str(run), f"{wall:.1f}", f"{rss:.2f}", f"{ok}/{len(d['planes'])}",
                      str(d["planes"][0]["ebb"]), "≤ 10 s, ≤ 4 GB")
            report.add(f"{name}: loom check (run {run})", wall, "s", target=10,
                       note=f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            report.add(f"{name}: loom check peak RSS (run {run})", rss, "GB", target=4)
            report.add(f"{name}: planes passing (run {run})", ok, f"of {len(d['planes'])}", target=len(d["planes"]),
                       better="higher")
    console = Console(width=140)
    console.print(t)
    console.print(report.table())
    report.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
