"""NetBox benchmark: first `loom netbox apply` of a fabric to a fresh NetBox and a no-change
`loom netbox plan`, each beside its target (issue 20: the two-zone Fire-Flyer 2, ≈1,500
devices and 3,188 cables, first apply ≤ 3 min, no-change plan ≤ 20 s on 2 cores).

Beside each time: the CPU-seconds NetBox spent on it (gunicorn and its workers, PostgreSQL and
its backends) and the floor they set, CPU-seconds / cores: no client can be faster than NetBox
doing that work with every core busy.

NetBox runs on 127.0.0.1 from the test harness's cache (`tests/netboxlab.py`; `make
netbox-cache` builds it).  Run: `make bench-netbox [FABRIC=...]` or
`.venv/bin/python bench/netbox.py [topology/fire-flyer-2.yaml]`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures  # noqa: E402
from tests.netboxlab import VERSION, NetBox  # noqa: E402

TARGETS = {"first apply": 180.0, "no-change plan": 20.0}


def _timed(env: dict, *args: str) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    r = subprocess.run([str(ROOT / ".venv/bin/loom"), "netbox", *args], env=env, capture_output=True, text=True)
    return time.perf_counter() - t0, r.returncode, r.stdout + r.stderr


def _server_cpu(nb: NetBox) -> float:
    """CPU-seconds used so far by the NetBox server: gunicorn, PostgreSQL and all their children,
    those that exited too (a PostgreSQL backend per connection, recycled gunicorn workers: their
    CPU is in their parent's cutime/cstime once reaped, where leaving it out made a step's
    figure negative)."""
    roots = {nb.procs[-1].pid, int((nb.pg.data / "postmaster.pid").read_text().split()[0])}
    tick, parent, used = os.sysconf("SC_CLK_TCK"), {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        parent[int(pid)], used[int(pid)] = int(stat[1]), sum(int(x) for x in stat[11:15]) / tick
    total = 0.0
    for pid, secs in used.items():
        p = pid
        while p > 1 and p not in roots:
            p = parent.get(p, 0)
        total += secs if p in roots else 0.0
    return total


def main(model: str) -> int:
    con = Console()
    rows, failed = [], False
    with NetBox() as nb:
        env = os.environ | nb.env()
        for name, args, ok in (("first apply", ("apply", model), (0,)), ("no-change plan", ("plan", model), (0,))):
            cpu0 = _server_cpu(nb)
            secs, code, output = _timed(env, *args)
            cpu = _server_cpu(nb) - cpu0
            last = output.strip().splitlines()[-1] if output.strip() else ""
            if code not in ok:
                con.print(output[-3000:], markup=False, highlight=False)
                failed = True
            rows.append((name, secs, TARGETS[name], cpu, code, last))
    cores = os.cpu_count() or 1
    t = Table(title=f"loom netbox on {Path(model).stem} (NetBox {VERSION} on 127.0.0.1, {cores} cores)")
    for col in ("step", "seconds", "target s", "within", "NetBox CPU-s", "floor s", "exit", "last line"):
        t.add_column(col, justify="left" if col in ("step", "last line") else "right")
    report = Figures("netbox")
    for name, secs, target, cpu, code, last in rows:
        t.add_row(name, f"{secs:.1f}", f"{target:.0f}", "yes" if secs <= target else "NO", f"{cpu:.0f}",
                  f"{cpu / cores:.0f}", str(code), last[:90])
        failed |= secs > target
        report.add(f"{Path(model).stem}: {name}", secs, "s", target=target,
                   note=f"exit {code}; NetBox used {cpu:.0f} CPU-s, a floor of {cpu / cores:.0f} s on {cores} cores")
    con.print(t)
    con.print(report.table())
    report.save()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "topology/fire-flyer-2.yaml")))
