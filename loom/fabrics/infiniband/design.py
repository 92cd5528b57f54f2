"""The design tables, and the tables of the fabric as it stands made from them.

A fabric with something down is routed as the *minimal repair* of the tables of the intact
design — the function `loom whatif` judges and the watcher applies (the engine's `repair`) — so
a dead spine moves exactly the destinations it carried, and when it is back the fabric returns
to the design tables, moving those destinations back and nothing else.

Which design tables: the ones loom applied on the intact fabric, kept in the target's state
directory (`design.lfts`, with the routing key of the design they were made for in
`design.key`), while the design is unchanged; else the design routed afresh, keeping the
choices of `hint` (the tables in force) where balance allows.  An apply of a plan made with
nothing down records them (`loom.fabrics.infiniband.apply`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from loom.expand.asbuilt import AsBuilt
from loom.push.packing import digest_live
from loom.render.opensm import tables_from_dump
from loom.routing import Tables, subnet
from loom.routing.repair import repair_or_widen, settled

DESIGN_LFTS, DESIGN_KEY = "design.lfts", "design.key"


def recorded(state_dir: Path, design_key: str, design) -> Tables | None:
    """The design tables loom applied, if they were made for this design (`design_key`)."""
    lfts, key = Path(state_dir) / DESIGN_LFTS, Path(state_dir) / DESIGN_KEY
    try:
        if key.read_text().split()[0] != design_key:
            return None
        text = lfts.read_text()
        if key.read_text().split()[1] != digest_live(text):
            return None
    except (OSError, IndexError):
        return None
    return tables_from_dump(subnet(design, 0), text, "design")


def settled_route(fabric, hint: Tables) -> Tables:
    """The fabric's routing keeping the choices of `hint`, settled (`loom.routing.repair.settled`)."""
    return settled(subnet(fabric, 0), hint)


def as_it_stands(state: AsBuilt, design: Tables, failing: Callable[[Tables], list[str]],
                 engine: str = "auto") -> tuple[Tables, str, list[str]]:
    """The tables for the fabric as it stands, how they were made, and the checks they fail:
    the design's where nothing is down, else their repair (`loom.routing.repair`: minimal,
    widened if that fails a check — the function `whatif` and the watcher use)."""
    if not state.cables_down:
        return design, "design", failing(design)
    return repair_or_widen(subnet(state.fabric, 0), design, failing, engine)
