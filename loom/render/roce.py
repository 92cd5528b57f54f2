"""Multi-plane RoCE: per switch FRR and SONiC configuration, per host NIC addressing with
per-NIC source routing and the lossless settings — all from the expanded fabric (and, for
static routing, its routing tables).

One port naming everywhere: SONiC's `EthernetN` (`port_name`, `loom.render.sonic`) in
frr.conf, config_db.json and the namespace lab's interfaces.

Addresses: every cable is a /31 (upper end .0, lower end .1 of the pair), every switch has a
/32 loopback, and each plane's /31s come from its own part of the pool (`plane_pool`), so a
host reaches a whole plane through one aggregate prefix.

Routing modes (`addressing.routing`):
- `static`: FRR staticd, one route per destination /31 (and loopback) with the next hop the
  routing engine pinned — each up-link carries the same number of destinations (±1) — plus,
  on leaves, an ECMP fallback for the plane aggregate through every spine at distance 250, used
  when a pinned up-link is down;
- `bgp`: eBGP (RFC 7938: ASN per leaf, one per plane's spines), one peer-group per neighbour
  role (`remote-as external`, BFD), `multipath-relax`, `maximum-paths 64`; a route-map lets
  only the switch's loopback and its hosts' /31s out of `redistribute connected`, and another
  accepts and sends only loopbacks and host subnets, so fabric /31s never enter BGP.

Hosts: NIC port k gets its /31, the host MTU and a routing table 100+k holding the plane
aggregate via its leaf; a rule `from <address> lookup 100+k` makes traffic sourced from NIC k
leave on NIC k (the multi-NIC pitfall), and the main table reaches each plane through the
node's first NIC on it.  `mlnx_qos.sh` sets DSCP trust, PFC, ETS, the CNP DSCP and RoCE's
ToS, the same priorities the switches run (`loom.checks.roce_qos` proves they agree).

Cost: `RoceConfigs` does the fabric-wide work once (links, gateways, cable lengths, QoS);
each device's files then cost O(its ports) — the 32,768-GPU fabric's ~45,000 files in well
under a minute (bench/configs.py).
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatch
from functools import cached_property

import numpy as np

from loom.expand import HOST, SWITCH, Fabric, Switch
from loom.expand.build import plane_pool
from loom.qos.lossless import Lossless, dwrr_weights, lossless_plan, roce_plan
from loom.qos.plan import QosPlan
from loom.routing.base import NO_ROUTE, Tables
from loom.routing.subnet import TO_SWITCH

from .cabling import cable_lengths
from .sonic import SonicPort, config_db_json, port_entry, port_name, qos_tables
from .templates import render

FALLBACK_DISTANCE = 250


@dataclass(frozen=True)
class Link:
    port: int
    ifname: str  # SONiC name (`port_name`): the same in frr.conf, config_db.json and the lab
    address: str  # this end, /31
    peer: str  # the switch or CA at the far end
    peer_address: str
    peer_asn: int | None
    peer_role: str  # leaf, spine, core, upper, lower — or "host"
    length_m: int  # cable length (CABLE_LENGTH, PFC headroom)
    speed_gbps: int


def _ntoa(x: int) -> str:
    return socket.inet_ntoa(struct.pack("!I", x))


def all_switch_links(f: Fabric, switches: set[int] | None = None) -> dict[int, list[Link]]:
    """Switch index → its cabled ports as `Link`s, by port (one pass over the cables); with
    `switches`, only those switches' (and only their cables measured)."""
    c = f.cables
    rows = np.arange(len(c))
    if switches is not None:
        want = np.array(sorted(switches), dtype=c.a_dev.dtype)
        rows = np.flatnonzero(((c.a_kind == SWITCH) & np.isin(c.a_dev, want)) | ((c.b_kind == SWITCH) & np.isin(c.b_dev, want)))
    lengths = dict(zip(rows.tolist(), cable_lengths(f, rows)))
    addr = {"a": {i: _ntoa(int(c.subnet[i]) + 1) for i in rows.tolist()}, "b": {i: _ntoa(int(c.subnet[i])) for i in rows.tolist()}}
    cols = {k: getattr(c, k).tolist() for k in ("a_kind", "a_dev", "a_port", "b_kind", "b_dev", "b_port", "speed_gbps")}
    out: dict[int, list[Link]] = {s.index: [] for s in f.switches if switches is None or s.index in switches}
    for i in rows.tolist():
        for me, other in (("a", "b"), ("b", "a")):
            sw, port = cols[f"{me}_dev"][i], cols[f"{me}_port"][i]
            if cols[f"{me}_kind"][i] != SWITCH or sw not in out:
                continue
            ok, od = cols[f"{other}_kind"][i], cols[f"{other}_dev"][i]
            peer = f.switches[od] if ok == SWITCH else None
            out[sw].append(Link(port, port_name(f.switches[sw], port), addr[me][i], peer.name if peer else f.ports[od].ca,
                                addr[other][i], peer.asn if peer else None, peer.role if peer else "host", lengths[i],
                                cols["speed_gbps"][i]))
    return {sw: sorted(links, key=lambda l: l.port) for sw, links in out.items()}


