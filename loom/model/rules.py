"""Whole-model rules: what pydantic cannot see from one field alone.

Each rule is a generator of `Finding`s; `check_rules` runs them in order.  A rule names the YAML
location it is about so the loader can print the line.  The rules refuse fabrics that cannot be
built (ports that do not exist, speeds that cannot link, references to nothing) before the
expansion starts, so the expansion itself can assume a sound model.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterator

from .racks import group_racks
from .schema import SPEEDS_GBPS, BiGraph, FatTree2, FatTree3, Model, NodeGroup


@dataclass(frozen=True)
class Finding:
    loc: tuple
    message: str
    fix: str


def ports_per_zone(model: Model, group: NodeGroup) -> int:
    """NIC ports one node of `group` cables into each of its zones (in each plane)."""
    ports = model.node_types[group.node_type].nic_ports
    return ports // model.plane_count // len(group.zones)


def node_name(group: NodeGroup, index: int) -> str:
    return group.name_pattern.format(group=group.name, index=index, zone=group.zones[0])


def _duplicates(names: list[str]) -> list[str]:
    return [n for n, c in Counter(names).items() if c > 1]


def unique_names(model: Model) -> Iterator[Finding]:
    for field, names in (("zones", [z.name for z in model.zones]), ("node_groups", [g.name for g in model.node_groups])):
        for dup in _duplicates(names):
            i = len(names) - 1 - names[::-1].index(dup)
            yield Finding((field, i, "name"), f"name `{dup}` is used twice in {field}", "give every entry its own name")
    for tname, nt in model.node_types.items():
        for field in ("root_complexes", "pcie_switches", "gpus", "nics"):
            names = [x.name for x in getattr(nt, field)]
            for dup in _duplicates(names):
                yield Finding(("node_types", tname, field), f"`{dup}` appears twice in {field} of node type {tname}",
                              "give every device of a node type its own name")


def references(model: Model) -> Iterator[Finding]:
    zones = {z.name for z in model.zones}
    for i, z in enumerate(model.zones):
        if z.switch_model not in model.switch_models:
            yield Finding(("zones", i, "switch_model"), f"unknown switch model `{z.switch_model}`",
                          f"use one of: {', '.join(model.switch_models)} (or add it under switch_models)")
    for i, g in enumerate(model.node_groups):
        if g.node_type not in model.node_types:
            yield Finding(("node_groups", i, "node_type"), f"unknown node type `{g.node_type}`",
                          f"use one of: {', '.join(model.node_types)} (or add it under node_types)")
        for j, zname in enumerate(g.zones):
            if zname not in zones:
                yield Finding(("node_groups", i, "zones", j), f"unknown zone `{zname}`", f"use one of: {', '.join(sorted(zones))}")
    for i, link in enumerate(model.inter_zone_links):
        for end in ("a", "b"):
            if getattr(link, end).zone not in zones:
                yield Finding(("inter_zone_links", i, end, "zone"), f"unknown zone `{getattr(link, end).zone}`",
                              f"use one of: {', '.join(sorted(zones))}")
    for tname, nt in model.node_types.items():
        rcs = {r.name for r in nt.root_complexes}
        sws = {s.name: s.root_complex for s in nt.pcie_switches}
        for k, s in enumerate(nt.pcie_switches):
            if s.root_complex not in rcs:
                yield Finding(("node_types", tname, "pcie_switches", k, "root_complex"), f"unknown root complex `{s.root_complex}`",
                              f"use one of: {', '.join(sorted(rcs))}")
        for k, r in enumerate(nt.root_complexes):
            if r.numa >= nt.numa_nodes:
                yield Finding(("node_types", tname, "root_complexes", k, "numa"),
                              f"NUMA node {r.numa} does not exist: the node has {nt.numa_nodes} (sockets × numa_per_socket)",
                              f"use a NUMA node from 0 to {nt.numa_nodes - 1}")
        for field in ("gpus", "nics"):
            for k, dev in enumerate(getattr(nt, field)):
                if dev.root_complex not in rcs:
                    yield Finding(("node_types", tname, field, k, "root_complex"), f"unknown root complex `{dev.root_complex}`",
                                  f"use one of: {', '.join(sorted(rcs))}")
                elif dev.pcie_switch is not None and sws.get(dev.pcie_switch) != dev.root_complex:
                    what = "unknown PCIe switch" if dev.pcie_switch not in sws else "PCIe switch on another root complex:"
                    yield Finding(("node_types", tname, field, k, "pcie_switch"), f"{what} `{dev.pcie_switch}`",
                                  "name a PCIe switch listed under pcie_switches that hangs off the same root complex")
        gpus = {g.name for g in nt.gpus}
        for k, pair in enumerate(nt.nvlink_pairs):
            for name in pair:
                if name not in gpus:
                    yield Finding(("node_types", tname, "nvlink_pairs", k), f"NVLink pair names unknown GPU `{name}`",
                                  f"use GPU names of this node type: {', '.join(sorted(gpus)) or '(none defined)'}")


def technology(model: Model) -> Iterator[Finding]:
    for name, sm in model.switch_models.items():
        if sm.technology != model.technology and any(z.switch_model == name for z in model.zones):
            yield Finding(("switch_models", name, "technology"),
                          f"switch model {name} is {sm.technology} but the fabric is {model.technology}",
                          "use a switch model of the fabric's technology, or change `technology`")


def switch_ports(model: Model) -> Iterator[Finding]:
    """Port budget of each switch: what the topology asks of it must fit its port count."""
    for i, z in enumerate(model.zones):
        sm = model.switch_models.get(z.switch_model)
        if sm is None:
            continue
        P = sm.ports
        if isinstance(z, (FatTree2, FatTree3)):
            spines = z.spines if isinstance(z, FatTree2) else z.spines_per_pod
            leaves = z.leaves if isinstance(z, FatTree2) else z.leaves_per_pod
            if z.leaf_down + z.leaf_up > P:
                yield Finding(("zones", i, "leaf_down"), f"a leaf needs {z.leaf_down} + {z.leaf_up} = {z.leaf_down + z.leaf_up} ports but a {z.switch_model} has {P}",
                              f"make leaf_down + leaf_up at most {P}")
            if z.leaf_up % spines:
                yield Finding(("zones", i, "leaf_up"), f"leaf_up {z.leaf_up} cannot be split evenly over {spines} spines",
                              f"use a multiple of {spines} (each leaf takes the same number of links to every spine)")
            else:
                spine_down = leaves * (z.leaf_up // spines)
                spine_up = z.spine_up if isinstance(z, FatTree3) else 0
                if spine_down + spine_up > P:
                    yield Finding(("zones", i, "leaves" if isinstance(z, FatTree2) else "leaves_per_pod"),
                                  f"each spine needs {spine_down} down + {spine_up} up ports but a {z.switch_model} has {P}",
                                  "use fewer leaves, more spines, or a larger switch")
            if z.oversubscription is not None and abs(z.oversubscription - z.leaf_down / z.leaf_up) > 1e-9:
                yield Finding(("zones", i, "oversubscription"),
                              f"declared oversubscription {z.oversubscription} but leaf_down/leaf_up = {z.leaf_down}/{z.leaf_up} = {z.leaf_down / z.leaf_up:g}",
                              "correct leaf_down/leaf_up or the declared ratio")
        if isinstance(z, FatTree3):
            if z.cores % z.spines_per_pod:
                yield Finding(("zones", i, "cores"), f"{z.cores} cores cannot be split into {z.spines_per_pod} equal groups (one per spine position)",
                              f"use a multiple of spines_per_pod ({z.spines_per_pod})")
            else:
                group = z.cores // z.spines_per_pod
                if z.spine_up % group:
                    yield Finding(("zones", i, "spine_up"), f"spine_up {z.spine_up} cannot be split evenly over the {group} cores each spine reaches",
                                  f"use a multiple of {group}")
                elif z.pods * (z.spine_up // group) > P:
                    yield Finding(("zones", i, "pods"), f"each core needs {z.pods * (z.spine_up // group)} ports but a {z.switch_model} has {P}",
                                  "use fewer pods or more cores")
        if isinstance(z, BiGraph):
            if z.switches % 2:
                yield Finding(("zones", i, "switches"), f"a BiGraph needs an even switch count, got {z.switches}",
                              "use an even number: half go to the upper part, half to the lower")
            if z.hosts_per_switch > z.switches // 2:
                yield Finding(("zones", i, "hosts_per_switch"),
                              f"M = {z.hosts_per_switch} hosts per switch exceeds N/2 = {z.switches // 2} (EFLOPS: M <= N/2 keeps the bipartite links from being oversubscribed)",
                              f"use at most {z.switches // 2} hosts per switch, or more switches")
            if z.hosts_per_switch + z.switches // 2 > P:
                yield Finding(("zones", i, "switches"), f"each switch needs {z.hosts_per_switch} + {z.switches // 2} ports but a {z.switch_model} has {P}",
                              "use fewer switches or hosts per switch")


def _several_zones(model: Model, i: int, g: NodeGroup, nt) -> Iterator[Finding]:
    """Dual homing (exactly two zones) and multi homing (k zones): NIC port j goes to zones[j mod k]."""
    k = len(set(g.zones))
    if g.homing == "dual" and len(g.zones) < 2:
        yield Finding(("node_groups", i, "zones"), f"group {g.name} is dual-homed but lists {len(g.zones)} zone",
                      "list two zones (one NIC port goes to each), or set homing: single")
        return
    if g.homing == "dual" and (len(g.zones) > 2 or k != 2):
        yield Finding(("node_groups", i, "zones"), f"a dual-homed group needs exactly two different zones, got {g.zones}",
                      "list two different zones")
        return
    if k < 2 or k != len(g.zones):
        yield Finding(("node_groups", i, "zones"), f"a multi-homed group needs two or more different zones, got {g.zones}",
                      "list each zone once (NIC port i goes to zones[i mod k])")
        return
    if model.planes:
        yield Finding(("node_groups", i, "homing"), f"{g.homing} homing and planes cannot be combined",
                      "use planes (NICs spread over planes) or several zones, not both")
    if nt and nt.nic_ports % k:
        yield Finding(("node_groups", i, "node_type"), f"node type {g.node_type} has {nt.nic_ports} NIC port(s), "
                      f"which cannot be spread evenly over {k} zones",
                      f"give each node a multiple of {k} NIC ports (one per zone), or set homing: single")


def homing(model: Model) -> Iterator[Finding]:
    for i, g in enumerate(model.node_groups):
        nt = model.node_types.get(g.node_type)
        if g.homing != "single":
            yield from _several_zones(model, i, g, nt)
        elif len(g.zones) != 1:
            yield Finding(("node_groups", i, "zones"), f"group {g.name} lists {len(g.zones)} zones but is single-homed",
                          "list one zone, or set homing: dual (two zones) or multi (k zones)")
        if nt and model.planes and nt.nic_ports % model.planes.count:
            yield Finding(("node_groups", i, "node_type"),
                          f"node type {g.node_type} has {nt.nic_ports} NIC ports, which cannot be spread evenly over {model.planes.count} planes",
                          f"give each node a multiple of {model.planes.count} NIC ports, or change planes.count")
        if nt and g.placement == "rail":
            yield from _rail_groups(model, i, g, nt)
        if nt and g.placement == "contiguous" and any(n.ports > 1 for n in nt.nics):
            yield Finding(("node_groups", i, "placement"), "a dual-port NIC's two ports must land on two different leaves; contiguous placement puts them on one",
                          "use placement: spread")


def _rail_groups(model: Model, i: int, g: NodeGroup, nt) -> Iterator[Finding]:
    """placement: rail needs the zone's leaves to split into groups of R rails (R = a node's
    ports in one plane and zone) and no other placement override."""
    rails = nt.nic_ports // (model.planes.count if model.planes else 1) // len(g.zones)
    for zname in g.zones:
        z = next((z for z in model.zones if z.name == zname), None)
        if z is not None and (rails < 1 or z.edge_switches % rails):
            yield Finding(("node_groups", i, "placement"), f"placement: rail puts each of a node's {rails} NIC ports in "
                          f"zone {zname} on its own rail leaf, but the zone's {z.edge_switches} leaves do not split into "
                          f"groups of {rails}", f"use a multiple of {rails} leaves, or placement: spread")
    if g.leaf_counts is not None:
        yield Finding(("node_groups", i, "leaf_counts"), "leaf_counts and placement: rail both say where nodes go",
                      "drop one of them")


def leaf_counts(model: Model) -> Iterator[Finding]:
    zones = {z.name: z for z in model.zones}
    for i, g in enumerate(model.node_groups):
        if g.leaf_counts is None:
            continue
        loc = ("node_groups", i, "leaf_counts")
        if sum(g.leaf_counts.values()) != g.count:
            yield Finding(loc, f"leaf_counts place {sum(g.leaf_counts.values())} nodes but the group has {g.count}",
                          "make the counts add up to `count`")
        if g.node_type in model.node_types and ports_per_zone(model, g) != 1:
            yield Finding(loc, f"leaf_counts need one NIC port per node in each zone; {g.node_type} has "
                          f"{ports_per_zone(model, g)}", "use the placement policy or `pinned` for multi-port nodes")
        for zname in g.zones:
            z = zones.get(zname)
            for leaf, n in g.leaf_counts.items():
                if z is not None and not 0 <= leaf < z.edge_switches:
                    yield Finding(loc + (leaf,), f"leaf {leaf} does not exist in zone {zname}",
                                  f"use a leaf index from 0 to {z.edge_switches - 1}")
                elif z is not None and not 0 <= n <= z.edge_down:
                    yield Finding(loc + (leaf,), f"{n} nodes on leaf {leaf}, which has {z.edge_down} node-facing ports",
                                  f"use a count from 0 to {z.edge_down}")


def speeds(model: Model) -> Iterator[Finding]:
    zone_speed = {z.name: model.switch_models[z.switch_model].speed for z in model.zones if z.switch_model in model.switch_models}
    for i, g in enumerate(model.node_groups):
        nt = model.node_types.get(g.node_type)
        if nt is None:
            continue
        for zname in g.zones:
            for k, nic in enumerate(nt.nics):
                zs = zone_speed.get(zname)
                if zs and SPEEDS_GBPS[zs] != SPEEDS_GBPS[nic.speed]:
                    yield Finding(("node_groups", i, "zones"),
                                  f"speed mismatch: {g.node_type} NIC {nic.name} is {nic.speed} but zone {zname}'s switches are {zs}",
                                  f"use a node type whose NICs run at {zs}, or a switch model of {nic.speed}")
    for i, link in enumerate(model.inter_zone_links):
        a, b = zone_speed.get(link.a.zone), zone_speed.get(link.b.zone)
        if a and b and SPEEDS_GBPS[a] != SPEEDS_GBPS[b]:
            yield Finding(("inter_zone_links", i), f"speed mismatch: zone {link.a.zone} is {a}, zone {link.b.zone} is {b}",
                          "join zones whose switches run at the same speed")


def inter_zone(model: Model) -> Iterator[Finding]:
    zones = {z.name: z for z in model.zones}
    for i, link in enumerate(model.inter_zone_links):
        if link.a.zone == link.b.zone:
            yield Finding(("inter_zone_links", i, "b", "zone"), "an inter-zone link must join two different zones",
                          "name two different zones in a and b")
        for end in ("a", "b"):
            e = getattr(link, end)
            z = zones.get(e.zone)
            if z is None or e.leaves is None:
                continue
            if len(e.leaves) != link.count:
                yield Finding(("inter_zone_links", i, end, "leaves"), f"{len(e.leaves)} leaves listed for {link.count} links",
                              "list one leaf index per link (repeat an index for two links on one leaf), or drop `leaves`")
            for k, leaf in enumerate(e.leaves):
                if not 0 <= leaf < z.edge_switches:
                    yield Finding(("inter_zone_links", i, end, "leaves", k), f"leaf {leaf} does not exist in zone {e.zone} (leaves 0..{z.edge_switches - 1})",
                                  f"use a leaf index from 0 to {z.edge_switches - 1}")


def border_leaves(model: Model) -> dict[str, set[int]]:
    """{zone: leaf indices that take inter-zone links} (the expansion's default: the last leaves)."""
    zones = {z.name: z for z in model.zones}
    out: dict[str, set[int]] = {z.name: set() for z in model.zones}
    for link in model.inter_zone_links:
        for e in (link.a, link.b):
            if e.zone in zones:
                n = zones[e.zone].edge_switches
                out[e.zone] |= set(e.leaves) if e.leaves is not None else {n - 1 - (i % n) for i in range(link.count)}
    return out


def direction_split(model: Model) -> bool:
    """Does cross-zone traffic need VLs of its own?  A zone whose inter-zone links leave from more
    than one leaf closes a credit loop on one VL (traffic that came in goes up and down to
    another border leaf that other traffic leaves by); then traffic from a lower-numbered zone to
    a higher one (and within a zone) rides one set of VLs, traffic the other way a second set,
    and neither set can close a loop (see docs/routing.md)."""
    return model.technology == "infiniband" and any(len(v) > 1 for v in border_leaves(model).values())


def domains(model: Model) -> list[tuple[str, str | None]]:
    """The units VL sets are assigned between: a fat-tree zone is one, a BiGraph zone two
    (zone, "upper") and (zone, "lower"), since a BiGraph's VL set follows the part a packet
    starts in."""
    return [d for z in model.zones for d in ([(z.name, "upper"), (z.name, "lower")] if isinstance(z, BiGraph) else [(z.name, None)])]


def zone_layers(model: Model) -> list[list[int]] | None:
    """[source domain][destination domain] (`domains`; one per fat-tree zone) → VL set 0 or 1;
    None when one VL set suffices.
    - cross-zone direction split: 0 within a zone or to a higher-numbered zone (the class's own
      VL), 1 to a lower-numbered zone (the class's second VL);
    - BiGraph (EFLOPS's separate priority per direction): 0 from the upper part, 1 from the
      lower part.  Upper→upper paths turn in the lower part and lower→lower paths in the upper
      part; on one VL the two close credit loops, on their own VL sets neither can."""
    split = direction_split(model)
    if not split and not any(isinstance(z, BiGraph) for z in model.zones):
        return None
    doms = domains(model)
    zi = {z.name: i for i, z in enumerate(model.zones)}

    def layer(a: tuple[str, str | None], b: tuple[str, str | None]) -> int:
        if a[1] is not None:
            return int(a[1] == "lower")
        return int(split and zi[a[0]] > zi[b[0]])

    return [[layer(a, b) for b in doms] for a in doms]


def monotone_zone_paths(model: Model) -> list[tuple[str, str]]:
    """Connected zone pairs with no path through zones of only rising (or only falling) index:
    with the direction split every cross-zone path must be one."""
    import networkx as nx  # here, not at the top: `loom validate` of a one-zone model never needs it

    names = [z.name for z in model.zones]
    links = nx.Graph([(names.index(l.a.zone), names.index(l.b.zone)) for l in model.inter_zone_links
                      if l.a.zone in names and l.b.zone in names])
    links.add_nodes_from(range(len(names)))
    rising = nx.DiGraph((min(e), max(e)) for e in links.edges())
    rising.add_nodes_from(links)
    return [(names[a], names[b]) for a in range(len(names)) for b in range(a + 1, len(names))
            if nx.has_path(links, a, b) and not nx.has_path(rising, a, b)]


def cross_zone_vls(model: Model) -> Iterator[Finding]:
    """With the direction split, the VLs must suffice for twice the classes, and every zone pair
    needs a path of rising (or falling) zone index."""
    if not direction_split(model):
        return
    for a, b in monotone_zone_paths(model):
        yield Finding(("inter_zone_links",), f"zones {a} and {b} are joined only through a zone numbered outside them: "
                      "cross-zone traffic would need a third set of VLs to stay free of credit loops",
                      f"add inter-zone links between {a} and {b}, reorder the zones, or put each zone's links on one leaf")
    lim = model.qos.limits.data_vls if model.qos else 8
    classes = model.qos.classes if model.qos else []
    isolated = [c for c in classes if c.isolated]
    need = 2 * max(1, len(isolated) + (1 if len(isolated) < len(classes) else 0))
    if need > lim:
        yield Finding(("qos", "limits", "data_vls"),
                      f"inter-zone links leave some zone from several leaves, so cross-zone traffic needs VLs of its own: "
                      f"{need} VLs, but the ports support {lim}",
                      "put each zone's inter-zone links on one leaf (`leaves: [39, 39, ...]`), or have fewer isolated classes")


def zone_ports(model: Model) -> Iterator[Finding]:
    """Port budget of each zone: nodes and inter-zone links must fit the edge switches' down ports."""
    for i, z in enumerate(model.zones):
        need: Counter[str] = Counter()
        for g in model.node_groups:
            if z.name in g.zones and g.node_type in model.node_types:
                need[f"{g.name} {g.count}×{ports_per_zone(model, g)}"] += g.count * ports_per_zone(model, g)
        for link in model.inter_zone_links:
            if z.name in (link.a.zone, link.b.zone):
                need["inter-zone"] += link.count
        have = z.edge_switches * z.edge_down
        if sum(need.values()) > have:
            parts = " + ".join(f"{k} ({v})" for k, v in need.items())
            yield Finding(("zones", i), f"zone {z.name} needs {sum(need.values())} node-facing ports ({parts}) but has {have} ({z.edge_switches} edge switches × {z.edge_down})",
                          "add leaves, move nodes to another zone, or reduce the group counts")


def node_names(model: Model) -> Iterator[Finding]:
    seen: dict[str, str] = {}
    for i, g in enumerate(model.node_groups):
        try:
            names = [node_name(g, k) for k in range(g.count)]
        except (KeyError, IndexError, ValueError) as exc:
            yield Finding(("node_groups", i, "name_pattern"), f"bad name pattern {g.name_pattern!r} ({exc})",
                          "use Python format fields {group}, {index} (e.g. {index:04d}) and {zone}")
            continue
        if len(set(names)) != len(names):
            yield Finding(("node_groups", i, "name_pattern"), f"name pattern {g.name_pattern!r} gives the same name to several nodes",
                          "include {index} in the pattern")
            continue
        for n in names:
            if n in seen:
                yield Finding(("node_groups", i, "name_pattern"), f"node name `{n}` is also made by group {seen[n]}",
                              "give the groups name patterns that cannot collide")
                break
            seen[n] = g.name
    if model.subnet_manager is not None and model.subnet_manager not in seen:
        yield Finding(("subnet_manager",), f"no node is named `{model.subnet_manager}`",
                      "name a node of one of the node groups (e.g. the first management node)")


def pins(model: Model) -> Iterator[Finding]:
    zones = {z.name: z for z in model.zones}
    for i, g in enumerate(model.node_groups):
        nt = model.node_types.get(g.node_type)
        if not g.pinned or nt is None:
            continue
        try:
            names = {node_name(g, k) for k in range(g.count)}
        except (KeyError, IndexError, ValueError):
            continue  # reported by node_names
        for name, leaves in g.pinned.items():
            loc = ("node_groups", i, "pinned", name)
            if name not in names:
                yield Finding(loc, f"group {g.name} has no node `{name}`", "pin a node of this group by its name")
            elif len(leaves) != nt.nic_ports:
                yield Finding(loc, f"{len(leaves)} leaves given for {nt.nic_ports} NIC port(s)",
                              "give one leaf index per NIC port, in NIC order")
            else:
                for j, leaf in enumerate(leaves):
                    z = zones.get(g.zones[j % len(g.zones)])
                    if z is not None and not 0 <= leaf < z.edge_switches:
                        yield Finding(loc + (j,), f"leaf {leaf} does not exist in zone {z.name}",
                                      f"use a leaf index from 0 to {z.edge_switches - 1}")


def missing_links(model: Model) -> Iterator[Finding]:
    for i, z in enumerate(model.zones):
        links = getattr(z, "spine_links", None)
        if links is not None:
            loc = ("zones", i, "spine_links")
            if len(links) != z.spines:
                yield Finding(loc, f"{len(links)} link counts for {z.spines} spines", "give one count per spine")
            elif max(links) > z.leaf_up // z.spines:
                yield Finding(loc, f"a spine takes {max(links)} links from every leaf, but leaf_up / spines is "
                              f"{z.leaf_up // z.spines}", "raise leaf_up, or lower the count")
        seen = set()
        for k, m in enumerate(getattr(z, "missing_links", [])):
            loc = ("zones", i, "missing_links", k)
            if m.leaf >= z.edge_switches:
                yield Finding(loc + ("leaf",), f"leaf {m.leaf} does not exist in zone {z.name}",
                              f"use a leaf index from 0 to {z.edge_switches - 1}")
            if m.up_port >= z.leaf_up:
                yield Finding(loc + ("up_port",), f"up-link {m.up_port} does not exist (leaves have {z.leaf_up})",
                              f"use an up-link index from 0 to {z.leaf_up - 1}")
            if (m.leaf, m.up_port) in seen:
                yield Finding(loc, f"leaf {m.leaf} up-link {m.up_port} is listed twice", "list each missing link once")
            seen.add((m.leaf, m.up_port))
        layer_size = {"leaf": z.edge_switches, "spine": getattr(z, "spines", None) or getattr(z, "spines_per_pod", 0)
                      * getattr(z, "pods", 1), "core": getattr(z, "cores", 0)}
        down = set()
        for k, m in enumerate(getattr(z, "missing_switches", [])):
            loc = ("zones", i, "missing_switches", k)
            if m.index >= layer_size[m.role]:
                yield Finding(loc + ("index",), f"{m.role} {m.index} does not exist in zone {z.name}"
                              + ("" if layer_size[m.role] else f" (a {z.kind} zone has no {m.role}s)"),
                              f"use a {m.role} index from 0 to {layer_size[m.role] - 1}" if layer_size[m.role]
                              else "remove this entry")
            if m.plane >= model.plane_count:
                yield Finding(loc + ("plane",), f"plane {m.plane} does not exist (the fabric has {model.plane_count})",
                              f"use a plane from 0 to {model.plane_count - 1}")
            if (m.role, m.index, m.plane) in down:
                yield Finding(loc, f"{m.role} {m.index} is listed twice", "list each missing switch once")
            down.add((m.role, m.index, m.plane))


def qos(model: Model) -> Iterator[Finding]:
    if model.qos is None:
        return
    classes = model.qos.classes
    names = [c.name for c in classes]
    for dup in _duplicates(names):
        yield Finding(("qos", "classes"), f"traffic class `{dup}` is defined twice", "give every class its own name")
    defaults = [i for i, c in enumerate(classes) if c.default]
    if len(defaults) > 1:
        yield Finding(("qos", "classes", defaults[1], "default"), "more than one class is the default",
                      "mark exactly one class `default: true` (it carries unmarked traffic on SL 0)")
    lim = model.qos.limits
    if model.technology == "infiniband":
        isolated = [c.name for c in classes if c.isolated]
        need = len(isolated) + (1 if len(isolated) < len(classes) else 0)
        if need > lim.data_vls:
            yield Finding(("qos", "limits", "data_vls"),
                          f"{len(isolated)} isolated classes ({', '.join(isolated)}) need {need} VLs but the ports support "
                          f"{lim.data_vls}: two isolated classes would have to share a VL",
                          "set isolated: false on classes that may share, or use ports with more VLs")
    else:
        lossless = [c.name for c in classes if c.lossless]
        per_class = 2 if any(isinstance(z, BiGraph) for z in model.zones) else 1  # a priority per BiGraph part
        if len(lossless) * per_class > min(lim.lossless_priorities, 6):
            yield Finding(("qos", "limits", "lossless_priorities"),
                          f"{len(lossless)} lossless classes ({', '.join(lossless)})"
                          + (" need two PFC priorities each on a BiGraph (one per part)" if per_class > 1 else "")
                          + f" but only {min(lim.lossless_priorities, 6)} PFC priorities are available",
                          "make some classes lossy, or use switches with more lossless priorities")
        isolated = [c.name for c in classes if c.isolated]
        if len(isolated) + (1 if len(isolated) < len(classes) else 0) > lim.queues:
            yield Finding(("qos", "limits", "queues"), f"{len(isolated)} isolated classes need more queues than the {lim.queues} per port",
                          "set isolated: false on classes that may share a queue")
        yield from _roce_marking(model.qos)


def _roce_marking(q) -> Iterator[Finding]:
    """RoCE marking: every class on a priority of its own beside the CNPs' (8 in all), and DSCP
    values (given, or the defaults `loom.model.marking.roce_marking` picks) that tell the classes
    and the CNPs apart."""
    from loom.model.marking import CNP_TC, ROCE_TCS, roce_marking

    marked = [c.name for c in q.classes if not c.default]
    if len(marked) > len(ROCE_TCS) - 1:
        yield Finding(("qos", "classes"), f"{len(marked)} RoCE classes besides the default, but 8 priorities hold at most "
                      f"{len(ROCE_TCS) - 1} beside unmarked traffic (0) and congestion notifications ({CNP_TC})", "merge classes")
        return
    ordered = [c for c in q.classes if c.default] + [c for c in q.classes if not c.default]
    dscp = {id(c): d for c, (_, d) in zip(ordered, roce_marking(ordered))}
    seen: dict[int, str] = {}
    for i, c in enumerate(q.classes):
        d = dscp[id(c)]
        if d == q.cnp_dscp:
            yield Finding(("qos", "classes", i, "dscp"), f"class `{c.name}` uses DSCP {d}, the CNPs' (qos.cnp_dscp)",
                          "give the class another DSCP value, or move the CNPs with qos.cnp_dscp")
        elif d in seen:
            yield Finding(("qos", "classes", i, "dscp"), f"classes `{seen[d]}` and `{c.name}` both use DSCP {d}",
                          "give every class its own DSCP value (`dscp:`)")
        seen.setdefault(d, c.name)


def addressing(model: Model) -> Iterator[Finding]:
    if model.technology != "ethernet":
        return
    import ipaddress

    a = model.addressing
    for field in ("p2p_pool", "loopback_pool"):
        try:
            ipaddress.IPv4Network(getattr(a, field))
        except ValueError as exc:
            yield Finding(("addressing", field), f"not an IPv4 prefix: {exc}", "write a prefix like 10.0.0.0/8")
            return
    cables = 0
    for z in model.zones:
        per = {"fat-tree-2": lambda z: z.leaves * z.leaf_up,
               "fat-tree-3": lambda z: z.pods * z.leaves_per_pod * z.leaf_up + z.pods * z.spines_per_pod * z.spine_up,
               "bigraph": lambda z: (z.switches // 2) ** 2}[z.kind](z)
        cables += per
    cables += sum(g.count * ports_per_zone(model, g) * len(g.zones) for g in model.node_groups if g.node_type in model.node_types)
    cables += sum(l.count for l in model.inter_zone_links)
    pool = ipaddress.IPv4Network(a.p2p_pool)
    per_plane = pool.num_addresses >> max(0, (model.plane_count - 1).bit_length())
    if 2 * cables > per_plane:
        yield Finding(("addressing", "p2p_pool"), f"each plane needs {cables} /31s ({2 * cables} addresses) but gets "
                      f"{per_plane} of {a.p2p_pool}", "use a larger pool")


def slurm(model: Model) -> Iterator[Finding]:
    """`slurm:`: a role is scheduled one way only; block sizes follow Slurm's rule (each a power
    of two times the one before: `loom.model.blocks.check_block_sizes`, the one reading of it)."""
    both = sorted(set(model.slurm.roles) & set(model.slurm.own_switch))
    if both:
        yield Finding(("slurm", "own_switch"), f"role(s) {', '.join(both)} are in both slurm.roles and slurm.own_switch",
                      "list each role in one of them")
    if model.slurm.block_sizes:
        from loom.model.blocks import check_block_sizes

        for p in check_block_sizes(model.slurm.block_sizes):
            yield Finding(("slurm", "block_sizes"), p, "give the base block size first, then 2×, 4×, ... of it, e.g. [16, 32, 64]")


def partitions(model: Model) -> Iterator[Finding]:
    """`partitions:` (`loom.model.partitions`), over the model's node names."""
    if not model.partitions:
        return
    from .partitions import NodeRecord, partition_problems

    try:
        nodes = [NodeRecord(node_name(g, k), g.name, g.role, tuple(g.zones)) for g in model.node_groups for k in range(g.count)]
    except (KeyError, IndexError, ValueError):
        return  # a bad name pattern, reported by `node_names`
    yield from (Finding(*p) for p in partition_problems(model, nodes))


def racks(model: Model) -> Iterator[Finding]:
    return (Finding(*p) for p in group_racks(model))


RULES = (unique_names, references, technology, switch_ports, homing, leaf_counts, speeds, inter_zone, cross_zone_vls,
         zone_ports, node_names, pins, missing_links, qos, addressing, slurm, partitions, racks)


def check_rules(model: Model) -> list[Finding]:
    """Run every rule; a rule that depends on a broken reference skips it (reported by `references`)."""
    out: list[Finding] = []
    for rule in RULES:
        out.extend(rule(model))
    return out
