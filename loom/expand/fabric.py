"""The port-level fabric: what the expansion produces and every later stage reads.

Choice of representation: switches, nodes and host ports are few enough (hundreds to tens of
thousands) to be frozen dataclasses, readable in tests and templates.  Cables are the big table
(65,536 for the 32,768-GPU fabric) and are what routing and checks crunch, so they are numpy
columns (`Cables`).  Routing builds its own graph arrays from them; networkx is used only where
a graph algorithm on a small graph helps (see `loom.checks`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from loom.model.schema import Model

#: Cable end kinds: a switch port, or a host (NIC) port.
SWITCH, HOST = 0, 1
#: Cable kinds, in the order their codes are stored in `Cables.kind`.
CABLE_KINDS = ("host", "leaf-spine", "spine-core", "bigraph", "inter-zone")


@dataclass(frozen=True, slots=True)
class Switch:
    index: int
    name: str
    role: str  # leaf | spine | core | upper | lower (BiGraph parts)
    zone: str
    plane: int
    pod: int | None
    position: int  # index within its role in its zone (leaf 7 of zone z0)
    edge: int | None  # index among the zone's node-facing switches, None for spines/cores
    model: str
    ports: int
    speed_gbps: int
    guid: int  # node GUID = port GUID of port 0 (InfiniBand); 0 on Ethernet
    lid: int  # LID of port 0 (InfiniBand); 0 on Ethernet
    asn: int | None  # BGP ASN (Ethernet)
    loopback: str | None  # /32 loopback (Ethernet)
    rack: str
    ru: int


@dataclass(frozen=True, slots=True)
class Node:
    index: int
    name: str
    group: str
    role: str
    node_type: str
    zones: tuple[str, ...]
    rack: str
    ru: int


@dataclass(frozen=True, slots=True)
class HostPort:
    """One cabled NIC port. A NIC is an InfiniBand channel adapter (CA) named `ca`."""

    index: int
    node: int  # index into Fabric.nodes
    nic: str  # NIC name in the node type, e.g. hca0
    ca: str  # fabric-wide CA name, e.g. z0-c0001-hca0
    port: int  # 1-based port on the NIC
    plane: int
    zone: str
    speed_gbps: int
    ca_guid: int  # node GUID of the CA (InfiniBand)
    guid: int  # port GUID (InfiniBand)
    lid: int  # InfiniBand LID, 0 on Ethernet
    address: str | None  # host address on its /31 (Ethernet)


@dataclass(frozen=True)
class Cables:
    """One row per cable. End A is the lower layer (host or leaf), end B the upper (leaf, spine, core)."""

    a_kind: np.ndarray
    a_dev: np.ndarray  # Switch.index or HostPort.index
    a_port: np.ndarray
    b_kind: np.ndarray
    b_dev: np.ndarray
    b_port: np.ndarray
    kind: np.ndarray  # code into CABLE_KINDS
    plane: np.ndarray
    speed_gbps: np.ndarray
    subnet: np.ndarray  # /31 base address as uint32 (Ethernet), 0 on InfiniBand

    def __len__(self) -> int:
        return len(self.kind)

    def address(self, i: int, end: str) -> str:
        """The /31 address of end 'a' (base+1) or 'b' (base) of cable i."""
        return str(ipaddress.IPv4Address(int(self.subnet[i]) + (1 if end == "a" else 0)))


@dataclass(frozen=True)
class Fabric:
    name: str
    technology: str
    model: Model
    zones: tuple[str, ...]
    planes: int
    switches: tuple[Switch, ...]
    nodes: tuple[Node, ...]
    ports: tuple[HostPort, ...]
    cables: Cables
    racks: tuple[str, ...] = field(default=())
    switch_lid_base: int = 0  # first switch LID (InfiniBand); CA ports are numbered below it
    assets: dict = field(default_factory=dict)  # device → lockfile.Asset (serial, asset tag, MACs from NetBox)
    as_built: dict = field(default_factory=dict)  # zone → lockfile.ZoneAsBuilt (what is not on the floor)
    marked: dict = field(default_factory=dict)  # name → lockfile.Mark (what an operator marked down)

    @cached_property
    def switch_index(self) -> dict[str, int]:
        return {s.name: s.index for s in self.switches}

    @cached_property
    def cable_index(self) -> dict[str, int]:
        """Cable ID (`cable_id`) → row of `cables`."""
        return {self.cable_id(i): i for i in range(len(self.cables))}

    @cached_property
    def node_index(self) -> dict[str, int]:
        return {n.name: n.index for n in self.nodes}

    def cable_id(self, i: int) -> str:
        """Cable i's stable ID as the cabling sheet prints it: the switch port it plugs into (node
        cables) or the lower switch's port (switch cables), e.g. `z0-leaf5/16`."""
        c = self.cables
        end = "b" if c.a_kind[i] == HOST else "a"
        return f"{self.switches[int(getattr(c, end + '_dev')[i])].name}/{int(getattr(c, end + '_port')[i])}"

    @cached_property
    def down_switches(self) -> frozenset[int]:
        """Switch indices the model lists as down (`missing_switches`): they stay in the fabric
        (racks, cabling sheets) but none of their links carries traffic."""
        want = {(z.name, m.plane, m.role, m.index) for z in self.model.zones for m in getattr(z, "missing_switches", [])}
        return frozenset(s.index for s in self.switches if (s.zone, s.plane, s.role, s.position) in want)
