"""Failure sets: which cables a failed link or switch takes out, and the fabric without them.

Operators name failures the way the cabling sheet names things: a cable by its ID (the switch
port it plugs into, `z0-leaf3/21`; the far end's port names the same cable), a switch by its
name (every cable on it).  `loom whatif` and the simulator's link events both resolve names here,
so a name that works in one works in the other.

The fabric "as it stands" after a failure is the same fabric with those cables gone: switches,
nodes, LIDs and GUIDs keep their identities, so the tables in force and the tables after the
failure can be compared entry for entry.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric


class FailureSpecError(ValueError):
    """A failure names something the fabric does not have; the message says what exists."""


@dataclass(frozen=True)
class FailureSet:
    cables: frozenset[int]  # rows of fabric.cables that are down
    switches: frozenset[int]  # switches that are down (all their cables are in `cables` too)
    names: tuple[str, ...]  # as the user (or the random draw) named them

    def __bool__(self) -> bool:
        return bool(self.cables)


def switch_port_cables(fabric: Fabric) -> dict[tuple[int, int], int]:
    """{(switch index, port): cable row} for every switch end of every cable."""
    c = fabric.cables
    out: dict[tuple[int, int], int] = {}
    for end in ("a", "b"):
        kind, dev, port = (getattr(c, f"{end}_{x}") for x in ("kind", "dev", "port"))
        for i in np.flatnonzero(kind == SWITCH):
            out[(int(dev[i]), int(port[i]))] = int(i)
    return out


def cables_of_switch(fabric: Fabric, sw: int) -> list[int]:
    c = fabric.cables
    on = ((c.a_kind == SWITCH) & (c.a_dev == sw)) | ((c.b_kind == SWITCH) & (c.b_dev == sw))
    return [int(i) for i in np.flatnonzero(on)]


def cable_name(fabric: Fabric, i: int) -> str:
    """The cable's ID as the cabling sheet prints it (`lower switch/port`), with its far end."""
    c = fabric.cables
    b = f"{fabric.switches[int(c.b_dev[i])].name}/{int(c.b_port[i])}"
    if c.a_kind[i] == HOST:
        p = fabric.ports[int(c.a_dev[i])]
        return f"{b} ({p.ca})"
    return f"{fabric.switches[int(c.a_dev[i])].name}/{int(c.a_port[i])} ({b})"


def parse_failures(fabric: Fabric, specs: list[str]) -> FailureSet:
    """Resolve `SWITCH` and `SWITCH/PORT` (also `SWITCH:PORT`) names into a failure set."""
    ports = switch_port_cables(fabric)
    cables: set[int] = set()
    switches: set[int] = set()
    for spec in specs:
        name, sep, port = spec.replace(":", "/").rpartition("/") if ("/" in spec or ":" in spec) else (spec, "", "")
        if name not in fabric.switch_index:
            raise FailureSpecError(f"`{spec}`: no switch named `{name}` in {fabric.name}; name a switch "
                                   f"(e.g. {fabric.switches[0].name}) or a cable as SWITCH/PORT (e.g. {_example(fabric)})")
        sw = fabric.switch_index[name]
        if not sep:
            switches.add(sw)
            cables.update(cables_of_switch(fabric, sw))
            continue
        if not port.isdigit() or (sw, int(port)) not in ports:
            used = sorted(p for (s, p) in ports if s == sw)
            raise FailureSpecError(f"`{spec}`: port {port!r} of {name} has no cable; cabled ports: {_span(used)}")
        cables.add(ports[(sw, int(port))])
    return FailureSet(frozenset(cables), frozenset(switches), tuple(specs))


def random_failures(fabric: Fabric, k: int, rng: np.random.Generator, plane: int | None = None) -> FailureSet:
    """k distinct switch-to-switch cables (leaf–spine, spine–core) drawn uniformly."""
    c = fabric.cables
    kinds = [CABLE_KINDS.index("leaf-spine"), CABLE_KINDS.index("spine-core")]
    pool = np.flatnonzero(np.isin(c.kind, kinds) & ((c.plane == plane) if plane is not None else True))
    if k > len(pool):
        raise FailureSpecError(f"--random {k}: the fabric has only {len(pool)} switch-to-switch cables")
    pick = sorted(int(i) for i in rng.choice(pool, size=k, replace=False))
    return FailureSet(frozenset(pick), frozenset(), tuple(cable_name(fabric, i) for i in pick))


def without(fabric: Fabric, failure: FailureSet) -> Fabric:
    """The fabric with the failed cables gone; every identity (names, LIDs, GUIDs) unchanged."""
    if not failure:
        return fabric
    keep = np.ones(len(fabric.cables), bool)
    keep[list(failure.cables)] = False
    cables = Cables(**{f.name: getattr(fabric.cables, f.name)[keep] for f in dataclasses.fields(Cables)})
    return dataclasses.replace(fabric, cables=cables)


def _example(fabric: Fabric) -> str:
    c = fabric.cables
    i = int(np.flatnonzero(c.a_kind == SWITCH)[0]) if (c.a_kind == SWITCH).any() else 0
    return f"{fabric.switches[int(c.b_dev[i])].name}/{int(c.b_port[i])}"


def _span(ports: list[int]) -> str:
    return ", ".join(map(str, ports[:12])) + (f" … ({len(ports)} in all)" if len(ports) > 12 else "") if ports else "none"
