"""Physical and protocol limits, checked before any other rule and before the expansion.

The schema bounds each field on its own; these rules bound what fields multiply into: switches,
nodes, NIC ports, cables and LFT cells of the whole fabric, LIDs per InfiniBand subnet, ports of an
InfiniBand switch, ASNs and loopbacks an Ethernet plane draws, rack units, and the patterns names
are made from.  They cost a few arithmetic operations per zone and group, so a model asking for
`count: 1000000000` is refused in microseconds instead of after a billion names were built; when
any of them fails, `load_model` reports them and runs no other rule (the other rules generate
names and walk ports, which is only safe within these bounds).
"""

from __future__ import annotations

import ipaddress
from typing import Iterator

from .names import pattern_problem
from .rules import Finding
from .schema import ASN_MAX, FatTree2, FatTree3, Model

#: An IB switch port number is 8 bits; 0 is the switch's management port and an LFT entry of
#: 255 means "no route" (OpenSM's OSM_NO_PATH, and Loom's NO_ROUTE), so ports are 1..254.
MAX_IB_PORTS = 254
#: Unicast LIDs of one subnet: 0x0001..0xBFFF (0xC000 up is multicast).
MAX_UNICAST_LID = 0xBFFF
#: Bounds on the whole fabric: the largest reference fabric (roce-4plane: 768 switches, 4,096
#: nodes, 32,768 NIC ports) fits with room to spare; beyond them one run of `loom check` would
#: take minutes and gigabytes.
MAX_SWITCHES = 16_384
MAX_NODES = 65_536
MAX_HOST_PORTS = 131_072
MAX_CABLES = 1_048_576
#: Cells of one subnet's forwarding tables (switches × LIDs): the routing engine's arrays.  A subnet at
#: the LID limit of 64-port switches (3,520 switches × 43,457 LIDs, `bench/models/lid-limit-40k.yaml`)
#: fits; the checks hold a few bytes per cell.
MAX_LFT_CELLS = 1 << 28
#: Partition member entries × nodes: each entry selects among every node (`loom.model.partitions`),
#: so this bounds the resolution (Fire-Flyer 2's five entries over 1,404 nodes are 7,020).
MAX_PARTITION_WORK = 1 << 22

GROUP_FIELDS = {"group": "g", "index": 0, "zone": "z"}
SWITCH_FIELDS = {"zone": "z", "plane": 0, "pod": None, "index": 0, "part": "upper"}
RACK_FIELDS = {"row": "A", "rack": 1}


def switch_count(z) -> int:
    if isinstance(z, FatTree2):
        return z.leaves + z.spines
    if isinstance(z, FatTree3):
        return z.pods * (z.leaves_per_pod + z.spines_per_pod) + z.cores
    return z.switches


