"""Multi-plane RoCE: per switch FRR and SONiC configuration, per host NIC addressing with
per-NIC source routing — all from the expanded fabric and its routing tables.

Addresses: every cable is a /31 (upper end .0, lower end .1 of the pair), every switch has a
/32 loopback, and each plane's /31s come from its own part of the pool (`plane_pool`), so a
host reaches a whole plane through one aggregate prefix.

Routing modes (`addressing.routing`):
- `static`: FRR staticd, one route per destination /31 (and loopback) with the next hop the
  routing engine pinned — each up-link carries the same number of destinations (±1) — plus,
  on leaves, an ECMP fallback for the plane aggregate through every spine at distance 250, used
  when a pinned up-link is down;
- `bgp`: eBGP (RFC 7938: ASN per leaf, one per plane's spines), `multipath-relax`,
  `maximum-paths 64`; connected /31s and loopbacks redistributed; balance is ECMP's.

Hosts: NIC port k gets its /31 and a routing table 100+k holding the plane aggregate via its
leaf; a rule `from <address> lookup 100+k` makes traffic sourced from NIC k leave on NIC k (the
multi-NIC pitfall), and the main table reaches each plane through the node's first NIC on it.
"""

from __future__ import annotations

import ipaddress
import json
from dataclasses import dataclass

from loom.expand import HOST, SWITCH, Fabric
from loom.expand.build import plane_pool
from loom.routing.base import NO_ROUTE, Tables
from loom.routing.subnet import TO_SWITCH

from .templates import render

FALLBACK_DISTANCE = 250


@dataclass(frozen=True)
class Link:
    port: int
    ifname: str  # Linux interface name (lab) — SONiC names are derived in the config_db
    address: str  # this end, /31
    peer: str  # the switch or CA at the far end
    peer_address: str
    peer_asn: int | None


def sonic_port(port: int) -> str:
    return f"Ethernet{(port - 1) * 8}"


def lab_ifname(port: int) -> str:
    return f"swp{port}"


def all_switch_links(f: Fabric) -> dict[int, list[Link]]:
    """Switch index → its cabled ports as `Link`s, by port (one pass over the cables)."""
    c = f.cables
    out: dict[int, list[Link]] = {s.index: [] for s in f.switches}
    for i in range(len(c)):
        for me, other in (("a", "b"), ("b", "a")):
            if getattr(c, f"{me}_kind")[i] != SWITCH:
                continue
            sw, port = int(getattr(c, f"{me}_dev")[i]), int(getattr(c, f"{me}_port")[i])
            ok, od = int(getattr(c, f"{other}_kind")[i]), int(getattr(c, f"{other}_dev")[i])
            peer = f.switches[od].name if ok == SWITCH else f.ports[od].ca
            asn = f.switches[od].asn if ok == SWITCH else None
            out[sw].append(Link(port, lab_ifname(port), c.address(i, me), peer, c.address(i, other), asn))
    return {sw: sorted(links, key=lambda l: l.port) for sw, links in out.items()}


def destinations(t: Tables) -> dict[int, str]:
    """Subnet id → prefix: a NIC port's /31, a switch's loopback /32."""
    sn, f = t.subnet, t.subnet.fabric
    out = {}
    for lid in range(1, sn.max_lid + 1):
        if sn.lid_port[lid] >= 0:
            hp = f.ports[int(sn.lid_port[lid])]
            out[lid] = str(ipaddress.IPv4Network(f"{hp.address}/31", strict=False))
        elif sn.lid_switch[lid] >= 0:
            out[lid] = f"{sn.switch(int(sn.lid_switch[lid])).loopback}/32"
    return out


def static_routes(t: Tables, row: int, prefixes: dict[int, str], links: dict[int, Link]) -> list[tuple[str, str]]:
    """(prefix, next hop) pinned by the routing engine for one switch; connected ones left out."""
    sn = t.subnet
    out = []
    for lid, prefix in prefixes.items():
        port = int(t.lft[row, lid])
        if port in (0, NO_ROUTE) or sn.peer_kind[row, port] != TO_SWITCH:
            continue  # own loopback, or a directly connected NIC
        out.append((prefix, links[port].peer_address))
    return out


