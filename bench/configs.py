"""`loom configs` at full scale: every file of the 32,768-GPU 4-plane RoCE fabric (768 switches,
4,096 hosts) and one device (`--only`), wall and CPU time of the process, files written, peak
memory — next to the targets (all ≤ 60 s; one device ≤ 1 s, issue 36).  CPU time is shown
beside wall time because the benchmark machine is shared: wall time includes waiting for a core.
The first run expands the model and keeps it in the bench's own cache (loom.expand.cache); the
`--only` runs read it back, and are shown once more with the cache off.

Run: `make bench-configs` or `.venv/bin/python bench/configs.py [MODEL]`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures, run_cli  # noqa: E402


def run(args: list[str], env: dict) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak RSS GB of this child, its last line of output)."""
    r = run_cli(args, env)
    if r.code != 0:
        sys.exit(f"loom {' '.join(args)} failed: {r.stderr[-2000:]}")
    return r.wall, r.cpu, r.rss_gb, r.stdout.strip().splitlines()[-1]


def main() -> int:
    model = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "topology" / "roce-4plane.yaml"
    report = Figures("configs")
    t = Table(title=f"loom configs {model.name}, 2 shared cores")
    for col in ("what", "run", "wall s", "CPU s", "peak RSS GB", "written", "target"):
        t.add_column(col)
    with tempfile.TemporaryDirectory(prefix="loom-bench-configs-") as tmp:
        # A cache of the bench's own: the first run expands the model and keeps it, as a user's
        # first command after a change of the model or lock does; the runs after read it back.
        # `--only` without the cache is shown too: what that first command costs.
        warm = {"LOOM_CACHE_DIR": f"{tmp}/cache"}
        runs = (("every device", [], 60.0, warm), ("--only p0-fab-leaf0", ["--only", "p0-fab-leaf0"], 1.0, warm),
                ("--only g0000", ["--only", "g0000"], 1.0, warm),
                ("--only p0-fab-leaf0, expansion not cached", ["--only", "p0-fab-leaf0"], None, {"LOOM_CACHE_DIR": "off"}))
        for what, extra, target, env in runs:
            for n in (1, 2):
                wall, cpu, rss, line = run(["configs", str(model), "--out", f"{tmp}/{n}", *extra], env)
                shown = f"≤ {target:g} s" if target else "(the first command after a change)"
                t.add_row(what, str(n), f"{wall:.1f}", f"{cpu:.1f}", f"{rss:.2f}", line.removeprefix("wrote configs of "), shown)
                report.add(f"{model.stem}: configs, {what} (run {n})", wall, "s", target=target,
                           note=f"CPU {cpu:.1f} s; {line.removeprefix('wrote configs of ')}")
    console = Console(width=160)
    console.print(t)
    console.print(report.table())
    report.save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
