"""Tables for a fabric that lost something, made from the tables in force: the minimal repair,
widened when it is not enough.  One function for `loom whatif`, `loom plan` and the watcher:
given the same design tables and the same failure they propose the same tables.  (Plan and
the watcher start from the design tables loom applied; `whatif`, which needs no fabric, from
the model's routing — the two differ where the applied tables kept earlier choices.)

1. The engine's `repair`: only the entries that became illegal move, then each port group is
   brought back to its as-built bound moving as few entries as it can.
2. If that fails a check the caller names (reachability, deadlock freedom, balance) — a repair
   is local, and a lost inter-zone cable can leave a zone's traffic with an exit that no longer
   leads anywhere — it is *widened*: routed afresh keeping the repair's choices wherever balance
   allows, until a routing pass moves nothing (`settled`).  More destinations move than the
   ones that used what failed; the caller reports how many.
"""

from __future__ import annotations

from typing import Callable

from .base import Tables
from .engines import get_engine
from .subnet import Subnet

FIXPOINT_ROUNDS = 8


def settled(sn: Subnet, hint: Tables | None, engine: str = "auto") -> Tables:
    """Route keeping the choices of `hint`, then again with the result as the hint until nothing
    moves: sticky routing is not idempotent in one step (a fabric far from the model needed up to
    four applies), and a plan must reach the state the next plan keeps, so one apply converges."""
    eng = get_engine(engine)
    tables = eng.route(sn, hint)
    for _ in range(FIXPOINT_ROUNDS):
        again = eng.route(sn, tables)
        if (again.lft == tables.lft).all():
            break
        tables = again
    return tables


def repair_or_widen(sn: Subnet, tables: Tables, failing: Callable[[Tables], list[str]],
                    engine: str = "auto") -> tuple[Tables, str, list[str]]:
    """`tables` made right for `sn` (the same subnet after failures): (the tables, how they were
    made — "minimal repair" or "widened (...)" —, the checks they still fail)."""
    repaired = get_engine(engine).repair(sn, tables)
    failed = failing(repaired)
    if not failed:
        return repaired, "minimal repair", []
    widened = settled(sn, repaired, engine)
    return widened, f"widened (the minimal repair fails {failed[0]})", failing(widened)
