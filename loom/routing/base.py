"""The one interface every routing engine implements, and the registry that finds them by name.

OpenSM's habit: the subnet manager never knows which engine runs.  Here the checks, renderers
and push code take `Tables` and never import an engine module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol

import numpy as np

from .subnet import Subnet

NO_ROUTE = 255  # OpenSM's LFT value for an unreachable LID
#: [switch × LID] cells one chunked pass handles at once: its temporaries (a few int64 arrays of
#: this many elements) stay in the tens of MB whatever the subnet's size, so a subnet at the LID
#: limit (3,520 switches × 43,457 LIDs) is routed and checked in a few GB, not tens.
CHUNK_CELLS = 1 << 22


@dataclass(frozen=True)
class Tables:
    """Linear forwarding tables of one subnet: `lft[sw, lid]` = out port (0 = the switch itself)."""

    subnet: Subnet
    lft: np.ndarray  # uint8 [switches, max_lid + 1]
    engine: str
    warnings: tuple[str, ...] = ()  # what the engine could not route as designed (parts cut off)

    def with_entries(self, changes: dict[tuple[int, int], int]) -> "Tables":
        """A copy with some entries replaced: {(switch, lid): port}. Used to plant faults in tests."""
        lft = self.lft.copy()
        for (sw, lid), port in changes.items():
            lft[sw, lid] = port
        return Tables(self.subnet, lft, self.engine + "+edited", self.warnings)


class RoutingError(Exception):
    """The engine cannot route this fabric; the message says why and what to do."""


class Engine(Protocol):
    name: str

    def route(self, subnet: Subnet, hint: "Tables | None" = None) -> Tables:
        """Tables for the subnet.  `hint`: tables in force (another revision, or the live
        fabric), matched by switch and destination *names*; an engine keeps their choices where
        balance allows, so a change moves as few routes as it must."""
        ...

    def repair(self, subnet: Subnet, tables: Tables) -> Tables:
        """`tables` (in force on the intact fabric) made right for `subnet`, the same fabric
        with links or switches down, changing as few entries as the as-built bound allows."""
        ...


def engine_for(model) -> str:
    """The engine `auto` stands for: `bigraph` when every zone is a BiGraph, else `fattree`
    (which names any zone it cannot route)."""
    return "bigraph" if all(z.kind == "bigraph" for z in model.zones) else "fattree"


def empty_lft(subnet: Subnet) -> np.ndarray:
    return np.full((subnet.n, subnet.max_lid + 1), NO_ROUTE, dtype=np.uint8)


def lid_chunks(rows: int, lids: int) -> Iterator[slice]:
    """Slices of the LID axis of a [rows × lids] array, each at most CHUNK_CELLS cells."""
    step = max(1, CHUNK_CELLS // max(rows, 1))
    for start in range(0, lids, step):
        yield slice(start, min(start + step, lids))