def destinations(t: Tables) -> dict[int, str]:
    """Subnet id → prefix: a NIC port's /31, a switch's loopback /32."""
    sn, f = t.subnet, t.subnet.fabric
    out = {}
    for lid in range(1, sn.max_lid + 1):
        if sn.lid_port[lid] >= 0:
            hp = f.ports[int(sn.lid_port[lid])]
            out[lid] = _slash31(hp.address)
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


def peer_group(role: str) -> str:
    """BGP peer-group of the neighbours of one role, e.g. `TO-SPINE`."""
    return f"TO-{role.upper()}"


def _slash31(address: str) -> str:
    """The /31 an address is on, e.g. 10.0.0.13 → 10.0.0.12/31."""
    return f"{_ntoa(struct.unpack('!I', socket.inet_aton(address))[0] & ~1)}/31"


class RoceConfigs:
    """Every device's files of an Ethernet fabric.  `tables` (one per plane) are needed only for
    static routing; the fabric-wide inputs are computed once, on first use."""

    def __init__(self, f: Fabric, tables: list[Tables] | None = None, switches: set[int] | None = None) -> None:
        self.f = f
        self.mode = f.model.addressing.routing
        self.tables = {t.subnet.plane: t for t in tables or []}
        self.switches = switches  # None: all; else the only switches whose files will be asked for

    @cached_property
    def links(self) -> dict[int, list[Link]]:
        return all_switch_links(self.f, self.switches)

    @cached_property
    def qos(self) -> QosPlan:
        return roce_plan(self.f.model)

    @cached_property
    def lossless(self) -> Lossless:
        return lossless_plan(self.qos, self.f.model.qos.cnp_dscp if self.f.model.qos else 48)

    @cached_property
    def _plane_pool(self) -> dict[int, str]:
        return {p: str(plane_pool(self.f.model, p)) for p in range(self.f.planes)}

    @cached_property
    def _rows(self) -> dict[int, tuple[Tables, int]]:
        return {int(t.subnet.switches[r]): (t, r) for t in self.tables.values() for r in range(t.subnet.n)}

    @cached_property
    def _prefixes(self) -> dict[int, dict[int, str]]:
        return {p: destinations(t) for p, t in self.tables.items()}

    @cached_property
    def _gateways(self) -> dict[int, str]:
        """NIC port index → the leaf's address on its /31."""
        c = self.f.cables
        host = (c.a_kind == HOST).nonzero()[0]
        return dict(zip(c.a_dev[host].tolist(), (_ntoa(s) for s in c.subnet[host].tolist())))

    @cached_property
    def _ports_of(self) -> dict[int, list]:
        out: dict[int, list] = {}
        for p in self.f.ports:
            out.setdefault(p.node, []).append(p)
        return out

    # ------------------------------------------------------------------ switches
    def switch(self, s: Switch) -> dict[str, str]:
        """{"zebra.conf", "staticd.conf" | "bgpd.conf" + "bfdd.conf", "frr.conf", "config_db.json"}"""
        return render_switch(self.switch_inputs(s))

    def switch_inputs(self, s: Switch) -> list[tuple[str, str | None, dict]]:
        """Everything one switch's files are made from, before any template runs: (file, template,
        its values) per FRR file, then ("config_db.json", None, the config_db tables).  Rendering
        is a function of these alone, so equal inputs give identical files — which lets `loom diff`
        render only the switches a change reaches (`loom.render.roce_diff`)."""
        links = self.links[s.index]
        values = dict(name=s.name, loopback=s.loopback, asn=s.asn, links=links, mode=self.mode)
        inputs: list[tuple[str, str | None, dict]] = [("zebra.conf", "frr/zebra.conf.j2", values)]
        if self.mode == "static":
            if s.plane not in self.tables:
                raise ValueError(f"{s.name}: static routes need the routing tables of plane {s.plane}")
            t, row = self._rows[s.index]
            routes = static_routes(t, row, self._prefixes[s.plane], {l.port: l for l in links})
            fallback = []
            if s.role == "leaf":
                aggregate = self._plane_pool[s.plane]
                fallback = [(aggregate, l.peer_address) for l in links
                            if l.peer_asn is not None and t.subnet.peer_kind[row, l.port] == TO_SWITCH]
            inputs.append(("staticd.conf", "frr/staticd.conf.j2",
                           dict(values, routes=routes, fallback=fallback, distance=FALLBACK_DISTANCE)))
        else:
            neighbours = [l for l in links if l.peer_asn is not None]
            groups = sorted({peer_group(l.peer_role) for l in neighbours})
            hosts = [_slash31(l.address) for l in links if l.peer_role == "host"]
            inputs.append(("bgpd.conf", "frr/bgpd.conf.j2",
                           dict(values, neighbours=neighbours, groups=groups, group_of=peer_group, hosts=hosts,
                                loopback_pool=self.f.model.addressing.loopback_pool, plane_pool=self._plane_pool[s.plane])))
            inputs.append(("bfdd.conf", "frr/bfdd.conf.j2", {}))
        inputs.append(("config_db.json", None, self.config_db(s)))
        return inputs

    def config_db(self, s: Switch) -> dict:
        links = self.links[s.index]
        ports = [SonicPort(l.ifname, l.port, l.speed_gbps, l.length_m, l.peer) for l in links]
        mtu = self.lossless.switch_mtu
        return {
            "DEVICE_METADATA": {"localhost": {"hostname": s.name, "bgp_asn": str(s.asn), "hwsku": s.model,
                                              "type": "LeafRouter" if s.role == "leaf" else "SpineRouter",
                                              "docker_routing_config_mode": "split"}},
            "LOOPBACK_INTERFACE": {"Loopback0": {}, f"Loopback0|{s.loopback}/32": {}},
            "PORT": {p.name: port_entry(s, p, mtu) for p in ports},
            "INTERFACE": {**{l.ifname: {} for l in links}, **{f"{l.ifname}|{l.address}/31": {} for l in links}},
            "BGP_NEIGHBOR": {l.peer_address: {"asn": str(l.peer_asn), "name": l.peer, "local_addr": l.address}
                             for l in links if l.peer_asn is not None} if self.mode == "bgp" else {},
            **qos_tables(self.qos, self.lossless, ports),
        }

    # ------------------------------------------------------------------ hosts
    def host(self, node: int) -> dict[str, str]:
        """systemd-networkd files per NIC port, the same settings as an iproute2 script, and the
        NICs' RoCE QoS (`mlnx_qos.sh`)."""
        ports = self._ports_of.get(node, [])
        first_on_plane: dict[int, int] = {}
        nics = []
        for k, p in enumerate(ports):
            first_on_plane.setdefault(p.plane, k)
            nics.append({"ifname": host_ifname(p), "address": p.address, "gateway": self._gateways[p.index],
                         "table": 100 + k, "aggregate": self._plane_pool[p.plane],
                         "main": first_on_plane[p.plane] == k, "mtu": self.lossless.host_mtu})
        name = self.f.nodes[node].name
        files = {f"10-loom-{n['ifname']}.network": render("host/networkd.network.j2", nic=n) for n in nics}
        files["loom-routes.sh"] = render("host/routes.sh.j2", node=name, nics=nics)
        files["mlnx_qos.sh"] = mlnx_qos(self.qos, self.lossless, name,
                                        [(host_ifname(p), p.index in self._lower) for p in ports])
        return files

    @cached_property
    def _lower(self) -> set[int]:
        return lower_part_ports(self.f)


    # ------------------------------------------------------------------ every device
    def files(self, devices: list[Switch | int]) -> Iterator[tuple[str, dict[str, str]]]:
        """(`switches/<name>` or `hosts/<name>`, its files) for each device, in order."""
        for d in devices:
            if isinstance(d, Switch):
                yield f"switches/{d.name}", self.switch(d)
            else:
                yield f"hosts/{self.f.nodes[d].name}", self.host(d)


