"""Is the fabric cabled as the model says?  Map what was discovered to the model, then compare.

Mapping (live node → model device), strongest evidence first:
1. GUIDs the model (its lock file) already holds: switch node GUIDs, NIC port GUIDs;
2. node descriptions equal to the model's name (`z0-leaf3`, `z0-c001-mlx5_0`, or a host's
   `z0-c001 mlx5_0`);
3. cabling position, like ibdiagnet's topology compare: an unmapped node takes the model device
   that most of its mapped neighbours say sits at its far end (leaf 3's port 21 is cabled to
   spine 9 in the model, so whatever is at leaf 3's port 21 is spine 9), repeated until nothing
   changes.  A few miswired cables do not fool it: the majority of a switch's cables are right.

Comparison, cable by cable, in the cabling sheet's terms (cable ID = the lower switch port):
- *missing*: a model cable with nothing on either port;
- *extra*: a cable between two ports the model leaves empty;
- *miswired*: a cable with one end where the model has a different cable: the lower end (node
  or leaf side) is taken as right and the instruction says where the other end goes; two
  miswired cables whose instructions undo each other are reported as *swapped*;
- *speed*: a right cable running below the model's speed or width;
- *unknown device*: a node found that maps to nothing in the model; *device not found*: a model
  device with no counterpart found.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from loom.expand import Fabric
from loom.expand.failures import cable_ends
from loom.expand.live import LiveFabric

LAYER = {"ca": 0, "leaf": 1, "upper": 1, "lower": 1, "spine": 2, "core": 3}


@dataclass(frozen=True)
class Place:
    device: str
    port: int
    rack: str
    ru: int
    port_name: str  # as printed on the device: switch port number, or `nic/port` on a node

    def __str__(self) -> str:
        if not self.rack:
            return f"unknown device {self.device} port {self.port_name}"
        return f"{self.device} port {self.port_name} (rack {self.rack} U{self.ru})"


@dataclass
class Finding:
    kind: str  # missing | extra | miswired | swapped | speed | unknown-device | device-not-found
    cable_id: str
    what: str  # one line a technician reads
    action: str  # what to do, in rack/RU/port terms
    expected: Place | None = None  # the model's far end for the kept end (miswired), or the cable's end B
    found: Place | None = None
    cable: int | None = None  # the model cable (row of fabric.cables) a missing finding is about

    def as_dict(self) -> dict:
        d = {"kind": self.kind, "cable_id": self.cable_id, "what": self.what, "action": self.action}
        for k in ("expected", "found"):
            p = getattr(self, k)
            d[k] = None if p is None else {"device": p.device, "port": p.port_name, "rack": p.rack, "ru": p.ru}
        return d


@dataclass
class CablingReport:
    mapping: dict[int, str]  # live node GUID → model device (switch or CA name)
    guids: dict[str, int]  # model device/port key → GUID found (switch: node GUID; `ca:port` → port GUID)
    checked: int  # model cables compared
    findings: list[Finding] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not self.findings

    def counts(self) -> dict[str, int]:
        return dict(Counter(f.kind for f in self.findings))


class _Model:
    """The model's devices and cable ends by name, and where each device is."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.ends = {k: (v[0], v[1]) for k, v in cable_ends(fabric).items()}  # (device, port) → (cable, far end)
        self.kind: dict[str, str] = {s.name: "switch" for s in fabric.switches}
        self.layer: dict[str, int] = {s.name: LAYER.get(s.role, 1) for s in fabric.switches}
        self.where: dict[str, tuple[str, int]] = {s.name: (s.rack, s.ru) for s in fabric.switches}
        self.port_name: dict[tuple[str, int], str] = {}
        self.node_of: dict[str, str] = {}
        for p in fabric.ports:
            node = fabric.nodes[p.node]
            self.kind[p.ca], self.layer[p.ca], self.where[p.ca] = "ca", 0, (node.rack, node.ru)
            self.port_name[(p.ca, p.port)] = f"{p.nic}/{p.port}"
            self.node_of[p.ca] = node.name
        self.speed = {i: int(fabric.cables.speed_gbps[i]) for i in range(len(fabric.cables))}

    def place(self, device: str, port: int) -> Place:
        rack, ru = self.where[device]
        return Place(self.node_of.get(device, device), port, rack, ru, self.port_name.get((device, port), str(port)))


