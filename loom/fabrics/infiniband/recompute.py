"""What OpenSM's own engines change when they recompute after a failure, measured in the simulator.

The yardstick for `loom whatif` and `bench/failures.py`: OpenSM's ftree (or updn, minhop)
routes the intact fabric and the failed one (`opensm -o`, LIDs pinned to Loom's so the tables
line up), and the two are compared entry by entry on the switches still in service.  ftree
recomputes every table on a change and falls back to minhop when the tree is no longer regular;
`engine_used` shows which one actually ran.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from loom.checks.whatif import churn
from loom.expand import Fabric
from loom.render.opensm import guid2lid, tables_from_dump
from loom.routing import Tables
from loom.routing.subnet import subnet

from .sim import SimFabric


def opensm_recompute(fabric: Fabric, failed: Fabric, design: Tables, engine: str = "ftree") -> dict:
    """{entries, switches, destinations, engine_used, seconds} of OpenSM's recompute (plane of `design`)."""
    plane = design.subnet.plane
    g2l = guid2lid(design)
    top = "core" if any(s.role == "core" for s in fabric.switches) else "spine"
    out: list[Tables] = []
    used, seconds = [], 0.0
    with tempfile.TemporaryDirectory(prefix="loom-recompute-") as tmp:
        for name, f in (("intact", fabric), ("failed", failed)):
            t0 = time.perf_counter()
            with SimFabric(f, Path(tmp) / name, plane) as sim:
                extra = []
                if engine == "updn":
                    roots = Path(tmp) / "roots"
                    roots.write_text("".join(f"0x{s.guid:016x}\n" for s in f.switches if s.role == top and s.plane == plane))
                    extra = ["-a", str(roots)]
                run = sim.opensm_once(engine, engine, None, g2l, extra)
                out.append(tables_from_dump(subnet(f, plane), run.dump("opensm-lfts.dump"), engine))
                used.append(run.engine_used)
            if name == "failed":
                seconds = time.perf_counter() - t0
    return {**churn(out[0], out[1]).as_dict(), "engine_used": used[1], "seconds": round(seconds, 2)}
