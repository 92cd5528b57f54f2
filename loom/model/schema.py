"""The declarative fabric model: the one input every Loom stage starts from.

The schema *is* the documentation of the inputs (pyavd's habit): every field carries a
description, and the loader quotes it back when a value is wrong.  Only structural rules live
here (types, ranges, allowed keys); rules that need the whole model (references, port budgets)
live in `loom.model.rules`, so each rule can name the exact field it is about.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from .names import EnvVar, Name

#: Link speeds by name, in Gb/s for a 4x link (IB) or one port (Ethernet). Seed 004.
SPEEDS_GBPS: dict[str, int] = {
    "EDR": 100, "HDR": 200, "NDR": 400, "XDR": 800,
    "100GbE": 100, "200GbE": 200, "400GbE": 400, "800GbE": 800,
}
Speed = Literal["EDR", "HDR", "NDR", "XDR", "100GbE", "200GbE", "400GbE", "800GbE"]
Technology = Literal["infiniband", "ethernet"]


def Count(upper: int, lower: int = 1, **kw):
    """A whole number bounded on both sides: every count, width and index the expansion sizes
    arrays or loops by has an upper bound here, so no field's value can cost more than the
    fabric it describes (physical limits across fields are `loom.model.limits`)."""
    return Field(ge=lower, le=upper, **kw)


def Measure(upper: float, **kw):
    """A finite length, share or ratio with an upper bound (inf and nan are refused by `Strict`)."""
    return Field(le=upper, **kw)


#: 32-bit ASNs: 0 and 4294967295 are reserved (RFC 7607, RFC 7300).
ASN_MAX = 4_294_967_294
Index = Annotated[int, Field(ge=0, le=65535)]
NodeRole = Literal["compute", "storage", "management", "other"]
BusId = Annotated[str, Field(pattern=r"^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")]


class Strict(BaseModel):
    """Base: unknown keys are refused (a misspelt key is a user error, not something to ignore)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


# ---------------------------------------------------------------------------------- hardware


class SwitchModel(Strict):
    ports: int = Count(1024, description="number of external ports, e.g. 40 for a QM8700 (at most 254: port numbers are one byte)")
    speed: Speed = Field(description="port speed, one of " + ", ".join(SPEEDS_GBPS))
    technology: Technology = Field(description="infiniband or ethernet")
    height_u: int = Count(64, default=1, description="rack units the switch occupies")


class RootComplex(Strict):
    name: Name = Field(description="root complex (PCIe host bridge) name, unique in the node type")
    numa: int = Count(255, 0, description="NUMA node the root complex belongs to")


class PcieSwitch(Strict):
    name: Name = Field(description="PCIe switch name, unique in the node type")
    root_complex: Name = Field(description="name of the root complex the switch hangs off")


class Gpu(Strict):
    name: Name = Field(description="GPU name, unique in the node type, e.g. gpu0")
    root_complex: Name = Field(description="name of the root complex the GPU sits on")
    pcie_switch: Name | None = Field(None, description="PCIe switch between GPU and root complex, if any")
    bus_id: BusId | None = Field(None, description="PCI address (0000:bb:dd.f), for the NCCL topology file; derived if absent")


class Nic(Strict):
    name: Name = Field(description="NIC (HCA) name, unique in the node type, e.g. hca0 or mlx5_0")
    root_complex: Name = Field(description="name of the root complex the NIC sits on")
    pcie_switch: Name | None = Field(None, description="PCIe switch between NIC and root complex, if any")
    ports: int = Field(1, ge=1, le=2, description="cabled ports on the NIC (1, or 2 for a dual-port NIC)")
    speed: Speed = Field(description="port speed; must equal the speed of the switch it is cabled to")
    bus_id: BusId | None = Field(None, description="PCI address (0000:bb:dd.f); derived from the layout if absent")


