"""Issue 36's table, as the user runs each command: `loom --help`, `loom validate` of the tiny
model, and `loom check` of the fabric at the unicast LID limit (39,936 CAs, 43,456 LIDs: every
verdict and eBB), each a child process timed end to end (wall, and CPU of the process and its
forked children), beside the issue's targets.  The table's other rows are measured where their
machinery is: `--only` in bench/configs.py, plan and apply in bench/push.py, the watcher in
bench/failures.py; `make run` and `make test` on a fresh clone in bench/fresh.py.

OpenSM has no figure at the LID limit (ibsim alone would need tens of GB, bench/routing.py);
its figure beside Loom's check is on the mid-size fabric in bench/routing.py.

Run: `make bench-commands` or `.venv/bin/python bench/commands.py`; LOOM_BENCH_LID_LIMIT=0
leaves out the LID-limit check (~1 min on 2 idle cores, ~1.6 GB).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures, run_cli  # noqa: E402

LID_LIMIT = ROOT / "bench/models/lid-limit-40k.yaml"


def quick(report: Figures, label: str, args: list[str], target_cpu: float, runs: int = 5, env: dict | None = None,
          note: str = "") -> None:
    """A command that takes a fraction of a second: the median of a few runs (CPU is the
    target: issue 36 states these as CPU time, which a busy machine does not inflate).  One
    unmeasured run first, allowed to write Python's bytecode cache: a user's second command
    finds it (an installed Loom has it from pip), while a shell with PYTHONDONTWRITEBYTECODE
    set would have every measured run compile Loom's modules again (~50 ms of `validate`)."""
    run_cli(args, {**(env or {}), "PYTHONDONTWRITEBYTECODE": ""})  # Python reads an empty value as unset
    done = [run_cli(args, env) for _ in range(runs)]
    bad = [r for r in done if r.code != 0]
    if bad:
        sys.exit(f"loom {' '.join(args)} failed (exit {bad[0].code}): {bad[0].stderr[-2000:]}")
    cpu, wall = statistics.median(r.cpu for r in done), statistics.median(r.wall for r in done)
    report.add(f"{label} (CPU, median of {runs})", cpu, "s", target=target_cpu, note=f"wall {wall:.2f} s{note}")


def main() -> int:
    report = Figures("commands")
    failed = False
    with tempfile.TemporaryDirectory(prefix="loom-bench-commands-") as state:
        env = {"LOOM_STATE_DIR": state}
        # the help kept from the run before (loom/cli/helpcache.py), and the first one, which loads Typer
        cache = {"XDG_CACHE_HOME": str(Path(state) / "cache")}
        first = run_cli(["--help"], cache)
        quick(report, "loom --help", ["--help"], 0.15, env=cache,
              note=f"; the first time, nothing kept: CPU {first.cpu:.2f} s, wall {first.wall:.2f} s")
        quick(report, "loom validate topology/tiny.yaml", ["validate", str(ROOT / "topology/tiny.yaml")], 0.4)
        if os.environ.get("LOOM_BENCH_LID_LIMIT", "1") != "0":
            r = run_cli(["check", str(LID_LIMIT), "--json"], env)
            failed = r.code != 0
            verdicts = ""
            if r.code in (0, 1):
                import json

                doc = json.loads(r.stdout)
                verdicts = (f"reachable {doc['reachable']}, deadlock-free {doc['deadlock_free']}, balance "
                            f"{doc['balance']['within_bound']}, eBB {doc['ebb']} ± {doc.get('ebb_ci95')} "
                            f"({doc.get('ebb_bisections')} bisections)")
            report.add("loom check lid-limit-40k, as typed (wall)", r.wall, "s", target=45,
                       note=f"CPU {r.cpu:.1f} s, peak {r.rss_gb:.2f} GB, exit {r.code}; {verdicts}; OpenSM: none at "
                            "this size (ibsim), see bench-routing's mid-10k")
            report.add("loom check lid-limit-40k, as typed (CPU)", r.cpu, "s", note="process and forked children")
        else:
            report.add("loom check lid-limit-40k, as typed (wall)", None, "s", target=45, note="LOOM_BENCH_LID_LIMIT=0: not run")
    console = Console(width=160)
    console.print(report.table())
    report.save()
    return 1 if failed else 0  # a miss is shown (MISS), a failing verdict fails the bench


if __name__ == "__main__":
    sys.exit(main())
