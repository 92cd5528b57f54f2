"""Faults planted in forwarding tables, so every check is shown to catch what it is for."""

from __future__ import annotations

import numpy as np

from loom.routing.base import Tables
from loom.routing.subnet import TO_SWITCH


def _port(sn, a: int, b: int) -> int:
    """First port of switch row a cabled to switch row b."""
    cols = np.flatnonzero((sn.peer_kind[a] == TO_SWITCH) & (sn.peer_dev[a] == b))
    return int(cols[0])


def zone_rows(sn, zone: str, role: str) -> list[int]:
    rows = [i for i in range(sn.n) if sn.switch(i).zone == zone and sn.switch(i).role == role]
    return sorted(rows, key=lambda i: sn.switch(i).position)


def ca_on(sn, leaf: int) -> int:
    return int(sn.ca_lids[sn.ca_switch[sn.ca_lids] == leaf][0])


def plant_credit_loop(t: Tables, zone: str) -> tuple[Tables, dict]:
    """Eight LFT entries that close the credit loop l0→s0→l1→s1→l0 with CA traffic only.

    d1 (on l2) is sent l0→s0, then s0 sends it *down* to l1, which sends it up to s1 (→ l2);
    d2 (on l3) is sent l1→s1→l0→s0 (→ l3); d3 (on l0) goes l1→s1 and d4 (on l1) goes l0→s0.
    Every packet still arrives (no forwarding loop), but the channel dependencies
    s0→l1 ⇒ l1→s1 ⇒ s1→l0 ⇒ l0→s0 ⇒ s0→l1 form a cycle.
    """
    sn = t.subnet
    l0, l1, l2, l3 = zone_rows(sn, zone, "leaf")[:4]
    s0, s1 = zone_rows(sn, zone, "spine")[:2]
    d1, d2, d3, d4 = ca_on(sn, l2), ca_on(sn, l3), ca_on(sn, l0), ca_on(sn, l1)
    changes = {
        (l0, d1): _port(sn, l0, s0), (s0, d1): _port(sn, s0, l1), (l1, d1): _port(sn, l1, s1), (s1, d1): _port(sn, s1, l2),
        (l1, d2): _port(sn, l1, s1), (s1, d2): _port(sn, s1, l0), (l0, d2): _port(sn, l0, s0), (s0, d2): _port(sn, s0, l3),
        (l1, d3): _port(sn, l1, s1), (l0, d4): _port(sn, l0, s0),
    }
    return t.with_entries(changes), changes


def plant_drop(t: Tables, zone: str) -> tuple[Tables, int]:
    """A leaf forgets one CA: its entry has no route (255)."""
    sn = t.subnet
    l0, l1 = zone_rows(sn, zone, "leaf")[:2]
    d = ca_on(sn, l1)
    return t.with_entries({(l0, d): 255}), d


def plant_detour(t: Tables, zone: str) -> tuple[Tables, int]:
    """A destination on l2 still arrives from l0, but the long way: l0→s0, down to l1, up to
    s1, down to l2 (four hops where two do)."""
    sn = t.subnet
    l0, l1, l2 = zone_rows(sn, zone, "leaf")[:3]
    s0, s1 = zone_rows(sn, zone, "spine")[:2]
    d = ca_on(sn, l2)
    return t.with_entries({(l0, d): _port(sn, l0, s0), (s0, d): _port(sn, s0, l1), (l1, d): _port(sn, l1, s1),
                           (s1, d): _port(sn, s1, l2)}), d


def plant_forwarding_loop(t: Tables, zone: str) -> tuple[Tables, int]:
    """Spine s0 sends a destination back up... to a leaf that sends it to s0 again."""
    sn = t.subnet
    l0, l1 = zone_rows(sn, zone, "leaf")[:2]
    s0 = zone_rows(sn, zone, "spine")[0]
    d = ca_on(sn, l1)
    return t.with_entries({(s0, d): _port(sn, s0, l0), (l0, d): _port(sn, l0, s0)}), d


def plant_imbalance(t: Tables, zone: str, moves: int = 6) -> Tables:
    """Leaf l0 sends `moves` more destinations over its first up-port."""
    sn = t.subnet
    l0 = zone_rows(sn, zone, "leaf")[0]
    s0 = zone_rows(sn, zone, "spine")[0]
    first = _port(sn, l0, s0)
    ups = np.flatnonzero(sn.peer_kind[l0] == TO_SWITCH)
    victims = [int(d) for d in sn.ca_lids if t.lft[l0, d] in ups and t.lft[l0, d] != first][:moves]
    return t.with_entries({(l0, d): first for d in victims})


def plant_bigraph_upper_turns(t: Tables, zone: str) -> tuple[Tables, dict]:
    """Eight entries that make traffic of the upper part's VL set turn in the upper part too.

    Traffic from upper sources rides VL set 0 and may turn only in the lower part.  Planted:
    X (on u2) goes u0→d0→u1→d1→u2, turning at u1; Y (on u3) goes u1→d1→u0→d0→u3, turning at u0.
    Every packet still arrives, but on VL set 0 the dependencies u0→d0 ⇒ d0→u1 ⇒ u1→d1 ⇒
    d1→u0 ⇒ u0→d0 close a credit loop."""
    sn = t.subnet
    u0, u1, u2, u3 = zone_rows(sn, zone, "upper")[:4]
    d0, d1 = zone_rows(sn, zone, "lower")[:2]
    x, y = ca_on(sn, u2), ca_on(sn, u3)
    changes = {
        (u0, x): _port(sn, u0, d0), (d0, x): _port(sn, d0, u1), (u1, x): _port(sn, u1, d1), (d1, x): _port(sn, d1, u2),
        (u1, y): _port(sn, u1, d1), (d1, y): _port(sn, d1, u0), (u0, y): _port(sn, u0, d0), (d0, y): _port(sn, d0, u3),
    }
    return t.with_entries(changes), {"channels": {f"{sn.name(a)}/{_port(sn, a, b)} -> {sn.name(b)}"
                                                  for a, b in ((u0, d0), (d0, u1), (u1, d1), (d1, u0))}}