class NodeType(Strict):
    sockets: int = Count(16, description="CPU sockets")
    numa_per_socket: int = Count(16, default=1, description="NUMA nodes per socket (NPS setting)")
    cores_per_numa: int = Count(1024, description="CPU cores in each NUMA node")
    root_complexes: list[RootComplex] = Field(min_length=1, max_length=64, description="PCIe root complexes")
    pcie_switches: list[PcieSwitch] = Field(default_factory=list, max_length=64, description="PCIe switches, if any")
    gpus: list[Gpu] = Field(default_factory=list, max_length=64, description="GPUs")
    nics: list[Nic] = Field(min_length=1, max_length=64, description="NICs cabled to the fabric")
    nvlink_pairs: list[tuple[Name, Name]] = Field(default_factory=list, max_length=1024, description="GPU pairs joined by an NVLink bridge")
    height_u: int = Count(64, default=1, description="rack units the node occupies")

    @property
    def numa_nodes(self) -> int:
        return self.sockets * self.numa_per_socket

    @property
    def nic_ports(self) -> int:
        return sum(n.ports for n in self.nics)


# ------------------------------------------------------------------------------------ zones


class MissingLink(Strict):
    """A leaf up-link of the design that is not cabled (failed, removed or not yet installed)."""

    leaf: int = Count(65535, 0, description="leaf index in the zone (0-based, pod-major for three layers)")
    up_port: int = Count(1023, 0, description="0-based up-link index u: leaf port leaf_down+1+u, to spine u mod spines")


class MissingSwitch(Strict):
    """A switch of the design that is down (failed, out for repair, not yet installed): every link
    it has counts as missing, and anything cabled only to it is cut off."""

    role: Literal["leaf", "spine", "core"] = Field(description="layer of the switch")
    index: int = Count(65535, 0, description="index within its layer in the zone (0-based; leaves and spines "
                       "pod-major for three layers)")
    plane: int = Count(15, 0, default=0, description="plane of the switch (multi-plane fabrics)")


class FatTree2(Strict):
    """A two-layer fat tree: every leaf cabled to every spine with leaf_up / spines links."""

    kind: Literal["fat-tree-2"]
    name: Name = Field(description="zone name, unique in the model, e.g. z0")
    switch_model: Name = Field(description="key of switch_models used for leaves and spines")
    leaves: int = Count(16384, description="number of leaf switches")
    spines: int = Count(4096, description="number of spine switches")
    leaf_down: int = Count(1024, description="leaf ports facing nodes (ports 1..leaf_down)")
    leaf_up: int = Count(1024, description="leaf ports facing spines; a multiple of spines")
    spine_links: list[Annotated[int, Field(ge=1, le=1024)]] | None = Field(
        None, max_length=4096, description="uneven cabling by design: links from every leaf to spine s (one entry per spine, each "
        "at most leaf_up / spines); up-link u goes to spine u mod spines as its link u div spines, and the "
        "links past a spine's count are left out (default: leaf_up / spines to every spine)")
    oversubscription: float | None = Measure(1024, default=None, gt=0, description="optional assertion: leaf_down / leaf_up")
    missing_links: list[MissingLink] = Field(default_factory=list, max_length=65536, description="leaf up-links not cabled")
    missing_switches: list[MissingSwitch] = Field(default_factory=list, max_length=65536, description="switches that are down")

    @property
    def edge_switches(self) -> int:
        """Switches that nodes (and inter-zone links) attach to."""
        return self.leaves

    @property
    def edge_down(self) -> int:
        return self.leaf_down


class FatTree3(Strict):
    """A three-layer fat tree: pods of two-layer trees joined by core switches."""

    kind: Literal["fat-tree-3"]
    name: Name = Field(description="zone name, unique in the model")
    switch_model: Name = Field(description="key of switch_models used for all three layers")
    pods: int = Count(1024, description="number of pods")
    leaves_per_pod: int = Count(4096, description="leaf switches in each pod")
    spines_per_pod: int = Count(1024, description="spine (aggregation) switches in each pod")
    cores: int = Count(16384, description="core switches; a multiple of spines_per_pod")
    leaf_down: int = Count(1024, description="leaf ports facing nodes")
    leaf_up: int = Count(1024, description="leaf ports facing the pod's spines; a multiple of spines_per_pod")
    spine_up: int = Count(1024, description="spine ports facing cores; a multiple of cores / spines_per_pod")
    oversubscription: float | None = Measure(1024, default=None, gt=0, description="optional assertion: leaf_down / leaf_up")
    missing_links: list[MissingLink] = Field(default_factory=list, max_length=65536, description="leaf up-links not cabled")
    missing_switches: list[MissingSwitch] = Field(default_factory=list, max_length=65536, description="switches that are down")

    @property
    def edge_switches(self) -> int:
        return self.pods * self.leaves_per_pod

    @property
    def edge_down(self) -> int:
        return self.leaf_down