def render_switch(inputs: list[tuple[str, str | None, dict]]) -> dict[str, str]:
    """One switch's files from its `RoceConfigs.switch_inputs`; frr.conf is the FRR files joined."""
    files = {name: render(template, **values) for name, template, values in inputs if template}
    files["frr.conf"] = "".join(files.values())
    files.update((name, config_db_json(values)) for name, template, values in inputs if not template)
    return files


def selected(f: Fabric, pattern: str = "*") -> list[Switch | int]:
    """The switches, then the cabled nodes (by index), whose names match a glob."""
    cabled = {p.node for p in f.ports}
    return [s for s in f.switches if fnmatch(s.name, pattern)] + \
        [n.index for n in f.nodes if n.index in cabled and fnmatch(n.name, pattern)]


def lower_part_ports(f: Fabric) -> set[int]:
    """NIC ports cabled to a BiGraph's lower part: their RoCE traffic takes the lower part's
    priority (`loom.qos.plan.ClassQos.part_tc`)."""
    c = f.cables
    host = (c.a_kind == HOST).nonzero()[0]
    return {int(c.a_dev[i]) for i in host if f.switches[int(c.b_dev[i])].role == "lower"}


def host_ifname(p) -> str:
    """A host NIC port's interface (the live simulation names its veth end the same)."""
    return p.nic if p.port == 1 else f"{p.nic}p{p.port}"


