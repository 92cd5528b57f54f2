"""A fuzz campaign: cases run in-process in forked workers with a per-case time and memory cap.

The worker (a forked process, so a blow-up cannot take the caller down) limits its own address
space to what it had at start plus `memory_mb`, arms a timer of `seconds` per case, and runs
each case through what a user would run: even cases a mutated model through
`pipeline.run_pipeline`, odd ones a mutated plan, lock file, dump, hostlist, inventory or
hostile NetBox server through its command (`surfaces.run_surface`).  The parent waits `seconds` + a margin for
each answer; a worker that does not answer (stuck in C code) or dies is replaced and the case
counted as a hang or a crash.  Every failing case is written to `out_dir` as a reproducer: the
model (`case-<seed>-<index>.yaml`, runnable with `loom validate` / `loom check`) or the surface's
files (`case-<seed>-<index>/`) and what happened (`.txt`: base, mutations, command, traceback).
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection
import resource
import shutil
import signal
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .mutate import TOPOLOGY, make_case
from .pipeline import REFUSALS, run_pipeline
from .surfaces import run_surface, surface_case

FAILURES = ("traceback", "hang", "memory", "crash")


class CaseTimeout(BaseException):
    """Raised in the worker by the per-case timer (a BaseException: `except Exception` in the
    code under test must not swallow it)."""


@dataclass
class Report:
    cases: int = 0
    outcomes: Counter = field(default_factory=Counter)
    by_input: dict[str, Counter] = field(default_factory=dict)  # "model", "plan", "lock", ... → outcomes
    failures: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    slowest: tuple[float, int] = (0.0, -1)

    @property
    def failed(self) -> int:
        return sum(self.outcomes[k] for k in FAILURES)

    def summary(self) -> str:
        parts = ", ".join(f"{k} {self.outcomes[k]}" for k in ("ok", "refused", *FAILURES))
        return (f"{self.cases} cases in {self.seconds:.0f}s: {parts}; slowest case {self.slowest[1]} "
                f"({self.slowest[0]:.1f}s)")


def _on_alarm(signum, frame):
    raise CaseTimeout()


def is_surface(index: int) -> bool:
    """Odd cases fuzz the other inputs (plans, locks, dumps, ...: `surfaces`), even ones models."""
    return index % 2 == 1


def input_of(seed: int, index: int) -> str:
    """What case `index` fuzzes: "model", or the surface's name."""
    return surface_case(seed, index).surface if is_surface(index) else "model"


def _run_one(workdir: Path, seed: int, index: int, seconds: float) -> dict:
    path = workdir / f"case-{seed}-{index}.yaml"
    if is_surface(index):
        case = surface_case(seed, index)
        run = lambda: run_surface(case, workdir)  # noqa: E731
    else:
        path.write_text(make_case(seed, index).text, encoding="utf-8")
        run = lambda: run_pipeline(path)  # noqa: E731
    t0 = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        outcome, detail = run(), ""
    except REFUSALS as exc:
        outcome, detail = "refused", str(exc)[:300]
    except CaseTimeout:
        outcome, detail = "hang", traceback.format_exc()
    except MemoryError:
        outcome, detail = "memory", traceback.format_exc()
    except Exception:  # noqa: BLE001 - any other exception is exactly what the fuzzer looks for
        outcome, detail = "traceback", traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        path.unlink(missing_ok=True)
    return {"index": index, "outcome": outcome, "detail": detail, "seconds": time.perf_counter() - t0}


def _worker(conn, seed: int, seconds: float, memory_mb: int) -> None:
    import loom.checks  # noqa: F401 - import before the cap: imports are not the case's memory
    import loom.expand  # noqa: F401
    import loom.render.cabling  # noqa: F401
    import loom.render.inventory  # noqa: F401
    import loom.render.roce  # noqa: F401
    import loom.routing  # noqa: F401
    import typer.testing  # noqa: F401

    import loom.cli.commands  # noqa: F401 - the Typer app and every command module

    with open("/proc/self/statm") as fh:
        vm = int(fh.read().split()[0]) * resource.getpagesize()
    cap = vm + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    signal.signal(signal.SIGALRM, _on_alarm)
    with tempfile.TemporaryDirectory(prefix="loom-fuzz-") as tmp:
        workdir = Path(tmp)
        (workdir / "catalogue").symlink_to(TOPOLOGY / "catalogue")
        while True:
            index = conn.recv()
            if index is None:
                return
            conn.send(_run_one(workdir, seed, index, seconds))