def map_nodes(fabric: Fabric, live: LiveFabric, model: _Model | None = None) -> dict[int, str]:
    """Live node GUID → model device name (see the module doc)."""
    m = model or _Model(fabric)
    mapping: dict[int, str] = {}
    taken: set[str] = set()

    def assign(guid: int, device: str) -> None:
        if guid not in mapping and device not in taken:
            mapping[guid] = device
            taken.add(device)

    sw_guid = {s.guid: s.name for s in fabric.switches if s.guid}
    port_guid = {p.guid: p.ca for p in fabric.ports if p.guid}
    for g, n in live.nodes.items():
        if n.kind == "switch" and g in sw_guid:
            assign(g, sw_guid[g])
    for (g, _), pg in live.port_guids.items():
        if pg in port_guid and live.nodes.get(g) and live.nodes[g].kind == "ca":
            assign(g, port_guid[pg])
    by_desc = _by_description(m)
    host_cas = defaultdict(list)
    for ca, node in m.node_of.items():
        host_cas[node].append(ca)
    allowed: dict[int, set[str]] = {}  # a CA whose host name is a model node: only that node's NICs
    for g, n in live.nodes.items():
        want = by_desc.get((n.kind, n.desc))
        host = n.desc.split()[0] if n.kind == "ca" and n.desc.split() else None
        if want:
            assign(g, want)
        elif host in host_cas:
            if len(host_cas[host]) == 1:
                assign(g, host_cas[host][0])
            allowed[g] = set(host_cas[host])
    _map_by_position(live, m, mapping, taken, allowed)
    return mapping


def _by_description(m: _Model) -> dict[tuple[str, str], str]:
    out = {("switch", name): name for name, k in m.kind.items() if k == "switch"}
    for p in m.fabric.ports:
        out[("ca", p.ca)] = p.ca
        out[("ca", f"{m.node_of[p.ca]} {p.nic}")] = p.ca
    return out


def _map_by_position(live: LiveFabric, m: _Model, mapping: dict[int, str], taken: set[str],
                     allowed: dict[int, set[str]]) -> None:
    adj: dict[int, list[tuple[int, int, int]]] = defaultdict(list)  # guid → [(own port, far guid, far port)]
    for l in live.links:
        adj[l.a[0]].append((l.a[1], l.b[0], l.b[1]))
        adj[l.b[0]].append((l.b[1], l.a[0], l.a[1]))
    while True:
        votes: dict[int, Counter] = defaultdict(Counter)
        for g in adj:
            if g in mapping or g not in live.nodes:
                continue
            for own, far, far_port in adj[g]:
                if far in mapping and (mapping[far], far_port) in m.ends:
                    device, port = m.ends[(mapping[far], far_port)][1]
                    if device in taken or (g in allowed and device not in allowed[g]):
                        continue
                    if m.kind[device] == ("ca" if live.nodes[g].kind == "ca" else "switch"):
                        votes[g][device] += 2 if port == own else 1
        ranked = sorted(((c, g, d) for g, cnt in votes.items() for d, c in cnt.items()), reverse=True)
        progress = False
        for _, g, d in ranked:
            if g not in mapping and d not in taken:
                mapping[g] = d
                taken.add(d)
                progress = True
        if not progress:
            return