def mlnx_qos(plan: QosPlan, ll: Lossless, node: str, nics: list[tuple[str, bool]]) -> str:
    """The NICs' side of the lossless set, in the switches' priorities: DSCP trust, PFC on the
    lossless priorities, ETS with the classes' weights (the CNP priority strict), ECN on the
    lossless priorities, CNPs marked with the CNP DSCP, RoCE traffic with the RoCE DSCP — on a
    NIC cabled to a BiGraph's lower part (`nics`: (interface, lower?)), the lower part's."""
    pct = dwrr_weights(plan)

    def tos(lower: bool) -> int | None:
        dscp = ll.part_roce_dscp if lower and ll.part_roce_dscp is not None else ll.roce_dscp
        return None if dscp is None else dscp << 2

    return render("host/mlnx_qos.sh.j2", node=node, nics=[{"name": n, "tos": tos(lower)} for n, lower in nics],
                  pfc=list(ll.pfc), cnp_dscp=ll.cnp_dscp, pfc_vector=",".join("1" if t in ll.pfc else "0" for t in range(8)),
                  tsa=",".join("strict" if t == ll.cnp_tc else "ets" for t in range(8)),
                  tcbw=",".join(str(pct.get(t, 0)) for t in range(8)))


def switch_config(t: Tables, row: int, *_compat) -> dict[str, str]:
    """One switch's files (what `RoceConfigs.switch` gives), for callers holding one plane's
    tables; the prefixes and links older callers pass are computed here."""
    f = t.subnet.fabric
    s = t.subnet.switch(row)
    return RoceConfigs(f, [t], {s.index}).switch(s)


def host_config(f: Fabric, node: int) -> dict[str, str]:
    """One host's files (what `RoceConfigs.host` gives; kept for callers rendering a few hosts)."""
    return RoceConfigs(f).host(node)


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


__all__ = ["Link", "RoceConfigs", "all_switch_links", "selected", "destinations", "host_config", "host_ifname", "mlnx_qos",
           "peer_group", "plane_links_ok", "port_name", "render_switch", "switch_config"]
