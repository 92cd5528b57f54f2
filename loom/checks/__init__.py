"""Stage 6: checks over forwarding tables. Each check is a plain function usable alone;
`check_all` runs them for every subnet and gives the verdict `loom check` exits on."""

from __future__ import annotations

from loom.routing.base import Tables

from .balance import check_balance
from .deadlock import check_deadlock
from .ebb import effective_bisection_bandwidth
from .paths import Walk
from .reachability import check_reachability


def check_tables(tables: Tables, ebb_samples: int = 200) -> dict:
    """Every check on one subnet; keys are the JSON contract of `loom check --json`."""
    walk = Walk(tables)
    reach = check_reachability(walk)
    dead = check_deadlock(walk)
    bal = check_balance(walk)
    ebb = effective_bisection_bandwidth(walk, ebb_samples) if ebb_samples else {}
    return {
        "plane": tables.subnet.plane,
        "engine": tables.engine,
        "reachable": reach.reachable,
        "deadlock_free": dead.deadlock_free,
        "cycle": dead.cycle,
        "balance": bal.as_dict(),
        "ebb": round(sum(ebb.values()) / len(ebb), 4) if ebb else None,
        "ebb_by_zone": ebb,
        "reachability": reach.as_dict(),
        "deadlock": {"channels": dead.channels, "dependencies": dead.dependencies,
                     "ca_to_ca_deadlock_free": check_deadlock(walk, "ca").deadlock_free if not dead.deadlock_free else True},
    }


__all__ = ["Walk", "check_balance", "check_deadlock", "check_reachability", "check_tables", "effective_bisection_bandwidth"]
