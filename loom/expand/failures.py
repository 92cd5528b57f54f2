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

from .fabric import CABLE_KINDS, HOST, Cables, Fabric


class FailureSpecError(ValueError):
    """A failure names something the fabric does not have; the message says what exists."""


@dataclass(frozen=True)
class FailureSet:
    cables: frozenset[int]  # rows of fabric.cables that are down
    switches: frozenset[int]  # switches that are down (all their cables are in `cables` too)
    names: tuple[str, ...]  # as the user (or the random draw) named them

    def __bool__(self) -> bool:
        return bool(self.cables)


def cable_name(fabric: Fabric, i: int) -> str:
    """The cable's ID as the cabling sheet prints it, with its far end."""
    c = fabric.cables
    far = fabric.ports[int(c.a_dev[i])].ca if c.a_kind[i] == HOST else f"{fabric.switches[int(c.b_dev[i])].name}/{int(c.b_port[i])}"
    return f"{fabric.cable_id(i)} ({far})"


def parse_failures(fabric: Fabric, specs: list[str]) -> FailureSet:
    """Resolve names into a failure set: `SWITCH` (down, every cable), `SWITCH/PORT` or
    `SWITCH:PORT` (the cable there; either end names it), a NIC's CA name (its cable)."""
    cables: set[int] = set()
    switches: set[int] = set()
    for spec in specs:
        cables.update(parse_link(fabric, spec))
        name, port = _split(fabric, spec)
        if port is None and name in fabric.switch_index:
            switches.add(fabric.switch_index[name])
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


def _span(ports: list[int]) -> str:
    return ", ".join(map(str, ports[:12])) + (f" … ({len(ports)} in all)" if len(ports) > 12 else "") if ports else "none"


def parse_link(fabric: Fabric, a: str, b: str | None = None) -> list[int]:
    """The cables `loom sim link` names: `A:PORT` (B, if given, must be its far end), `A B`
    (every cable between two devices; with several, a port must pick one), or `A` alone (every
    cable of that device).  A device is a switch or a NIC port's CA name."""
    ends = cable_ends(fabric)
    (an, ap), (bn, bp) = _split(fabric, a), (_split(fabric, b) if b else (None, None))
    if ap is None and bp is not None:
        (an, ap), (bn, bp) = (bn, bp), (an, ap)
    if ap is not None:
        if (an, ap) not in ends:
            raise FailureSpecError(f"`{an}:{ap}` has no cable; cabled ports of {an}: {_span(_ports(ends, an))}")
        i, far = ends[(an, ap)]
        if bn is not None and (far[0] != bn or (bp is not None and far[1] != bp)):
            raise FailureSpecError(f"`{an}:{ap}` is cabled to {far[0]}:{far[1]}, not {b}")
        return [i]
    mine = sorted({i for (n, _), (i, far) in ends.items() if n == an and (bn is None or far[0] == bn)})
    if not mine:
        raise FailureSpecError(f"no cable between {an} and {bn}" if bn else f"{an} has no cables")
    if bn is not None and len(mine) > 1:
        ports = sorted(p for (n, p), (i, far) in ends.items() if n == an and far[0] == bn)
        raise FailureSpecError(f"{an} and {bn} share {len(mine)} cables (ports {_span(ports)} of {an}); "
                               f"name one as {an}:PORT")
    return mine


def _split(fabric: Fabric, spec: str) -> tuple[str, int | None]:
    name, sep, port = spec.replace("/", ":").rpartition(":") if (":" in spec or "/" in spec) else (spec, "", "")
    cas = {p.ca for p in fabric.ports}
    if name not in fabric.switch_index and name not in cas:
        raise FailureSpecError(f"`{spec}`: no switch or NIC named `{name}` in {fabric.name} "
                               f"(e.g. {fabric.switches[0].name} or {fabric.ports[0].ca})")
    if sep and not port.isdigit():
        raise FailureSpecError(f"`{spec}`: the port must be a number")
    return name, int(port) if sep else None


def cable_ends(fabric: Fabric) -> dict[tuple[str, int], tuple[int, tuple[str, int]]]:
    """{(device, port): (cable, (far device, far port))} for both ends of every cable."""
    c = fabric.cables

    def end(kind, dev, port) -> tuple[str, int]:
        if kind == HOST:
            p = fabric.ports[int(dev)]
            return p.ca, p.port
        return fabric.switches[int(dev)].name, int(port)

    out = {}
    for i in range(len(c)):
        x, y = end(c.a_kind[i], c.a_dev[i], c.a_port[i]), end(c.b_kind[i], c.b_dev[i], c.b_port[i])
        out[x], out[y] = (i, y), (i, x)
    return out


def _ports(ends: dict, name: str) -> list[int]:
    return sorted(p for (n, p) in ends if n == name)