def _write_reproducer(out_dir: Path, seed: int, result: dict) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    if is_surface(result["index"]):
        return _write_surface_reproducer(out_dir, seed, result)
    case = make_case(seed, result["index"])
    if not (out_dir / "catalogue").exists():
        shutil.copytree(TOPOLOGY / "catalogue", out_dir / "catalogue")
    model = out_dir / f"case-{seed}-{result['index']}.yaml"
    model.write_text(case.text, encoding="utf-8")
    model.with_suffix(".txt").write_text(
        f"outcome: {result['outcome']} after {result['seconds']:.1f}s\nbase: topology/{case.base}.yaml\n"
        f"mutations: {case.mutations}\nre-run: python -m tests.fuzz --seed {seed} --only {result['index']}\n\n{result['detail']}\n",
        encoding="utf-8")
    return model


def _write_surface_reproducer(out_dir: Path, seed: int, result: dict) -> Path:
    """The case's files in `case-<seed>-<index>/`, and the command to run on them in `.txt`."""
    case = surface_case(seed, result["index"])
    d = out_dir / f"case-{seed}-{result['index']}"
    for rel, data in case.files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    command = " ".join(a.replace("{dir}", str(d)) for a in case.args)
    d.with_suffix(".txt").write_text(
        f"outcome: {result['outcome']} after {result['seconds']:.1f}s\nsurface: {case.surface}\nmutations: {case.mutations}\n"
        f"command: loom {command}\nenv: {sorted(case.env)}\nre-run: python -m tests.fuzz --seed {seed} --only {result['index']}\n\n"
        f"{result['detail']}\n", encoding="utf-8")
    return d


@dataclass
class _Worker:
    """A forked worker and the case it is on (None: idle), with when it was sent."""

    proc: mp.Process
    conn: object
    index: int | None = None
    sent: float = 0.0

    def stop(self) -> None:
        if self.proc.is_alive():
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
            self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()


def run_campaign(n: int, seed: int = 1, start: int = 0, seconds: float = 60.0, memory_mb: int = 1536,
                 out_dir: Path = Path("fuzz-out"), progress=None, only: list[int] | None = None,
                 workers: int = 1) -> Report:
    """Run cases `start .. start+n-1` (or `only`) of `seed` on `workers` workers at once (each
    case is decided by its index alone, so the outcomes do not depend on how many); reproducers
    of failures go to `out_dir`."""
    ctx = mp.get_context("fork")
    report = Report()
    t_start = time.perf_counter()
    todo = list(only if only is not None else range(start, start + n))[::-1]  # popped from the end: in order
    pool: list[_Worker] = []

    def spawn() -> _Worker:
        conn, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(child, seed, seconds, memory_mb), daemon=True)
        proc.start()
        child.close()  # the worker's end is the worker's alone: its death then reads as EOF here
        return _Worker(proc, conn)

    def retire(w: _Worker, result: dict) -> None:
        """The worker's case ended it (hang, crash, memory): counted, and a fresh worker takes its place."""
        w.proc.kill()
        w.proc.join()
        pool.remove(w)
        record(result)

    def record(result: dict) -> None:
        report.cases += 1
        report.outcomes[result["outcome"]] += 1
        report.by_input.setdefault(input_of(seed, result["index"]), Counter())[result["outcome"]] += 1
        report.slowest = max(report.slowest, (result["seconds"], result["index"]))
        if result["outcome"] in FAILURES:
            result["reproducer"] = str(_write_reproducer(out_dir, seed, result))
            report.failures.append(result)
        if progress and report.cases % 100 == 0:
            progress(report, time.perf_counter() - t_start)

    try:
        while todo or any(w.index is not None for w in pool):
            for w in [w for w in pool if w.index is not None and time.monotonic() - w.sent > seconds + 30]:
                retire(w, {"index": w.index, "outcome": "hang", "detail": f"no answer in {seconds + 30:.0f}s", "seconds": seconds + 30})
            while len(pool) < workers and len(todo) > sum(w.index is None for w in pool):
                pool.append(spawn())
            for w in pool:
                if w.index is None and todo:
                    w.index, w.sent = todo.pop(), time.monotonic()
                    w.conn.send(w.index)
            busy = {w.conn: w for w in pool if w.index is not None}
            for conn in mp.connection.wait(list(busy), timeout=1.0):
                w = busy[conn]
                try:
                    result = conn.recv()
                except EOFError:
                    w.proc.join()
                    result = {"index": w.index, "outcome": "crash", "detail": f"worker died (exit {w.proc.exitcode})", "seconds": 0.0}
                if result["outcome"] in ("hang", "crash", "memory"):
                    retire(w, result)
                else:
                    w.index = None
                    record(result)
    finally:
        for w in pool:
            w.stop()
    report.failures.sort(key=lambda f: f["index"])
    report.seconds = time.perf_counter() - t_start
    return report
