"""What every switch of an Ethernet fabric must run and hold: its FRR configuration (rendered by
`loom.render.roce`) and the kernel FIB that configuration must produce — the intent that
`loom plan` compares a live fabric with and `loom apply` verifies after a reload.

The FIB intent covers Loom's destinations (NIC /31s and switch loopbacks, `roce.destinations`):
- `static` routing: the `ip route` lines of the switch's own configuration, the lowest distance
  per prefix (what staticd installs), so the pinned next hops are checked one by one;
- `bgp` routing: the ECMP next hops eBGP converges to on a fat tree (RFC 7938): every neighbour
  one layer down that reaches the destination going down, else every neighbour one layer up that
  reaches it up-then-down (`loom.routing.updown`).  A spine has no route to another spine's
  loopback, as with eBGP, where the shared spine ASN makes such paths AS loops.
Prefixes of switch-to-switch links (redistributed as connected routes unless a route-map keeps
them out) are neither required nor reported.  Pure functions: no side effects, no FRR needed.
"""

from __future__ import annotations

import ipaddress

from loom.expand import Fabric
from loom.routing import Tables, route
from loom.routing.subnet import TO_SWITCH
from loom.routing.updown import UpDown

from .roce import Link, all_switch_links, destinations, switch_config

Fib = dict[str, set[str]]  # prefix → next-hop addresses


def plane_tables(fabric: Fabric) -> list[Tables]:
    """Routing tables of every plane (one per plane, as `loom configs` renders them)."""
    return route(fabric)


def desired_configs(tables: list[Tables]) -> dict[str, dict[str, str]]:
    """Switch name → its rendered files (`frr.conf`, `zebra.conf`, ...), every plane."""
    f = tables[0].subnet.fabric
    links_of = all_switch_links(f)
    out = {}
    for t in tables:
        prefixes = destinations(t)
        for row in range(t.subnet.n):
            out[t.subnet.name(row)] = switch_config(t, row, prefixes, links_of)
    return out


def interface_names(fabric: Fabric) -> dict[tuple[int, int], str]:
    """(switch index, port) → the interface name the renderer gives that port (the FRR
    configuration names it; the live simulation names its veth ends the same)."""
    return {(sw, l.port): l.ifname for sw, links in all_switch_links(fabric).items() for l in links}


def expected_fibs(tables: list[Tables], configs: dict[str, dict[str, str]]) -> dict[str, Fib]:
    """Switch name → the kernel routes its configuration must produce (see the module doc)."""
    f = tables[0].subnet.fabric
    links_of = all_switch_links(f)
    out = {}
    for t in tables:
        if f.model.addressing.routing == "static":
            for row in range(t.subnet.n):
                name = t.subnet.name(row)
                out[name] = static_fib(configs[name]["frr.conf"])
        else:
            out.update(bgp_fibs(t, links_of))
    return out


def static_fib(config: str) -> Fib:
    """The routes staticd installs from `ip route PREFIX NEXTHOP [DISTANCE]` lines: per prefix,
    the next hops of its lowest distance (equal distances are ECMP)."""
    best: dict[str, tuple[int, set[str]]] = {}
    for line in config.splitlines():
        words = line.split()
        if len(words) < 4 or words[:2] != ["ip", "route"]:
            continue
        prefix, hop, distance = words[2], words[3], int(words[4]) if len(words) > 4 and words[4].isdigit() else 1
        d, hops = best.get(prefix, (distance, set()))
        if distance < d:
            best[prefix] = (distance, {hop})
        elif distance == d:
            best[prefix] = (d, hops | {hop})
    return {p: hops for p, (_, hops) in best.items()}


def bgp_fibs(t: Tables, links_of: dict[int, list[Link]]) -> dict[str, Fib]:
    """Per switch of one plane, the ECMP next hops of eBGP on a fat tree (up*/down*)."""
    sn = t.subnet
    ud = UpDown.of(sn)
    layer = ud.layer
    owner = {lid: int(sn.lid_switch[lid]) if sn.lid_switch[lid] >= 0 else int(sn.ca_switch[lid])
             for lid in destinations(t)}
    prefixes = destinations(t)
    out = {}
    for row in range(sn.n):
        by_port = {l.port: l for l in links_of[int(sn.switches[row])]}
        neighbours = [(int(p), int(sn.peer_dev[row, p])) for p in range(sn.max_port + 1) if sn.peer_kind[row, p] == TO_SWITCH]
        fib: Fib = {}
        for lid, prefix in prefixes.items():
            target = owner[lid]
            if target < 0 or target == row:
                continue  # not cabled, or connected / own loopback
            if ud.down[row, target]:
                hops = {by_port[p].peer_address for p, y in neighbours if layer[y] == layer[row] - 1 and ud.down[y, target]}
            elif ud.updown[row, target]:
                hops = {by_port[p].peer_address for p, y in neighbours if layer[y] == layer[row] + 1 and ud.updown[y, target]}
            else:
                continue
            if hops:
                fib[prefix] = hops
        out[sn.name(row)] = fib
    return out


def bgp_peers(fabric: Fabric) -> dict[str, set[str]]:
    """Switch name → the addresses of the BGP neighbours its sessions must be established with:
    every switch at the far end of a cable of `fabric` (none with static routing).  Given the
    fabric as it stands, a neighbour over a cable that is down is configured but not expected
    up.  The read-back counts against this, never against what the switch says it has: a switch
    whose bgpd is down reports no neighbours, and so none missing."""
    if fabric.model.addressing.routing != "bgp":
        return {s.name: set() for s in fabric.switches}
    return {fabric.switches[sw].name: {l.peer_address for l in links if l.peer_asn is not None}
            for sw, links in all_switch_links(fabric).items()}


def link_prefixes(fabric: Fabric) -> set[str]:
    """The /31s of switch-to-switch links: routes a FIB may hold or not (see the module doc)."""
    return {str(ipaddress.IPv4Network(f"{l.address}/31", strict=False))
            for links in all_switch_links(fabric).values() for l in links if l.peer_asn is not None}


def fib_differences(want: Fib, have: Fib, optional: set[str]) -> list[str]:
    """How a kernel FIB differs from the intent, one line per prefix (missing, wrong next hops,
    or a route Loom did not ask for), sorted; empty when they agree."""
    out = []
    for prefix in sorted(want.keys() | have.keys()):
        w, h = want.get(prefix), have.get(prefix)
        if w == h or (w is None and prefix in optional):
            continue
        if h is None:
            out.append(f"{prefix}: missing (want via {', '.join(sorted(w))})")
        elif w is None:
            out.append(f"{prefix}: not in the intent (via {', '.join(sorted(h))})")
        else:
            out.append(f"{prefix}: via {', '.join(sorted(h))}, want {', '.join(sorted(w))}")
    return out

