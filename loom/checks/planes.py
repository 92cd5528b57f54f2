"""Cabling checks of multi-plane and rail-optimised fabrics, on the fabric as expanded (lock
file, pins and all), before any table exists.

- **plane isolation** (`check_planes`): every switch-to-switch cable stays inside one plane;
  every NIC port is cabled to a switch of its own plane, and that is the plane the model's
  `planes.nic_mapping` gives the port (DeepSeek-V3's MPFT: GPU–NIC pair i on plane i); the ports
  of one NIC land on different switches (dual-ToR, C4's dual-port NICs), so losing one switch
  never cuts a NIC off.
- **rail correctness** (`check_rails`), for node groups with `placement: rail`: in each plane
  and zone, the k-th NIC port of every node is on rail k (leaf index mod R, R = the node's
  ports there) and all of a node's ports are on the rails of one group (leaf index div R) —
  so rank k of every node shares a leaf.
Both return a dict with `ok`, counts and up to 20 problems, each naming node, NIC port and
switch.  Cost: O(cables).
"""

from __future__ import annotations

from collections import defaultdict

from loom.expand import HOST, SWITCH, Fabric
from loom.expand.build import port_targets

MAX_SHOWN = 20


def _host_cables(f: Fabric) -> list[tuple[int, int]]:
    """(host port, switch) of every host cable."""
    c = f.cables
    m = (c.a_kind == HOST) & (c.b_kind == SWITCH)
    return list(zip(c.a_dev[m].tolist(), c.b_dev[m].tolist()))


def check_planes(f: Fabric) -> dict:
    c, sw = f.cables, f.switches
    problems: list[str] = []
    both = (c.a_kind == SWITCH) & (c.b_kind == SWITCH)
    for a, b in zip(c.a_dev[both].tolist(), c.b_dev[both].tolist()):
        if sw[a].plane != sw[b].plane:
            problems.append(f"{sw[a].name} (plane {sw[a].plane}) is cabled to {sw[b].name} (plane {sw[b].plane})")
    groups = {g.name: g for g in f.model.node_groups}
    wanted: dict[int, list[tuple[int, str]]] = {}
    ordinal: dict[int, int] = defaultdict(int)
    nic_switches: dict[tuple[int, str], list[int]] = defaultdict(list)
    for port, s in sorted(_host_cables(f)):
        p = f.ports[port]
        node = f.nodes[p.node]
        if p.node not in wanted:
            nt = f.model.node_types[node.node_type]
            wanted[p.node] = port_targets(f.model, groups[node.group], nt.nic_ports)
        j = ordinal[p.node]
        ordinal[p.node] += 1
        plane = wanted[p.node][j][0] if j < len(wanted[p.node]) else p.plane
        where = f"{node.name} {p.nic}/{p.port}"
        if sw[s].plane != p.plane:
            problems.append(f"{where} (plane {p.plane}) is cabled to {sw[s].name} of plane {sw[s].plane}")
        elif p.plane != plane:
            problems.append(f"{where} is on plane {p.plane}, but planes.nic_mapping puts it on plane {plane}")
        nic_switches[(p.node, p.nic)].append(s)
    for (node, nic), switches in nic_switches.items():
        if len(switches) > len(set(switches)):
            problems.append(f"{f.nodes[node].name} {nic}: two ports on {sw[switches[0]].name} (one switch failure cuts the NIC off)")
    return {"ok": not problems, "planes": f.planes, "inter_switch_cables": int(both.sum()),
            "nic_ports": len(f.ports), "problem_count": len(problems), "problems": problems[:MAX_SHOWN]}


def check_rails(f: Fabric) -> dict | None:
    """None when no node group is rail-optimised."""
    rail_groups = {g.name for g in f.model.node_groups if g.placement == "rail"}
    if not rail_groups:
        return None
    sw = f.switches
    ports_at: dict[tuple[int, int, str], list[tuple[int, int]]] = defaultdict(list)  # (node, plane, zone) → (port, switch)
    for port, s in _host_cables(f):
        p = f.ports[port]
        if f.nodes[p.node].group in rail_groups:
            ports_at[(p.node, p.plane, p.zone)].append((port, s))
    problems: list[str] = []
    rails: set[tuple[int, str, int]] = set()
    for (node, plane, zone), cabled in ports_at.items():
        cabled.sort()
        R = len(cabled)
        units = set()
        for k, (port, s) in enumerate(cabled):
            edge = sw[s].edge if sw[s].edge is not None else -1
            rails.add((plane, zone, edge))
            units.add(edge // R)
            if edge % R != k:
                p = f.ports[port]
                problems.append(f"{f.nodes[node].name} {p.nic}/{p.port} (rail {k}) is on {sw[s].name}, rail {edge % R} "
                                f"of plane {plane} zone {zone}")
        if len(units) > 1:
            problems.append(f"{f.nodes[node].name}: its ports in plane {plane} zone {zone} span rail groups "
                            f"{', '.join(map(str, sorted(units)))}")
    return {"ok": not problems, "nodes": len({n for n, _, _ in ports_at}), "rail_leaves": len(rails),
            "problem_count": len(problems), "problems": problems[:MAX_SHOWN]}