def switch_config(t: Tables, row: int, prefixes: dict[int, str], links_of: dict[int, list[Link]]) -> dict[str, str]:
    """{"frr.conf": ..., "zebra.conf": ..., "staticd.conf"|"bgpd.conf": ..., "config_db.json": ...}"""
    sn, f = t.subnet, t.subnet.fabric
    s = sn.switch(row)
    mode = f.model.addressing.routing
    links = links_of[s.index]
    by_port = {l.port: l for l in links}
    values = dict(name=s.name, loopback=s.loopback, asn=s.asn, links=links, mode=mode,
                  neighbours=[l for l in links if l.peer_asn is not None])
    files = {"zebra.conf": render("frr/zebra.conf.j2", **values)}
    if mode == "static":
        routes = static_routes(t, row, prefixes, by_port)
        fallback = []
        if s.role == "leaf":
            aggregate = str(plane_pool(f.model, s.plane))
            fallback = [(aggregate, l.peer_address) for l in links if l.peer_asn is not None and sn.peer_kind[row, l.port] == TO_SWITCH]
        files["staticd.conf"] = render("frr/staticd.conf.j2", **values, routes=routes, fallback=fallback,
                                       distance=FALLBACK_DISTANCE)
    else:
        files["bgpd.conf"] = render("frr/bgpd.conf.j2", **values)
    files["frr.conf"] = "".join(files[k] for k in ("zebra.conf", "staticd.conf", "bgpd.conf") if k in files)
    files["config_db.json"] = json.dumps(config_db(f, s, links), indent=2, sort_keys=True) + "\n"
    return files


def config_db(f: Fabric, s, links: list[Link]) -> dict:
    db = {
        "DEVICE_METADATA": {"localhost": {"hostname": s.name, "bgp_asn": str(s.asn), "type": "LeafRouter" if s.role == "leaf" else "SpineRouter"}},
        "LOOPBACK_INTERFACE": {"Loopback0": {}, f"Loopback0|{s.loopback}/32": {}},
        "PORT": {sonic_port(l.port): {"admin_status": "up", "mtu": "9100", "speed": str(s.speed_gbps * 1000),
                                      "description": l.peer} for l in links},
        "INTERFACE": {**{sonic_port(l.port): {} for l in links}, **{f"{sonic_port(l.port)}|{l.address}/31": {} for l in links}},
        "BGP_NEIGHBOR": {l.peer_address: {"asn": str(l.peer_asn), "name": l.peer, "local_addr": l.address}
                         for l in links if l.peer_asn is not None} if f.model.addressing.routing == "bgp" else {},
    }
    from loom.qos import plan_qos

    qos = plan_qos(f.model)
    if qos is not None:
        from loom.qos.render import sonic_qos

        db.update(sonic_qos(qos, [sonic_port(l.port) for l in links]))
    return db


def host_config(f: Fabric, node: int) -> dict[str, str]:
    """systemd-networkd files per NIC port, and the same settings as an iproute2 script."""
    ports = [p for p in f.ports if p.node == node]
    gateway = _gateways(f)
    first_on_plane: dict[int, int] = {}
    nics = []
    for k, p in enumerate(ports):
        first_on_plane.setdefault(p.plane, k)
        nics.append({"ifname": p.nic if p.port == 1 else f"{p.nic}p{p.port}", "address": p.address,
                     "gateway": gateway[p.index], "table": 100 + k, "aggregate": str(plane_pool(f.model, p.plane)),
                     "main": first_on_plane[p.plane] == k})
    files = {f"10-loom-{n['ifname']}.network": render("host/networkd.network.j2", nic=n) for n in nics}
    files["loom-routes.sh"] = render("host/routes.sh.j2", node=f.nodes[node].name, nics=nics)
    return files


def _gateways(f: Fabric) -> dict[int, str]:
    c = f.cables
    return {int(c.a_dev[i]): c.address(i, "b") for i in range(len(c)) if c.a_kind[i] == HOST}


def plane_links_ok(f: Fabric) -> list[str]:
    """No cable may join two planes: every cable's ends are on the cable's plane."""
    c = f.cables
    bad = []
    for i in range(len(c)):
        planes = set()
        for end in ("a", "b"):
            k, d = int(getattr(c, f"{end}_kind")[i]), int(getattr(c, f"{end}_dev")[i])
            planes.add(f.switches[d].plane if k == SWITCH else f.ports[d].plane)
        if len(planes) > 1 or int(c.plane[i]) not in planes:
            bad.append(f"cable {i} joins planes {sorted(planes)}")
    return bad


__all__ = ["all_switch_links", "config_db", "destinations", "host_config", "plane_links_ok", "switch_config"]
