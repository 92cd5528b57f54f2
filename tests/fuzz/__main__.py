"""`python -m tests.fuzz --cases N [--seed S] [--out DIR]` (what `make fuzz N=...` runs).

Prints progress every 100 cases and the figures at the end; exit 1 if any case ended in a
traceback, a hang, a memory blow-up or a crash (reproducers are in --out)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .campaign import run_campaign


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    ap.add_argument("--cases", type=int, default=1000, help="number of cases")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first case index")
    ap.add_argument("--only", type=int, nargs="*", help="re-run just these case indices")
    ap.add_argument("--seconds", type=float, default=60.0, help="time cap per case")
    ap.add_argument("--memory-mb", type=int, default=1536, help="memory cap per case (address space above the worker's start)")
    ap.add_argument("--out", type=Path, default=Path("fuzz-out"), help="directory for reproducers and report.json")
    a = ap.parse_args()

    def progress(report, elapsed):
        print(f"  {report.summary().split(':', 1)[0].split(' in ')[0]} after {elapsed:.0f}s: "
              f"{report.summary().split(': ', 1)[1]}", flush=True)

    report = run_campaign(a.cases, a.seed, a.start, a.seconds, a.memory_mb, a.out, progress, a.only)
    print(f"fuzz seed {a.seed}: {report.summary()}")
    for name, c in sorted(report.by_input.items()):
        print(f"  {name:12} " + ", ".join(f"{k} {c[k]}" for k in sorted(c)))
    for f in report.failures:
        print(f"  case {f['index']}: {f['outcome']} -> {f['reproducer']}")
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "report.json").write_text(json.dumps({
        "seed": a.seed, "cases": report.cases, "seconds": round(report.seconds, 1), "outcomes": dict(report.outcomes),
        "by_input": {k: dict(v) for k, v in sorted(report.by_input.items())},
        "slowest": {"case": report.slowest[1], "seconds": round(report.slowest[0], 2)},
        "failures": [{k: f[k] for k in ("index", "outcome", "reproducer")} for f in report.failures]}, indent=2) + "\n")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
