"""Link events on the simulated fabric: a cable pulled or put back, as on the floor.

ibsim reads console commands on its stdin (`Unlink "node"[port]`, `ReLink "node"[port]`, sent
through `loom.fabrics.infiniband.sim.console`).  Which cables are down is recorded in
`links-down.json` (`loom.push.links`; a new ibsim has them all up).

A link event is the physical world changing, not a change loom makes to the fabric: it takes no
fabric lock, so it can fall in the middle of an apply, like a real failure.
"""

from __future__ import annotations

from pathlib import Path

from loom.expand import Fabric
from loom.push.links import record_links

from .sim import console


def switch_end(fabric: Fabric, cable: int) -> tuple[str, int]:
    """(switch name, port) of a cable's upper end, the end ibsim's console names it by."""
    c = fabric.cables
    return fabric.switches[int(c.b_dev[cable])].name, int(c.b_port[cable])


def set_links(directory: Path, fabric: Fabric, cables: list[int], up: bool) -> list[str]:
    """Pull (up=False) or put back the cables through ibsim's console; returns what changed, as
    cable IDs (`loom.push.links.record_links` keeps the record)."""
    return record_links(directory, fabric, cables, up, lambda cs, u: _ibsim_links(directory, fabric, cs, u))


def _ibsim_links(directory: Path, fabric: Fabric, cables: list[int], up: bool) -> None:
    verb = "ReLink" if up else "Unlink"
    console(directory, [f'{verb} "{name}"[{port}]' for name, port in (switch_end(fabric, i) for i in cables)])

