"""Engine `bigraph`: EFLOPS's BiGraph (seed 002, §III-B) — N switches in two parts (upper,
lower) joined as a complete bipartite graph, M <= N/2 hosts on every switch.

Paths: a destination on a switch t of the *other* part is one hop away (the direct link s→t,
the paper's deterministic cross-part path); a destination on another switch of the *same*
part goes over one switch x of the other part and turns there (two hops).  The turn switch is
spread per destination like D-mod-k: the destination in slot k of switch t (a CA on down-port
k+1, the switch's own LID in slot M) turns at x = (position(t) + k) mod N/2, so every switch's
N/2 ports to the other part carry the M+1 destinations delivered behind them plus an even share
of the same-part destinations — the exact as-built bound the balance check computes.

With a hint (the tables in force) a switch keeps its hinted turn for a destination; then
`fit_to_fabric` (asbuilt.py) makes every entry legal (`UpDown.candidates` knows the BiGraph's
legal hops) and brings every switch's group of cross-part ports to its exact bound.

Deadlock freedom is not a property of the tables alone: upper→upper traffic turns in the
lower part and lower→lower traffic in the upper part, and on one VL the two close credit loops
(the paper's Fig. 7).  EFLOPS gives each direction its own priority; Loom gives traffic the
VL set of its source's part (`loom.model.rules.zone_layers`), and `loom check` proves each VL
set's channel-dependency graph acyclic.

Cost: O(switches × LIDs), all numpy.
"""

from __future__ import annotations

import numpy as np

from loom.model.schema import BiGraph

from .asbuilt import affected_destinations, fit_to_fabric, same_ports
from .base import RoutingError, Tables, empty_lft
from .fattree import ROLE_ORDER
from .subnet import TO_SWITCH, Subnet

PARTS = ("upper", "lower")


def turn_slot(sn: Subnet, lid: int, hosts_per_switch: int) -> int:
    """Slot of a destination on its switch: a CA's down-port index (0-based), a switch's own
    LID after the last host port."""
    return hosts_per_switch if sn.lid_switch[lid] >= 0 else int(sn.ca_switch_port[lid]) - 1


class BiGraphEngine:
    name = "bigraph"

    def route(self, sn: Subnet, hint: Tables | None = None) -> Tables:
        model = sn.fabric.model
        for spec in model.zones:
            if not isinstance(spec, BiGraph):
                raise RoutingError(f"engine bigraph routes BiGraph zones only; zone {spec.name} is a {spec.kind} "
                                   "(use --engine fattree, or the default `auto`)")
        if model.inter_zone_links:
            raise RoutingError("engine bigraph routes each BiGraph on its own; the model has inter_zone_links "
                               "(fix: remove them, or model one BiGraph per fabric)")
        lft = empty_lft(sn)
        peer = np.where(sn.peer_kind == TO_SWITCH, sn.peer_dev, -1)
        part = np.array([PARTS.index(sn.switch(i).role) for i in range(sn.n)])
        pos = np.array([sn.switch(i).position for i in range(sn.n)])
        zone = np.array([sn.switch(i).zone for i in range(sn.n)])
        hosts = {z.name: z.hosts_per_switch for z in model.zones}
        port_to = {(s, int(peer[s, p])): p for s in range(sn.n) for p in np.flatnonzero(peer[s] >= 0).tolist()}
        other = {s: sorted((t for t in range(sn.n) if zone[t] == zone[s] and part[t] != part[s]), key=lambda t: pos[t])
                 for s in range(sn.n)}  # the switches of the other part, by position
        lids = [l for l in range(1, sn.max_lid + 1) if sn.lid_switch[l] >= 0 or sn.lid_port[l] >= 0]
        for lid in lids:
            t = int(sn.lid_switch[lid]) if sn.lid_switch[lid] >= 0 else int(sn.ca_switch[lid])
            if t < 0:
                continue  # a CA port with no cable: nothing can reach it
            lft[t, lid] = 0 if sn.lid_switch[lid] >= 0 else sn.ca_switch_port[lid]
            turns = other[t]
            if not turns:
                continue
            x = turns[(pos[t] + turn_slot(sn, lid, hosts[zone[t]])) % len(turns)]
            for s in range(sn.n):
                if s == t or zone[s] != zone[t]:
                    continue
                via = t if part[s] != part[t] else x
                lft[s, lid] = port_to.get((s, via), lft[s, lid])
        soft = _keep_hinted_turns(sn, lft, hint, part) if hint is not None else None
        warnings = fit_to_fabric(sn, lft, _roles(sn), np.ones(sn.max_lid + 1, np.int64), soft)
        return Tables(sn, lft, self.name, tuple(warnings))

    def repair(self, sn: Subnet, tables: Tables) -> Tables:
        """The tables in force made right for `sn` after failures: entries that became illegal
        move (a turn whose switch lost its link to the destination takes another turn switch),
        the rest stay unless balance needs them.  A lost link *between* the parts leaves its two
        switches' direct destinations unrouted (a 3-hop detour would turn in both parts on one
        VL set): reachability reports them, and whatif / watch refuse the repair."""
        lft = tables.lft.copy()
        keep = 1 + ~affected_destinations(tables, sn)  # unaffected destinations move last
        warnings = fit_to_fabric(sn, lft, _roles(sn), keep.astype(np.int64), settled=same_ports(tables.subnet, sn))
        return Tables(sn, lft, self.name + "+repair", tuple(warnings))


def _roles(sn: Subnet) -> np.ndarray:
    """[lid] ROLE_ORDER of each destination's role (9 for unused LIDs)."""
    return np.array([ROLE_ORDER[sn.lid_role(l)] if (sn.lid_switch[l] >= 0 or sn.lid_port[l] >= 0) else 9
                     for l in range(sn.max_lid + 1)])


def _keep_hinted_turns(sn: Subnet, lft: np.ndarray, hint: Tables, part: np.ndarray) -> np.ndarray:
    """Take the hint's turn switch for same-part destinations where the hint's port leads to a
    switch of the other part (matched by switch and destination names); such entries are marked
    soft: where balance needs a move, they give way first."""
    h = hint.subnet
    rows = {h.name(r): r for r in range(h.n)}
    h_lid_of = {name: l for l, name in enumerate(h.lid_names) if name is not None}
    soft = np.zeros(lft.shape, bool)
    for s in range(sn.n):
        hr = rows.get(sn.name(s))
        if hr is None:
            continue
        for lid, name in enumerate(sn.lid_names):
            if name is None or name not in h_lid_of:
                continue
            port = int(hint.lft[hr, h_lid_of[name]])
            if port == lft[s, lid] or port > sn.max_port or sn.peer_kind[s, port] != TO_SWITCH:
                continue
            t = int(sn.lid_switch[lid]) if sn.lid_switch[lid] >= 0 else int(sn.ca_switch[lid])
            if t >= 0 and t != s and part[t] == part[s] and sn.peer_kind[s, lft[s, lid]] == TO_SWITCH:
                lft[s, lid] = port
                soft[s, lid] = True
    return soft


__all__ = ["BiGraphEngine", "PARTS"]