def compare(fabric: Fabric, live: LiveFabric) -> CablingReport:
    m = _Model(fabric)
    mapping = map_nodes(fabric, live, m)
    found: dict[tuple[str, int], tuple[tuple[str, int], object]] = {}  # model-named end → (far end, link)
    unknown = [n for g, n in live.nodes.items() if g not in mapping]
    for l in live.links:
        a, b = _named(l.a, mapping, live), _named(l.b, mapping, live)
        found[a], found[b] = (b, l), (a, l)
    report = CablingReport(mapping, _guids(fabric, live, mapping), len(fabric.cables))
    moves: dict[tuple[tuple[str, int], tuple[str, int]], Finding] = {}
    reported: set[int] = set()
    for (dev, port), (i, far) in sorted(m.ends.items(), key=lambda kv: kv[1][0]):
        if i in reported:
            continue
        here, there = found.get((dev, port)), found.get(far)
        if here and here[0] == far:
            reported.add(i)
            link = here[1]
            if link.width and link.gbps < m.speed[i]:
                report.findings.append(Finding(
                    "speed", m.fabric.cable_id(i), f"{m.fabric.cable_id(i)} runs at {link.width}x{link.speed} "
                    f"({link.gbps:g} Gb/s); the model has {m.speed[i]} Gb/s",
                    f"reseat or replace the cable between {m.place(dev, port)} and {m.place(*far)}",
                    m.place(*far), m.place(*far)))
            continue
        if here is None and there is None:
            reported.add(i)
            report.findings.append(Finding("missing", m.fabric.cable_id(i), f"{m.fabric.cable_id(i)} is not cabled",
                                           f"cable {m.place(dev, port)} to {m.place(*far)}", m.place(*far), None, i))
    for l in live.links:
        a, b = _named(l.a, mapping, live), _named(l.b, mapping, live)
        if a in m.ends and m.ends[a][1] == b:
            continue
        if a not in m.ends and b not in m.ends:
            report.findings.append(Finding("extra", f"{_show(a)}–{_show(b)}", f"a cable the model does not have: "
                                           f"{_place(m, a)} to {_place(m, b)}", "remove it", None, _place(m, b)))
            continue
        keep, move = (a, b) if _keep_first(m, a, b) else (b, a)
        i, want = m.ends[keep]
        f = Finding("miswired", m.fabric.cable_id(i), f"{_place(m, keep)} is cabled to {_place(m, move)}; the model has "
                    f"{m.place(*want)}", f"move the end at {_place(m, move)} to {m.place(*want)}",
                    m.place(*want), _place(m, move))
        moves[(move, want)] = f
        report.findings.append(f)
    for (src, dst), f in moves.items():
        other = moves.get((dst, src))
        if other is not None:
            f.kind = "swapped"
            f.what += f" (swapped with {other.cable_id})"
    for n in unknown:
        report.findings.append(Finding("unknown-device", f"{n.guid:#018x}", f"found a {n.kind} the model does not "
                                       f"have: GUID {n.guid:#018x} \"{n.desc}\"", "identify it, or add it to the model"))
    mapped = set(mapping.values())
    for device, kind in m.kind.items():
        if device not in mapped and any(d == device for d, _ in m.ends):
            report.findings.append(Finding("device-not-found", device, f"{kind} {device} was not found "
                                           f"(rack {m.where[device][0]} U{m.where[device][1]})",
                                           "power it on and cable it, or list it as missing in the model"))
    return report


def _keep_first(m: _Model, a, b) -> bool:
    """Which end of a miswired cable stays: the one whose port the model uses, the lower layer first."""
    if (a in m.ends) != (b in m.ends):
        return a in m.ends
    return m.layer.get(a[0], 9) <= m.layer.get(b[0], 9)


def _named(end: tuple[int, int], mapping: dict[int, str], live: LiveFabric) -> tuple[str, int]:
    g, port = end
    return (mapping[g], port) if g in mapping else (f"?{g:#018x}", port)


def _show(end: tuple[str, int]) -> str:
    return f"{end[0]}/{end[1]}"


def _place(m: _Model, end: tuple[str, int]) -> Place:
    return m.place(*end) if end[0] in m.where else Place(end[0][1:], end[1], "", 0, str(end[1]))


def _guids(fabric: Fabric, live: LiveFabric, mapping: dict[int, str]) -> dict[str, int]:
    """What was found that the lock file can record: switch node GUIDs and NIC port GUIDs."""
    out = {}
    for g, device in mapping.items():
        if live.nodes[g].kind == "switch":
            out[device] = g
    for (g, port), pg in live.port_guids.items():
        if g in mapping:
            out[f"{mapping[g]}:{port}"] = pg
    return out
