"""The watcher's light discovery: after a trap, ask only the switches that reported a link-state
change for the state of their cabled ports (one SMP per port), not the whole fabric.

OpenSM logs each trap it receives ("Reporting Urgent Notice "Link state change" from switch LID
…, GUID 0x…"); the switch at either end of a cable that fails or comes back sends one.  A
full `ibnetdiscover` of a two-zone fabric costs 0.4–0.9 s and 1,700 nodes' worth of SMPs; the
ports of two switches cost ~80 SMPs.  A port is up when Active (the SM has brought it into
service) and down when Down; Init and Armed are on the way up, not yet an answer (the SM's
next sweep activates them).  What a port-state query cannot see — a cable moved to another
port — the watcher's periodic full discovery catches.
"""

from __future__ import annotations

import re

from loom.expand import Fabric
from loom.expand.fabric import SWITCH

from loom.push.errors import TargetError
from loom.routing.subnet import TO_SWITCH
from .qos_readback import directed_routes

DOWN, ACTIVE = 1, 4  # PortInfo PortState (2 init, 3 armed: on the way up)
TRAP = re.compile(rb'"Link state change" from switch LID \d+, GUID 0x([0-9a-fA-F]+)')


def trapped_guids(log: bytes) -> set[int]:
    """GUIDs of the switches whose link-state-change traps OpenSM logged in `log`."""
    return {int(g, 16) for g in TRAP.findall(log)}


def cable_states(target, fabric: Fabric, sn, guids: set[int], rounds: int = 3) -> dict[int, tuple[int, int]]:
    """{cable: (PortState, switch GUID)} for every cable with an end on one of the switches
    `guids` (that end's state; a cable between two of them appears once), read through
    `target` by directed route over `sn` (the fabric as the watcher believes it stands).

    A route may cross the very link that failed (it is not known yet): routes never take a
    link between two switches that trapped (both ends of a failed link trap), and a switch
    whose query got no answer is asked again by a route avoiding the switches the failed route
    passed through (a switch that died sends no trap; its neighbours do).
    A trapping switch that no route reaches (a spine whose every link went down at once) is
    answered for by the far ends of its cables, asked in the next round (its neighbours trap
    too, not all in the same sweep): asking it again, then discovering the whole fabric, cost
    a two-zone spine-down event ~1.7 s.  Raises KeyError for
    a GUID that is not a switch of `sn`, TargetError if a switch stays unanswered after
    `rounds` — the caller then runs a full discovery."""
    rows = {sn.switch(r).guid: r for r in range(sn.n)}
    trapped = {rows[guid] for guid in guids}
    ends = _cable_ends(fabric, sn, trapped)
    ports: dict[int, list[int]] = {}
    for row, port in ends:
        ports.setdefault(row, []).append(port)
    answers: dict[int, dict[str, int]] = {}
    shunned: set[int] = set()  # switches a failed route passed through
    silent: set[int] = set()  # switches that did not answer
    unknown = set(ends.values())  # cables no end of which answered yet
    for _ in range(rounds):
        paths, _ = directed_routes(sn, target.sm_ca(), lambda r, n: r in shunned or (r in trapped and n in trapped))
        todo = [row for row in ports if row not in answers and any(ends[(row, p)] in unknown for p in ports[row])]
        if any(row not in paths for row in todo):  # shunning the transits cut them off: pass all but the silent
            paths = directed_routes(sn, target.sm_ca(), lambda r, n: r in silent or (r in trapped and n in trapped))[0] | paths
        jobs = [{"key": str(row), "path": paths[row], "states": sorted(ports[row])} for row in todo if row in paths]
        answers |= {int(a["key"]): a["states"] for a in target.smp(jobs, "the port-state query", every=False)}
        unknown -= {cable for (row, _), cable in ends.items() if row in answers}
        if not unknown:
            return {cable: (answers[row][str(port)], sn.switch(row).guid) for (row, port), cable in ends.items()
                    if row in answers}
        missing = [row for row in todo if row not in answers]
        silent |= set(missing)
        shunned |= silent | {hop for row in missing if row in paths for hop in _transit(sn, target.sm_ca(), paths[row])}
        # a switch that died answers nothing; the far ends of its cables say they are down (its
        # neighbours trap too, but not all in the same sweep): ask them as well
        far = {int(sn.peer_dev[row, port]) for (row, port), cable in ends.items()
               if cable in unknown and sn.peer_kind[row, port] == TO_SWITCH}
        for end, cable in _cable_ends(fabric, sn, far - set(ports)).items():
            if cable in unknown:
                ends[end] = cable
                ports.setdefault(end[0], []).append(end[1])
    raise TargetError(f"the port-state query: no route reached {', '.join(sn.name(r) for r in missing)}")


def _cable_ends(fabric: Fabric, sn, rows: set[int]) -> dict[tuple[int, int], int]:
    """{(switch row, port): cable} for every cable with an end on one of the switches `rows`."""
    c = fabric.cables
    ends = {}
    for row in rows:
        index = sn.switch(row).index
        for side in ("a", "b"):
            kind, dev, port = (getattr(c, f"{side}_{f}") for f in ("kind", "dev", "port"))
            for cable in ((kind == SWITCH) & (dev == index) & (c.plane == sn.plane)).nonzero()[0].tolist():
                ends[(row, int(port[cable]))] = cable
    return ends


def _transit(sn, sm_ca: str, path: str) -> list[int]:
    """The switches a directed route passes through before its last one (not the SM's own)."""
    hops = [int(p) for p in path.split(",")[2:]]
    sm = next(p for p in sn.fabric.ports if p.ca == sm_ca and p.plane == sn.plane)
    row, out = int(sn.ca_switch[sm.lid]), []
    for port in hops[:-1]:
        row = int(sn.peer_dev[row, port])
        out.append(row)
    return out