class BiGraph(Strict):
    """EFLOPS BiGraph: N switches in two parts joined as a complete bipartite graph."""

    kind: Literal["bigraph"]
    name: Name = Field(description="zone name, unique in the model")
    switch_model: Name = Field(description="key of switch_models")
    switches: int = Count(1024, description="N, the total switch count (even); N/2 in each part")
    hosts_per_switch: int = Count(1024, description="M, node ports per switch; M <= N/2")

    @property
    def edge_switches(self) -> int:
        return self.switches

    @property
    def edge_down(self) -> int:
        return self.hosts_per_switch


Zone = Annotated[Union[FatTree2, FatTree3, BiGraph], Field(discriminator="kind")]


class Planes(Strict):
    count: int = Field(ge=2, le=16, description="number of parallel identical fabrics")
    nic_mapping: Literal["round-robin", "blocked"] = Field(
        "round-robin",
        description="how a node's NIC ports map to planes: round-robin (port i -> plane i mod N) "
        "or blocked (the first ports/N ports -> plane 0, ...)",
    )


# ------------------------------------------------------------------------------ attachments


class NodeGroup(Strict):
    name: Name = Field(description="group name, unique in the model")
    node_type: Name = Field(description="key of node_types")
    role: NodeRole = Field(description="what the nodes do")
    count: int = Count(1_000_000, description="number of nodes")
    zones: list[Name] = Field(min_length=1, max_length=16, description="zone(s) the nodes attach to; two for dual-homed, k for multi")
    homing: Literal["single", "dual", "multi"] = Field(
        "single", description="dual: NIC port i goes to zones[i mod 2] (one HCA in each zone); multi: k zones, "
        "NIC port i to zones[i mod k] (k ports in k zones)"
    )
    placement: Literal["spread", "contiguous", "rail"] = Field(
        "spread", description="spread: round-robin over leaves; contiguous: fill a leaf before the next; rail "
        "(rail-optimised): with R NIC ports per node in a plane, the leaves form rail groups of R and NIC port i "
        "of every node goes to leaf i of its group (the first group with room on all R rails)"
    )
    name_pattern: str = Field("{group}{index:04d}", max_length=64, description="node name; fields {group} {index} {zone}")
    nvlink_domain: int | None = Field(None, ge=1, le=1024, description="nodes per NVLink domain: the group's nodes, "
                                      "in index order, form domains of this many (GB200 NVL72: 18); `loom slurm` makes "
                                      "each domain a topology/block block")
    leaf_counts: dict[Index, Annotated[int, Field(ge=0, le=1024)]] | None = Field(
        None, max_length=65536, description="leaf index → nodes on that leaf, in place of the placement policy (a partly "
        "populated zone): nodes fill the listed leaves in leaf order; the counts add up to `count`; "
        "one NIC port per node in each of its zones")
    pinned: dict[Name, list[Index]] = Field(
        default_factory=dict,
        description="node name → leaf index for each of its NIC ports, overriding the placement; the "
        "node's policy ports stay free so no other node moves",
    )
    racks: list[Name] | None = Field(
        None, min_length=1, max_length=4096, description="racks the group's nodes go into, filled in this order "
        "(named as layout.rack_name names them, e.g. [H01, H02]; racks the floor does not have yet are added); "
        "a new leaf goes on top of its first node's rack")


class InterZoneEnd(Strict):
    zone: Name = Field(description="zone name")
    leaves: list[Index] | None = Field(None, max_length=1024, description="leaf indices (0-based) taking the links; default: the last leaves")


class InterZoneLinks(Strict):
    count: int = Count(1024, description="number of links between the two zones")
    a: InterZoneEnd
    b: InterZoneEnd