def switch_links(z) -> int:
    if isinstance(z, FatTree2):
        return z.leaves * z.leaf_up
    if isinstance(z, FatTree3):
        return z.pods * (z.leaves_per_pod * z.leaf_up + z.spines_per_pod * z.spine_up)
    return (z.switches // 2) ** 2


def _host_ports(model: Model) -> int:
    """NIC ports of the whole fabric (every plane)."""
    return sum(g.count * model.node_types[g.node_type].nic_ports for g in model.node_groups if g.node_type in model.node_types)


def switch_ports(model: Model) -> Iterator[Finding]:
    """Ports per switch model: 254 at most for either technology.  InfiniBand's port numbers are
    8 bits; Loom's forwarding tables (`loom.routing.base.Tables`, which the checks walk for
    Ethernet planes too) hold a port in the same byte, so a wider Ethernet switch is refused here
    rather than failing in `route` or `check`."""
    for name, sm in model.switch_models.items():
        if sm.ports <= MAX_IB_PORTS:
            continue
        if model.technology == "infiniband":
            yield Finding(("switch_models", name, "ports"), f"an InfiniBand switch has at most {MAX_IB_PORTS} ports, not {sm.ports} "
                          "(port numbers are 8 bits; 0 is management, 255 means no route)", f"use at most {MAX_IB_PORTS} ports")
        else:
            yield Finding(("switch_models", name, "ports"), f"Loom routes Ethernet switches of at most {MAX_IB_PORTS} ports, not "
                          f"{sm.ports} (its forwarding tables hold a port number in one byte; 255 means no route)",
                          f"use at most {MAX_IB_PORTS} ports: model the ports the fabric cables (e.g. 128 x 400GbE of a "
                          "51.2T switch), not every breakout")


def fabric_size(model: Model) -> Iterator[Finding]:
    planes = model.plane_count
    switches = planes * sum(switch_count(z) for z in model.zones)
    nodes = sum(g.count for g in model.node_groups)
    ports = _host_ports(model)
    cables = planes * (sum(switch_links(z) for z in model.zones) + sum(l.count for l in model.inter_zone_links)) + ports
    for what, n, cap, loc, fix in (
        ("switches", switches, MAX_SWITCHES, ("zones",), "use fewer or smaller zones (or fewer planes)"),
        ("nodes", nodes, MAX_NODES, ("node_groups",), "reduce the group counts"),
        ("NIC ports", ports, MAX_HOST_PORTS, ("node_groups",), "reduce the group counts or the NICs per node"),
        ("cables", cables, MAX_CABLES, ("zones",), "use fewer or smaller zones"),
    ):
        if n > cap:
            yield Finding(loc, f"the fabric has {n} {what}, more than Loom's limit of {cap}", fix)
    if switches > MAX_SWITCHES or ports > MAX_HOST_PORTS:
        return
    subnet_switches = switches // planes
    subnet_lids = subnet_switches + ports // planes
    if model.technology == "infiniband" and subnet_lids > MAX_UNICAST_LID:
        yield Finding(("zones",), f"each subnet needs {subnet_lids} unicast LIDs ({subnet_switches} switches + {ports // planes} "
                      f"CA ports) but a subnet has {MAX_UNICAST_LID} (0x0001-0xBFFF)",
                      "split the fabric into planes (one subnet each), or use fewer nodes")
    elif subnet_switches * (subnet_lids + 1) > MAX_LFT_CELLS:
        yield Finding(("zones",), f"one subnet's forwarding tables would hold {subnet_switches} × {subnet_lids + 1} entries, "
                      f"more than Loom's limit of {MAX_LFT_CELLS}", "split the fabric into planes, or use fewer switches")


def patterns(model: Model) -> Iterator[Finding]:
    checks = [(("node_groups", i, "name_pattern"), g.name_pattern, GROUP_FIELDS) for i, g in enumerate(model.node_groups)]
    checks += [(("naming", role), getattr(model.naming, role), SWITCH_FIELDS) for role in ("leaf", "spine", "core", "bigraph")]
    checks += [(("layout", "rack_name"), model.layout.rack_name, RACK_FIELDS)]
    for loc, pattern, fields in checks:
        problem = pattern_problem(pattern, fields)
        if problem:
            yield Finding(loc, f"bad name pattern {pattern!r}: {problem}",
                          f"use plain fields {', '.join('{' + f + '}' for f in fields)}, optionally with a width like {{index:04d}}")


def asns(model: Model) -> Iterator[Finding]:
    """Each ASN a plane hands out stays within 1..4294967294."""
    if model.technology != "ethernet":
        return
    a = model.addressing
    edges = max(z.edge_switches for z in model.zones)
    pods = max((z.pods for z in model.zones if isinstance(z, FatTree3)), default=1)
    for field, first, n in (("leaf_asn_base", a.leaf_asn_base, edges), ("spine_asn", a.spine_asn, pods)):
        if first + n - 1 > ASN_MAX:
            yield Finding(("addressing", field), f"{field} {first} + {n - 1} (one ASN per {'leaf' if n == edges else 'pod'}) "
                          f"passes the largest 32-bit ASN {ASN_MAX}", f"use at most {ASN_MAX - n + 1}")


def pools(model: Model) -> Iterator[Finding]:
    """The loopback pool holds one /32 per switch (after the network address)."""
    if model.technology != "ethernet":
        return
    for field in ("p2p_pool", "loopback_pool"):
        try:
            ipaddress.IPv4Network(getattr(model.addressing, field))
        except ValueError as exc:
            yield Finding(("addressing", field), f"not an IPv4 prefix: {exc}", "write a prefix like 10.0.0.0/8")
            return
    pool = ipaddress.IPv4Network(model.addressing.loopback_pool)
    switches = model.plane_count * sum(switch_count(z) for z in model.zones)
    if switches + 1 > pool.num_addresses:
        yield Finding(("addressing", "loopback_pool"), f"{switches} switch loopbacks do not fit {pool} ({pool.num_addresses} addresses, "
                      "the first is the network address)", f"use a prefix of at most /{32 - (switches + 1).bit_length()}")


def rack_units(model: Model) -> Iterator[Finding]:
    lay = model.layout
    if lay.leaf_units_per_node_rack >= lay.rack_units:
        yield Finding(("layout", "leaf_units_per_node_rack"), f"{lay.leaf_units_per_node_rack} units kept for leaves leave no room for "
                      f"nodes in a {lay.rack_units}U rack", f"use fewer than {lay.rack_units}")
        return
    room = lay.rack_units - lay.leaf_units_per_node_rack
    used = {g.node_type for g in model.node_groups}
    for name, nt in model.node_types.items():
        if name in used and nt.height_u > room:
            yield Finding(("node_types", name, "height_u"), f"a {nt.height_u}U node does not fit the {room}U a node rack has "
                          f"({lay.rack_units} rack units - {lay.leaf_units_per_node_rack} kept for leaves)", f"use at most {room}")
    for name, sm in model.switch_models.items():
        if sm.height_u * lay.switches_per_network_rack > lay.rack_units:
            yield Finding(("switch_models", name, "height_u"), f"{lay.switches_per_network_rack} switches of {sm.height_u}U do not fit a "
                          f"{lay.rack_units}U network rack", "lower layout.switches_per_network_rack or the height")


def partition_entries(model: Model) -> Iterator[Finding]:
    entries = sum(len(p.members) for p in model.partitions)
    nodes = sum(g.count for g in model.node_groups)
    if entries * nodes > MAX_PARTITION_WORK:
        yield Finding(("partitions",), f"{entries} partition member entries over {nodes} nodes is more than Loom's "
                      f"limit of {MAX_PARTITION_WORK} (entries × nodes)",
                      "select members by role, group or zone, or name many nodes in one hostlist, not node by node")


LIMITS = (switch_ports, fabric_size, patterns, asns, pools, rack_units, partition_entries)


def check_limits(model: Model) -> list[Finding]:
    """Every limit finding; an empty list means the other rules and the expansion are bounded."""
    return [f for rule in LIMITS for f in rule(model)]
