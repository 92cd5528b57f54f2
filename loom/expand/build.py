"""Expansion `Model → Fabric`, written as an ordered list of named steps (netlab's habit).

    1. switches     every zone's switch layers, once per plane
    2. inter_zone   links joining zones, on the chosen leaves' first free down-ports
    3. nodes        node groups placed on leaves (spread or contiguous), NIC ports cabled
    4. identities   GUIDs and LIDs (InfiniBand); loopbacks, ASNs, /31s (Ethernet)
    5. layout       rows, racks and rack units
    6. names        every switch, node, NIC and rack name safe and unique (`names.py`)

Every step reads and extends one `Draft`; `expand` freezes it into a `Fabric`.  The order of
everything is fixed by the model's order, so the same model gives a byte-identical fabric.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import numpy as np

from loom.model.errors import ModelError, Problem
from loom.model.rules import node_name
from loom.model.schema import SPEEDS_GBPS, Model

from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric, HostPort, Node, Switch
from .layout import place_racks
from .names import check_names
from .topologies import build_zone

OUI = 0x0002C9  # Mellanox/NVIDIA OUI, the top 24 bits of every GUID Loom makes


@dataclass
class Draft:
    model: Model
    switches: list[dict] = field(default_factory=list)
    edge: dict[tuple[int, str], list[int]] = field(default_factory=dict)  # (plane, zone) → switch indices
    used: dict[tuple[int, str], np.ndarray] = field(default_factory=dict)  # [edge switch, down-port] occupied
    pointer: dict[tuple[int, str], int] = field(default_factory=dict)  # round-robin position
    cables: list[tuple] = field(default_factory=list)
    nodes: list[dict] = field(default_factory=list)
    ports: list[dict] = field(default_factory=list)
    racks: list[str] = field(default_factory=list)
    subnets: np.ndarray | None = None  # /31 base per cable (Ethernet)
    policy_port: dict[int, tuple[int, int]] = field(default_factory=dict)  # pinned host port → (switch, port) by policy

    def zone(self, name: str):
        return next(z for z in self.model.zones if z.name == name)

    def take_port(self, plane: int, zone: str, contiguous: bool, avoid: set[int] = frozenset()) -> tuple[int, int]:
        """Next free node-facing port in `zone` of `plane` → (switch index, port number).

        Spread: round-robin from where the previous port went, skipping full switches and the
        switches in `avoid` (a node's other ports in this zone) while others are free.
        Contiguous: the first switch with a free port.
        """
        key = (plane, zone)
        occupied = self.used[key]
        free = np.flatnonzero(~occupied.all(axis=1))
        if contiguous:
            k = int(free[0])
        else:
            order = np.concatenate([free[free >= self.pointer[key]], free[free < self.pointer[key]]])
            k = next((int(c) for c in order if c not in avoid), int(order[0]))
            self.pointer[key] = (k + 1) % len(occupied)
        return self.take_on(plane, zone, k)

    def take_on(self, plane: int, zone: str, leaf: int, loc: tuple = ()) -> tuple[int, int]:
        """The lowest free node-facing port of edge switch `leaf` → (switch index, port number)."""
        occupied = self.used[(plane, zone)][leaf]
        free = np.flatnonzero(~occupied)
        if len(free) == 0:
            name = self.switches[self.edge[(plane, zone)][leaf]]["name"]
            raise ModelError("", [Problem("", f"leaf {name} has no free node-facing port left",
                                          "pin fewer nodes or inter-zone links to it, or free a port", loc=loc)])
        occupied[free[0]] = True
        return self.edge[(plane, zone)][leaf], int(free[0]) + 1


def _switch_name(model: Model, pattern: str, **fields) -> str:
    if model.planes and "{plane}" not in pattern:
        pattern = "p{plane}-" + pattern
    return pattern.format(**fields)


def step_switches(d: Draft) -> None:
    m = d.model
    for plane in range(m.plane_count):
        for z in m.zones:
            sm = m.switch_models[z.switch_model]
            local = build_zone(z)
            base = len(d.switches)
            for ls in local.switches:
                pattern = getattr(m.naming, "bigraph" if ls.role in ("upper", "lower") else ls.role)
                name = _switch_name(m, pattern, zone=z.name, plane=plane, pod=ls.pod, index=ls.position, part=ls.role)
                d.switches.append(dict(index=len(d.switches), name=name, role=ls.role, zone=z.name, plane=plane, pod=ls.pod,
                                       position=ls.position, edge=ls.edge, model=z.switch_model, ports=sm.ports,
                                       speed_gbps=SPEEDS_GBPS[sm.speed]))
            speed = SPEEDS_GBPS[sm.speed]
            for c in local.cables:
                d.cables.append((SWITCH, base + c.a, c.a_port, SWITCH, base + c.b, c.b_port, CABLE_KINDS.index(c.kind), plane, speed))
            d.edge[(plane, z.name)] = [base + i for i in local.edge]
            d.used[(plane, z.name)] = np.zeros((len(local.edge), z.edge_down), dtype=bool)
            d.pointer[(plane, z.name)] = 0


def step_inter_zone(d: Draft) -> None:
    m = d.model
    for plane in range(m.plane_count):
        for link in m.inter_zone_links:
            ends = []
            for e in (link.a, link.b):
                n = d.zone(e.zone).edge_switches
                leaves = e.leaves if e.leaves is not None else [n - 1 - (i % n) for i in range(link.count)]
                ends.append(leaves)
            for la, lb in zip(*ends):
                loc = ("inter_zone_links", m.inter_zone_links.index(link))
                pa = d.take_on(plane, link.a.zone, la, loc)
                pb = d.take_on(plane, link.b.zone, lb, loc)
                speed = d.switches[pa[0]]["speed_gbps"]
                d.cables.append((SWITCH, pa[0], pa[1], SWITCH, pb[0], pb[1], CABLE_KINDS.index("inter-zone"), plane, speed))


def port_targets(m: Model, group, nports: int) -> list[tuple[int, str]]:
    """(plane, zone) for each of a node's NIC ports, in NIC order (see the schema's rules)."""
    if m.planes:
        per = nports // m.planes.count
        if m.planes.nic_mapping == "round-robin":
            return [(j % m.planes.count, group.zones[0]) for j in range(nports)]
        return [(j // per, group.zones[0]) for j in range(nports)]
    return [(0, group.zones[j % len(group.zones)]) for j in range(nports)]


def step_nodes(d: Draft) -> None:
    """Place every node.  A pinned node first takes its policy ports like any other node (so
    nobody after it shifts), those ports are freed at the end, and it is cabled to the first
    free port of each leaf it is pinned to."""
    m = d.model
    holes: list[tuple[int, str, int, int]] = []  # (plane, zone, edge, port) reserved for pinned nodes
    pinned: list[tuple[int, int, str, int, tuple]] = []  # (cable, host port, zone, leaf, YAML loc)
    for gi, g in enumerate(m.node_groups):
        nt = m.node_types[g.node_type]
        nic_ports = [(nic, p) for nic in nt.nics for p in range(1, nic.ports + 1)]
        targets = port_targets(m, g, len(nic_ports))
        for i in range(g.count):
            name = node_name(g, i)
            node = len(d.nodes)
            d.nodes.append(dict(index=node, name=name, group=g.name, role=g.role, node_type=g.node_type, zones=tuple(g.zones)))
            taken: dict[tuple[int, str], set[int]] = {}
            pins = g.pinned.get(name)
            for j, ((nic, p), (plane, zone)) in enumerate(zip(nic_ports, targets)):
                avoid = taken.setdefault((plane, zone), set())
                sw, port = d.take_port(plane, zone, g.placement == "contiguous", avoid)
                edge = d.switches[sw]["edge"]
                avoid.add(edge)
                hp = len(d.ports)
                speed = SPEEDS_GBPS[nic.speed]
                d.ports.append(dict(index=hp, node=node, nic=nic.name, ca=f"{name}-{nic.name}", port=p, plane=plane,
                                    zone=zone, speed_gbps=speed))
                if pins:
                    holes.append((plane, zone, edge, port))
                    d.policy_port[hp] = (sw, port)
                    pinned.append((len(d.cables), hp, zone, pins[j], ("node_groups", gi, "pinned", name)))
                d.cables.append((HOST, hp, p, SWITCH, sw, port, CABLE_KINDS.index("host"), plane, speed))
    for plane, zone, edge, port in holes:
        d.used[(plane, zone)][edge, port - 1] = False
    for ci, hp, zone, leaf, loc in pinned:
        c = list(d.cables[ci])
        c[4], c[5] = d.take_on(c[7], zone, leaf, loc)
        d.cables[ci] = tuple(c)


def step_identities(d: Draft) -> None:
    m = d.model
    d.subnets = np.zeros(len(d.cables), dtype=np.uint32)
    if m.technology == "infiniband":
        ca_seq: dict[str, int] = {}
        next_lid = [1] * m.plane_count
        for hp in d.ports:
            seq = ca_seq.setdefault(hp["ca"], len(ca_seq) + 1)
            hp["ca_guid"] = (OUI << 40) | (0x01 << 32) | (seq << 4)
            hp["guid"] = hp["ca_guid"] + hp["port"]
            hp["lid"] = next_lid[hp["plane"]]
            next_lid[hp["plane"]] += 1
            hp["address"] = None
        for s in d.switches:
            s["guid"] = (OUI << 40) | (0x02 << 32) | (s["index"] + 1)
            s["lid"] = next_lid[s["plane"]]
            next_lid[s["plane"]] += 1
            s["asn"] = s["loopback"] = None
    else:
        a = m.addressing
        lo = int(ipaddress.IPv4Network(a.loopback_pool).network_address)
        p2p = int(ipaddress.IPv4Network(a.p2p_pool).network_address)
        for s in d.switches:
            s["guid"] = s["lid"] = 0
            s["loopback"] = str(ipaddress.IPv4Address(lo + 1 + s["index"]))
            if s["role"] in ("leaf", "upper", "lower"):
                s["asn"] = a.leaf_asn_base + s["edge"]
            elif s["role"] == "spine":
                s["asn"] = a.spine_asn + (s["pod"] or 0)
            else:
                s["asn"] = a.core_asn
        d.subnets = plane_subnets(m, np.array([c[7] for c in d.cables], dtype=np.int64), p2p)
        host_cable = {c[1]: i for i, c in enumerate(d.cables) if c[0] == HOST}
        for hp in d.ports:
            hp["ca_guid"] = hp["guid"] = hp["lid"] = 0
            hp["address"] = str(ipaddress.IPv4Address(int(d.subnets[host_cable[hp["index"]]]) + 1))


def plane_pool(model: Model, plane: int) -> ipaddress.IPv4Network:
    """The part of the p2p pool a plane's /31s come from: the pool split into equal halves,
    quarters, ... so every plane has one aggregate prefix (hosts route the plane through it)."""
    pool = ipaddress.IPv4Network(model.addressing.p2p_pool)
    bits = max(0, (model.plane_count - 1).bit_length())
    return list(pool.subnets(prefixlen_diff=bits))[plane] if bits else pool


def plane_subnets(model: Model, planes: np.ndarray, p2p: int) -> np.ndarray:
    """/31 base address of each cable: cables numbered within their plane's pool, in order."""
    out = np.zeros(len(planes), dtype=np.uint32)
    for p in range(model.plane_count):
        sel = np.flatnonzero(planes == p)
        out[sel] = int(plane_pool(model, p).network_address) + 2 * np.arange(len(sel), dtype=np.uint32)
    return out


STEPS = (step_switches, step_inter_zone, step_nodes, step_identities, place_racks, check_names)


def expand(model: Model) -> Fabric:
    """Expand a validated model into its port-level fabric (deterministic)."""
    d = Draft(model)
    for step in STEPS:
        step(d)
    cols = np.array(d.cables, dtype=np.int64).reshape(-1, 9).T
    cables = Cables(*(c.copy() for c in cols), subnet=d.subnets)
    return Fabric(
        name=model.name, technology=model.technology, model=model,
        zones=tuple(z.name for z in model.zones), planes=model.plane_count,
        switches=tuple(Switch(**s) for s in d.switches),
        nodes=tuple(Node(**n) for n in d.nodes),
        ports=tuple(HostPort(**p) for p in d.ports),
        cables=cables, racks=tuple(d.racks),
    )