class Addressing(Strict):
    p2p_pool: str = Field("10.0.0.0/8", max_length=18, description="pool the /31 point-to-point links are cut from")
    loopback_pool: str = Field("172.16.0.0/12", max_length=18, description="pool the /32 switch loopbacks are cut from")
    spine_asn: int = Count(ASN_MAX, default=65000, description="ASN shared by a plane's spines (per pod for 3 layers)")
    core_asn: int = Count(ASN_MAX, default=64900, description="ASN shared by the cores of a plane")
    leaf_asn_base: int = Count(ASN_MAX, default=4200000000, description="first leaf ASN; leaf k gets base + k")
    routing: Literal["static", "bgp"] = Field(
        "bgp", description="static: pinned per-destination routes (FRR staticd) + ECMP fallback; bgp: eBGP multipath")


class Layout(Strict):
    rack_units: int = Count(64, default=42, description="usable rack units per rack")
    racks_per_row: int = Count(1024, default=16, description="racks in a row; rows are named A, B, ...")
    switches_per_network_rack: int = Count(64, default=16, description="spine/core switches per network rack")
    leaf_units_per_node_rack: int = Count(64, 0, default=2, description="units at the top of a node rack kept for its leaves")
    rack_name: str = Field("{row}{rack:02d}", max_length=64, description="rack name; fields {row} (letter) {rack} (number in row)")
    rack_width_m: float = Measure(100, default=0.6, gt=0, description="rack width: distance between neighbouring racks of a row")
    row_pitch_m: float = Measure(100, default=3.0, gt=0, description="distance between two rows (rack depth + aisle)")
    ru_height_m: float = Measure(100, default=0.04445, gt=0, description="height of one rack unit")
    tray_rise_m: float = Measure(100, default=0.5, ge=0, description="from the top of a rack up to the overhead cable tray")


class Cabling(Strict):
    site: Name = Field(description="site name printed on every cable end")
    catalogue: str = Field(max_length=255, pattern=r"^[^\x00-\x1f\x7f]+$", description="cable catalogue file (YAML), relative to the model file")
    slack_m: float = Measure(100, default=1.0, ge=0, description="slack added to every measured cable run")


class SwitchNaming(Strict):
    leaf: str = Field("{zone}-leaf{index}", max_length=64, description="leaf name; fields {zone} {plane} {pod} {index}")
    spine: str = Field("{zone}-spine{index}", max_length=64, description="spine name")
    core: str = Field("{zone}-core{index}", max_length=64, description="core name")
    bigraph: str = Field("{zone}-{part}{index}", max_length=64, description="BiGraph switch name; {part} is upper/lower")


class TrafficClass(Strict):
    name: Name = Field(description="class name, e.g. nccl, storage")
    share: float = Measure(1e6, gt=0, description="share of link bandwidth (any unit: shares are normalised)")
    lossless: bool = Field(False, description="RoCE: PFC-protected priority (InfiniBand is always lossless)")
    isolated: bool = Field(True, description="must never share a VL (InfiniBand) or queue (RoCE) with another class")
    default: bool = Field(False, description="the class of unmarked traffic: gets SL 0 / DSCP 0")
    destinations: list[Literal["compute", "storage", "management", "other", "switch"]] | None = Field(
        None, description="roles of the nodes this class's traffic goes to (default: all); the per-VL deadlock "
        "check follows only these destinations")
    env_sl: list[EnvVar] = Field(default_factory=list, max_length=16, description="environment variables that carry the SL, e.g. NCCL_IB_SL")
    env_tc: list[EnvVar] = Field(default_factory=list, max_length=16, description="environment variables that carry the traffic class, e.g. NCCL_IB_TC")
    dscp: int | None = Field(None, ge=0, le=63, description="RoCE: the DSCP value the class is marked with (default: 0 for "
                             "the default class, 26 for the first lossless class, else AF/CS code points of its priority)")


class QosLimits(Strict):
    data_vls: Literal[1, 2, 4, 8, 15] = Field(8, description="InfiniBand data VLs the ports support (VL15 is management)")
    queues: int = Field(8, ge=1, le=8, description="RoCE egress queues per port")
    lossless_priorities: int = Field(2, ge=0, le=8, description="RoCE priorities that can run PFC")


