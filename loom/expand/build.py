"""Expansion `Model → Fabric`, written as an ordered list of named steps (netlab's habit).

    1. switches     every zone's switch layers, once per plane
    2. reserve      the switch ports the lock file gives to nodes (present or just removed)
    3. inter_zone   links joining zones, on the chosen leaves' first free down-ports
    4. nodes        node groups placed on leaves (spread or contiguous), NIC ports cabled;
                    a locked NIC port keeps its switch port
    5. identities   GUIDs and LIDs (InfiniBand; locked ones kept, new ones the lowest free, CA
                    ports below `switch_lid_base`, switches from it); loopbacks, ASNs, /31s (Ethernet)
    6. layout       rows, racks and rack units (locked ones kept, new devices in free units)
    7. names        every switch, node, NIC and rack name safe and unique (`names.py`)

Every step reads and extends one `Draft`; `expand` freezes it into a `Fabric`.  The order of
everything is fixed by the model's order and the lock, so the same model and lock give a
byte-identical fabric.  Without a lock (or with `relayout: true`) everything is placed by policy.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass, field

import numpy as np

from loom.model.errors import ModelError, Problem
from loom.model.rules import node_name
from loom.model.schema import SPEEDS_GBPS, Model

from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric, HostPort, Node, Switch
from .layout import place_racks
from .lockfile import Lock, lock_error, switch_lid_base
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
    lock: Lock | None = None  # where existing things are (None: place everything by policy)
    lock_file: str = ""  # for error messages
    locked: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)  # (node, nic/port) → (switch, port)
    lid_base: int = 0  # first switch LID

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
        if len(free) == 0:  # the rules count ports; only ports the lock still holds can run out
            raise ModelError(self.lock_file, [Problem("", f"zone {zone} has no free node-facing port left: the lock "
                                              "file holds the ports of nodes this change removes",
                                              "record the removal first (`loom lock MODEL`), then add the new nodes")])
        if contiguous:
            k = int(free[0])
        else:
            order = np.concatenate([free[free >= self.pointer[key]], free[free < self.pointer[key]]])
            k = next((int(c) for c in order if c not in avoid), int(order[0]))
            self.pointer[key] = (k + 1) % len(occupied)
        return self.take_on(plane, zone, k)

    def rail_group(self, plane: int, zone: str, rails: int) -> int:
        """The first rail group (leaves g·rails .. g·rails + rails - 1) with a free port on every
        rail: a rail-optimised node's ports all go to one group."""
        free = ~self.used[(plane, zone)].all(axis=1)
        groups = free[: len(free) // rails * rails].reshape(-1, rails).all(axis=1)
        if not groups.any():
            raise ModelError(self.lock_file, [Problem("", f"zone {zone} has no rail group with a free port on all "
                                              f"{rails} rails", "add leaves, or free ports (`loom lock MODEL` after a removal)")])
        return int(np.argmax(groups))

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


def step_reserve(d: Draft) -> None:
    """Take the switch ports the lock gives to nodes before anything else is cabled: inter-zone
    links and new nodes go around them.  A removed node's ports stay taken in this change."""
    if d.lock is None:
        return
    by_name = {s["name"]: s for s in d.switches}
    for name, n in d.lock.nodes.items():
        for key, p in n.ports.items():
            s = by_name.get(p.switch)
            if s is None or s["edge"] is None or p.port > d.used[(s["plane"], s["zone"])].shape[1]:
                continue  # that switch port no longer faces nodes: the NIC port is placed anew
            occupied = d.used[(s["plane"], s["zone"])]
            if occupied[s["edge"], p.port - 1]:
                raise lock_error(d.lock_file, f"nodes.{name}.ports.{key}", f"port {p.switch}/{p.port} is locked twice")
            occupied[s["edge"], p.port - 1] = True
            d.locked[(name, key)] = (s["index"], p.port)


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


def _rails(targets: list[tuple[int, str]]) -> dict[tuple[int, str], list[int]]:
    """(plane, zone) → the node's NIC port numbers there, in order: port k of that list is rail k."""
    out: dict[tuple[int, str], list[int]] = {}
    for j, t in enumerate(targets):
        out.setdefault(t, []).append(j)
    return out


def step_nodes(d: Draft) -> None:
    """Place every node.  A NIC port the lock places (in the same plane and zone) keeps its
    switch port; the others take the next free port by policy.  A pinned node first takes its
    policy ports like any other node (so nobody after it shifts), those ports are freed at the
    end (a locked one stays taken until `loom lock`), and it is cabled to the first free port of
    each leaf it is pinned to."""
    m = d.model
    holes: list[tuple[int, str, int, int]] = []  # (plane, zone, edge, port) reserved for pinned nodes
    pinned: list[tuple[int, int, str, int, tuple]] = []  # (cable, host port, zone, leaf, YAML loc)
    for gi, g in enumerate(m.node_groups):
        nt = m.node_types[g.node_type]
        nic_ports = [(nic, p) for nic in nt.nics for p in range(1, nic.ports + 1)]
        targets = port_targets(m, g, len(nic_ports))
        by_count = [leaf for leaf, n in sorted((g.leaf_counts or {}).items()) for _ in range(n)]
        for i in range(g.count):
            name = node_name(g, i)
            node = len(d.nodes)
            d.nodes.append(dict(index=node, name=name, group=g.name, role=g.role, node_type=g.node_type, zones=tuple(g.zones)))
            taken: dict[tuple[int, str], set[int]] = {}
            rail = _rails(targets) if g.placement == "rail" else {}
            group: dict[tuple[int, str], int] = {}
            pins = g.pinned.get(name)
            for j, ((nic, p), (plane, zone)) in enumerate(zip(nic_ports, targets)):
                avoid = taken.setdefault((plane, zone), set())
                locked = d.locked.get((name, f"{nic.name}/{p}"))
                kept = locked is not None and (d.switches[locked[0]]["plane"], d.switches[locked[0]]["zone"]) == (plane, zone)
                if kept:
                    sw, port = locked
                elif by_count:
                    sw, port = d.take_on(plane, zone, by_count[i], ("node_groups", gi, "leaf_counts"))
                elif rail:
                    rails = rail[(plane, zone)]
                    if (plane, zone) not in group:
                        group[(plane, zone)] = d.rail_group(plane, zone, len(rails))
                    sw, port = d.take_on(plane, zone, group[(plane, zone)] * len(rails) + rails.index(j))
                else:
                    sw, port = d.take_port(plane, zone, g.placement == "contiguous", avoid)
                edge = d.switches[sw]["edge"]
                avoid.add(edge)
                hp = len(d.ports)
                speed = SPEEDS_GBPS[nic.speed]
                d.ports.append(dict(index=hp, node=node, nic=nic.name, ca=f"{name}-{nic.name}", port=p, plane=plane,
                                    zone=zone, speed_gbps=speed))
                if pins and not (kept and edge == pins[j]):
                    if not kept:  # a locked port stays taken: it is freed by the next `loom lock`
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
        _infiniband_identities(d)
    else:
        _ethernet_identities(d)


def _ethernet_identities(d: Draft) -> None:
    """Loopbacks, ASNs and /31s.  Switch-to-switch cables are numbered from the start of their
    plane's pool (their order is fixed by the topology).  A switch keeps its locked loopback and
    a NIC port its locked address; new ones take the next free (a removed one's stays taken in
    this change), so growth renumbers no host and no switch."""
    m, lock = d.model, d.lock
    a = m.addressing
    lo_pool = ipaddress.IPv4Network(a.loopback_pool)
    locked_sw = lock.switches if lock else {}
    present = {n["name"] for n in d.nodes} | {s["name"] for s in d.switches}
    loopbacks = _Numbers()
    loopbacks.used.update(_ip(x.loopback) for n, x in locked_sw.items() if x.loopback and n not in present)
    for s in d.switches:
        s["guid"] = s["lid"] = 0
        ls = locked_sw.get(s["name"])
        if ls and ls.loopback:
            loopbacks.claim(_ip(ls.loopback), d.lock_file, f"switches.{s['name']}.loopback")
            s["loopback"] = ls.loopback
        if s["role"] in ("leaf", "upper", "lower"):
            s["asn"] = a.leaf_asn_base + s["edge"]
        elif s["role"] == "spine":
            s["asn"] = a.spine_asn + (s["pod"] or 0)
        else:
            s["asn"] = a.core_asn
    for s in d.switches:
        if "loopback" not in s:
            s["loopback"] = str(ipaddress.IPv4Address(loopbacks.take(int(lo_pool.network_address) + 1, int(lo_pool.broadcast_address))))
    planes = np.array([c[7] for c in d.cables], dtype=np.int64)
    d.subnets = plane_subnets(m, planes, int(ipaddress.IPv4Network(a.p2p_pool).network_address))
    pools = [_Numbers() for _ in range(m.plane_count)]
    host_rows = [i for i, c in enumerate(d.cables) if c[0] == HOST]
    for i in np.flatnonzero(np.array([c[0] != HOST for c in d.cables])).tolist():
        pools[d.cables[i][7]].used.add(int(d.subnets[i]))
    if lock:
        held = [_ip(p.address) - 1 for n, x in lock.nodes.items() if n not in present for p in x.ports.values() if p.address]
        for pool in pools:
            pool.used.update(held)
    node_name = [n["name"] for n in d.nodes]
    new_rows = []
    for i in host_rows:
        hp = d.ports[d.cables[i][1]]
        key = (node_name[hp["node"]], f"{hp['nic']}/{hp['port']}")
        lp = lock.nodes[key[0]].ports[key[1]] if key in d.locked else None
        if lp and lp.address:
            base = _ip(lp.address) - 1
            pools[hp["plane"]].claim(base, d.lock_file, f"nodes.{key[0]}.ports.{key[1]}.address")
            d.subnets[i] = base
        else:
            new_rows.append(i)
    for i in new_rows:
        pool = plane_pool(m, d.cables[i][7])
        d.subnets[i] = pools[d.cables[i][7]].take(int(pool.network_address), int(pool.broadcast_address), step=2)
    for i, base in zip(host_rows, d.subnets[host_rows].tolist()):
        hp = d.ports[d.cables[i][1]]
        hp["ca_guid"] = hp["guid"] = hp["lid"] = 0
        hp["address"] = socket.inet_ntoa((base + 1).to_bytes(4, "big"))


def _ip(text: str) -> int:
    """A dotted quad as an integer: inet_aton's, once the text is known to be four decimal
    octets (inet_aton alone would also take `10.1` or octal `010.0.0.1`); 10× ipaddress's
    speed, which 32,768 locked addresses notice."""
    if _QUAD.fullmatch(text):
        return int.from_bytes(socket.inet_aton(text), "big")
    return int(ipaddress.IPv4Address(text))


_QUAD = re.compile(r"(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)")


def _infiniband_identities(d: Draft) -> None:
    """GUIDs and LIDs: locked ones kept, new ones the next free.  CA ports take LIDs from 1 up to
    below `switch_lid_base` (then above everything), switches from `switch_lid_base` up, so a
    new node never renumbers a switch and a new switch never renumbers a node.  The LIDs and
    GUIDs of things the lock has but the model no longer does stay taken in this change."""
    m, lock = d.model, d.lock
    per_plane = max(sum(1 for hp in d.ports if hp["plane"] == p) for p in range(m.plane_count)) if d.ports else 0
    d.lid_base = lock.switch_lid_base if lock and lock.switch_lid_base else switch_lid_base(per_plane)
    lids = [_Numbers() for _ in range(m.plane_count)]
    guids: set[int] = set()

    def claim(plane: int, lid: int, guid: int, path: str) -> None:
        if lid in lids[plane].used or guid in guids:
            raise lock_error(d.lock_file, path, f"LID {lid} or GUID {guid:#018x} is locked twice")
        lids[plane].used.add(lid)
        guids.add(guid)

    present = {n["name"] for n in d.nodes} | {s["name"] for s in d.switches}
    if lock:  # hold what the change removes
        for name, n in lock.nodes.items():
            if name not in present:
                guids.update(p.guid for p in n.ports.values())
                for pool in lids:
                    pool.used.update(p.lid for p in n.ports.values())
        for name, s in lock.switches.items():
            if name not in present:
                guids.add(s.guid)
                for pool in lids:
                    pool.used.add(s.lid)
    held_guids = set(guids)
    node_name = [n["name"] for n in d.nodes]
    ca_seq: dict[str, int] = {}
    for hp in d.ports:
        key = (node_name[hp["node"]], f"{hp['nic']}/{hp['port']}")
        lp = lock.nodes[key[0]].ports[key[1]] if key in d.locked else None
        if lp and lp.guid:
            claim(hp["plane"], lp.lid, lp.guid, f"nodes.{key[0]}.ports.{key[1]}")
            hp["lid"], hp["guid"] = lp.lid, lp.guid
            ca_seq.setdefault(hp["ca"], ((lp.guid - hp["port"]) >> 4) & 0xFFFFFFF)
    next_seq = max([*ca_seq.values(), *((g >> 4) & 0xFFFFFFF for g in held_guids if (g >> 32) & 0xFF == 1)], default=0) + 1
    for hp in d.ports:
        if hp["ca"] not in ca_seq:
            ca_seq[hp["ca"]] = next_seq
            next_seq += 1
        hp["ca_guid"] = (OUI << 40) | (0x01 << 32) | (ca_seq[hp["ca"]] << 4)
        hp["address"] = None
        if "lid" not in hp:
            hp["guid"] = hp["ca_guid"] + hp["port"]
            hp["lid"] = lids[hp["plane"]].take(1, d.lid_base)
    locked_sw = lock.switches if lock else {}
    for s in d.switches:
        ls = locked_sw.get(s["name"])
        if ls and ls.guid and ls.lid >= d.lid_base:
            claim(s["plane"], ls.lid, ls.guid, f"switches.{s['name']}")
            s["lid"], s["guid"] = ls.lid, ls.guid
    taken = [s["guid"] for s in d.switches if "guid" in s] + [g for g in held_guids if (g >> 32) & 0xFF == 2]
    next_seq = max((g & 0xFFFFFFFF for g in taken), default=0) + 1
    for s in d.switches:
        if "guid" not in s:
            s["guid"] = (OUI << 40) | (0x02 << 32) | next_seq
            next_seq += 1
            s["lid"] = lids[s["plane"]].take(d.lid_base, UNICAST_LIDS)
        s["asn"] = s["loopback"] = None


UNICAST_LIDS = 0xC000  # LIDs 1..0xBFFF are unicast


class _Numbers:
    """Numbers in use (LIDs of one subnet, loopbacks, /31 bases of one plane): `take(lo, hi)` hands
    out the lowest free one of [lo, hi) in steps of `step` (a cursor per range keeps it linear),
    or one past every used number when the range is full."""

    def __init__(self) -> None:
        self.used: set[int] = set()
        self.cursor: dict[int, int] = {}
        self._top = (0, 0)  # (highest used number, len(used) when it was known): `used` only grows

    def claim(self, x: int, lock_file: str, path: str) -> None:
        if x in self.used:
            raise lock_error(lock_file, path, "this number is locked twice")
        self.used.add(x)

    def take(self, lo: int, hi: int, step: int = 1) -> int:
        x = self.cursor.get(lo, lo)
        while x in self.used:
            x += step
        if x >= hi:
            x = self._highest() + step
        else:
            self.cursor[lo] = x + step
        known = self._top[1] == len(self.used)
        self.used.add(x)
        if known:  # the highest stays known: it was, and only x came in
            self._top = (max(self._top[0], x), len(self.used))
        return x

    def _highest(self) -> int:
        """max(used), rescanned only when numbers were added other than by `take` (callers add
        locked ones to `used` directly): a full range hands out thousands in a row (the switch
        LIDs of a subnet at the LID limit), and a scan each time was 2.4 s of its expansion."""
        top, known = self._top
        if known != len(self.used):
            self._top = (top, known) = (max(self.used), len(self.used))
        return top


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


STEPS = (step_switches, step_reserve, step_inter_zone, step_nodes, step_identities, place_racks, check_names)


def expand(model: Model, lock: Lock | None = None, lock_file: str = "") -> Fabric:
    """Expand a validated model into its port-level fabric (deterministic): what `lock` places
    stays there, the rest is placed by policy.  `relayout: true` in the model ignores the lock."""
    d = Draft(model, lock=None if model.relayout else lock, lock_file=lock_file)
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
        cables=cables, racks=tuple(d.racks), switch_lid_base=d.lid_base,
        assets=dict(lock.assets) if lock else {}, as_built=dict(lock.as_built) if lock else {},
        marked=dict(lock.down) if lock else {},
    )
