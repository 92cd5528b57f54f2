"""The figures every bench reports: each beside its target, a miss marked MISS, and all of them
saved as JSON so two runs can be compared (`bench/compare.py OLD NEW`).

A bench makes one `Figures(name)`, `add`s each measured value (with its target, if the issue
set one, and which way is better), prints `table()` after its own tables and calls `save()`.
`save` writes `<LOOM_BENCH_OUT>/<bench>.json` (default `bench/results/latest/`); `make bench`
points LOOM_BENCH_OUT at a fresh `bench/results/<time>/` and joins the files into
`bench/results/<time>.json`.  Ratios against OpenSM are computed from the same run's figures,
never from a number measured elsewhere.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
OUT = "LOOM_BENCH_OUT"


@dataclass
class Figure:
    bench: str
    name: str  # what was measured, e.g. "fire-flyer-2: loom route + check"
    value: float | None  # None: not measured (the note says why)
    unit: str  # s, GB, ×, entries ...
    target: float | None = None
    better: str = "lower"  # lower | higher: which way the target bounds the value
    note: str = ""

    @property
    def met(self) -> bool | None:
        """None without a target (or a value)."""
        if self.target is None or self.value is None:
            return None
        return self.value <= self.target if self.better == "lower" else self.value >= self.target

    def target_text(self) -> str:
        if self.target is None:
            return ""
        return f"{'≤' if self.better == 'lower' else '≥'} {self.target:g} {self.unit}".rstrip()

    def verdict(self) -> str:
        return {True: "met", False: "MISS", None: ""}[self.met]

    def shown(self) -> str:
        if self.value is None:
            return "—"
        number = f"{self.value:,.0f}" if abs(self.value) >= 1000 else f"{self.value:.3g}"
        return f"{number} {self.unit}".rstrip()


class Figures:
    def __init__(self, bench: str) -> None:
        self.bench = bench
        self.figures: list[Figure] = []

    def add(self, name: str, value: float | None, unit: str, target: float | None = None, better: str = "lower",
            note: str = "") -> Figure:
        f = Figure(self.bench, name, None if value is None else float(value), unit, target, better, note)
        self.figures.append(f)
        return f

    def table(self) -> Table:
        t = Table(title=f"{self.bench}: figures and targets ({os.cpu_count()} cores)")
        for col in ("figure", "value", "target", "", "note"):
            t.add_column(col, justify="right" if col in ("value", "target") else "left")
        for f in self.figures:
            t.add_row(f.name, f.shown(), f.target_text(), f.verdict(), f.note)
        return t

    def missed(self) -> list[Figure]:
        return [f for f in self.figures if f.met is False]

    def save(self) -> Path:
        out = Path(os.environ.get(OUT) or ROOT / "bench" / "results" / "latest")
        out.mkdir(parents=True, exist_ok=True)
        path = out / f"{self.bench}.json"
        doc = {"bench": self.bench, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(),
               "figures": [asdict(f) for f in self.figures]}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc, indent=1) + "\n")
        tmp.replace(path)
        return path


@dataclass
class Run:
    """One `loom` command as the user runs it: a child process, its wall and CPU time (its
    own and its children's: a forked check counts), peak memory (the largest child's so far:
    rusage keeps one maximum), exit code and output."""

    wall: float
    cpu: float
    rss_gb: float
    code: int
    stdout: str
    stderr: str


def run_cli(args: list[str], env: dict | None = None) -> Run:
    """`loom ARGS` timed end to end.  CPU time from the children's rusage, so it is comparable on
    a shared machine, where wall time includes waiting for a core."""
    import resource
    import subprocess

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run([str(ROOT / ".venv/bin/loom"), *args], capture_output=True, text=True,
                         env={**os.environ, **(env or {})})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(wall, cpu, after.ru_maxrss / 2**20, res.returncode, res.stdout, res.stderr)


def machine() -> dict:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cores": os.cpu_count(), "python": platform.python_version(), "host": platform.node(), "load_1min": load}


def join(directory: Path) -> Path:
    """Every bench's JSON in `directory` as one document `<directory>.json` (what `make bench` keeps)."""
    benches = [json.loads(p.read_text()) for p in sorted(Path(directory).glob("*.json"))]
    out = Path(str(directory).rstrip("/") + ".json")
    out.write_text(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "machine": machine(), "benches": benches},
                              indent=1) + "\n")
    return out


if __name__ == "__main__":  # python bench/figures.py join DIR
    if len(sys.argv) == 3 and sys.argv[1] == "join":
        print(join(Path(sys.argv[2])))
    else:
        sys.exit("usage: python bench/figures.py join DIR")