class Slurm(Strict):
    """What `loom slurm` tells Slurm's topology plugins (topology.conf, topology.yaml)."""

    roles: list[NodeRole] = Field(["compute"], max_length=4, description="node roles Slurm schedules under their leaves")
    own_switch: list[NodeRole] = Field(default_factory=list, max_length=4, description="roles listed under a switch of "
                                       "their own (`<fabric>-<role>`) instead of their leaves; roles in neither list are left out")
    block_sizes: list[Annotated[int, Field(ge=1, le=1_000_000)]] | None = Field(None, min_length=1, max_length=16, description="topology/block sizes in nodes: the "
                                          "base block size first, each next a power-of-two multiple of the one before; "
                                          "default: the smallest block's size and its doublings up to the block count")


class ErrorLimit(Strict):
    degraded: float = Field(ge=0, le=1e12, description="errors per hour from which the link is degraded (reported)")
    failing: float = Field(ge=0, le=1e12, description="errors per hour from which the link is failing (drained by the watcher)")

    @model_validator(mode="after")
    def _ordered(self) -> "ErrorLimit":
        if self.failing < self.degraded:
            raise ValueError(f"failing ({self.failing:g}) is below degraded ({self.degraded:g}): a link would be drained "
                             "before it is reported; give failing at least degraded")
        return self


#: Default limits, errors per hour.  `degraded` is infiniband-diags' old `ibcheckerrs` threshold
#: (10 for each of these counters), read per hour instead of since the last reset; LinkDowned
#: degrades at any count.  `failing` is one error a minute (600/h; two link-downs a minute):
#: Loom's choice, well under the ~720 bit errors an hour that the IBTA's 1e-12 raw bit error
#: rate still allows at HDR, because a cable that shows symbol errors every minute after FEC is
#: the cable that goes dark next (the "flash cuts" of Fire-Flyer 2, seed 000 §VII).
HEALTH_LIMITS: dict[str, ErrorLimit] = {
    "SymbolErrorCounter": ErrorLimit(degraded=10, failing=600),
    "LinkErrorRecoveryCounter": ErrorLimit(degraded=10, failing=600),
    "LinkDownedCounter": ErrorLimit(degraded=1, failing=120),
    "PortRcvErrors": ErrorLimit(degraded=10, failing=600),
    "LocalLinkIntegrityErrors": ErrorLimit(degraded=10, failing=600),
    "ExcessiveBufferOverrunErrors": ErrorLimit(degraded=10, failing=600),
}
ErrorCounter = Literal["SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
                       "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors"]


class OpenSm(Strict):
    """OpenSM options loom writes into the subnet manager's options file beside the QoS ones."""

    max_wire_smps: int | None = Field(None, ge=1, le=64, description="SMPs OpenSM keeps in flight in a sweep "
                                      "(default: OpenSM's, 4).  A sweep of thousands of ports waits on each round "
                                      "trip; SMPs travel on VL15, which drops what a switch cannot buffer, so raise "
                                      "it where the fabric's switches take it (docs/targets.md)")


class Health(Strict):
    """How `loom health` and `loom watch` judge a link from its port counters (`loom.checks.link_health`)."""

    window_s: float = Field(3600.0, gt=0, le=7 * 86_400, description="error rates are taken over at least this "
                            "many seconds of readings (a burst counts as spread over the whole window)")
    clean_s: float = Field(600.0, ge=0, le=7 * 86_400, description="a link the watcher drained returns once no error "
                           "counter of either end has grown for this many seconds")
    limits: dict[ErrorCounter, ErrorLimit] = Field(default_factory=dict, description="errors per hour per PortCounters "
                                                   "counter; counters not named keep the defaults (see docs/health.md)")

    def limit(self, counter: str) -> ErrorLimit:
        return self.limits.get(counter) or HEALTH_LIMITS[counter]


class Qos(Strict):
    classes: list[TrafficClass] = Field(min_length=1, max_length=16, description="traffic classes")
    limits: QosLimits = Field(default_factory=QosLimits, description="hardware limits of the fabric's ports")
    cnp_dscp: int = Field(48, ge=0, le=63, description="RoCE: DSCP of congestion notification packets (DCQCN's CNPs), "
                          "served by a strict-priority queue of their own")


# ------------------------------------------------------------------------------- partitions


def _pkey(value):
    """A P_Key written as a number or as hex text ("0x0101"): YAML reads 0x0101 as a number
    already, a quoted one arrives as text."""
    if isinstance(value, str) and re.fullmatch(r"0[xX][0-9a-fA-F]{1,4}", value.strip()):
        return int(value.strip(), 16)
    return value


#: 0x0000 is the invalid P_Key and 0x7fff the default partition OpenSM keeps for itself (its own
#: port a full member, every other port limited), so a tenant's key lies between them.
PKey = Annotated[int, BeforeValidator(_pkey), Field(ge=0x0001, le=0x7FFE)]
Membership = Literal["full", "limited"]


class PartitionMember(Strict):
    """Nodes of a partition: those that match every selector given (role and zone: the role's
    nodes in that zone), all full or all limited members."""

    role: NodeRole | None = Field(None, description="nodes of this role")
    group: Name | None = Field(None, description="nodes of this node group")
    zone: Name | None = Field(None, description="nodes attached to this zone (a dual-homed node is in both of its zones)")
    nodes: str | None = Field(None, max_length=4096, description="nodes by name, as a hostlist, e.g. z0-c[00-03],st01")
    membership: Membership = Field(description="full: may talk to every member; limited: only to full members")


class Ipoib(Strict):
    """The partition's IPoIB broadcast group (OpenSM creates it; hosts get a child interface)."""

    mtu: Literal[256, 512, 1024, 2048, 4096] = Field(2048, description="IB MTU of the broadcast group, in bytes")
    rate: Literal[10, 20, 40, 56, 100, 200, 400] | None = Field(None, description="rate of the group in Gb/s (default: OpenSM's)")


class Partition(Strict):
    name: Name = Field(description="partition (tenant) name, unique in the model")
    pkey: PKey = Field(description="P_Key, 0x0001 to 0x7ffe, unique (0x7fff is the default partition the SM keeps)")
    members: list[PartitionMember] = Field(min_length=1, max_length=256, description="who belongs, full or limited")
    ipoib: Ipoib | None = Field(None, description="run IPoIB on the partition (a broadcast group and a child interface per host)")
    qos_class: Name | None = Field(None, description="traffic class (qos.classes) the partition's traffic rides: its SL")


class Model(Strict):
    name: Name = Field(description="fabric name")
    technology: Technology = Field(description="infiniband or ethernet, for every switch and NIC")
    description: str = Field("", max_length=10_000, description="free text")
    switch_models: dict[Name, SwitchModel] = Field(min_length=1, description="switch hardware by name")
    node_types: dict[Name, NodeType] = Field(min_length=1, description="node hardware by name")
    zones: list[Zone] = Field(min_length=1, max_length=256, description="the fabric's zones (fat trees or BiGraphs)")
    planes: Planes | None = Field(None, description="replicate every zone N times as parallel planes")
    node_groups: list[NodeGroup] = Field(min_length=1, max_length=4096, description="nodes and where they attach")
    inter_zone_links: list[InterZoneLinks] = Field(default_factory=list, max_length=1024, description="links joining zones")
    subnet_manager: Name | None = Field(None, description="name of the node running the subnet manager")
    addressing: Addressing = Field(default_factory=Addressing, description="Ethernet addressing pools and ASNs")
    layout: Layout = Field(default_factory=Layout, description="physical placement rules")
    naming: SwitchNaming = Field(default_factory=SwitchNaming, description="switch naming patterns")
    cabling: Cabling | None = Field(None, description="what the cabling sheets need: site and cable catalogue")
    qos: Qos | None = Field(None, description="traffic classes: SL/VL and arbitration (InfiniBand), DSCP/PFC/ETS (RoCE)")
    partitions: list[Partition] = Field(default_factory=list, max_length=1024, description="InfiniBand partitions "
                                        "(tenants): who may talk to whom, by P_Key; see docs/partitions.md")
    slurm: Slurm = Field(default_factory=Slurm, description="Slurm topology: which nodes it schedules, block sizes")
    health: Health = Field(default_factory=Health, description="InfiniBand: link health limits (`loom health`, `loom watch`)")
    opensm: OpenSm = Field(default_factory=OpenSm, description="InfiniBand: OpenSM options beside QoS (sweep tuning)")
    relayout: bool = Field(False, description="place everything by policy, ignoring the lock file: devices may change "
                           "rack, RU, leaf or port and LIDs may be renumbered, and `loom diff` accepts that churn")

    @property
    def plane_count(self) -> int:
        return self.planes.count if self.planes else 1
