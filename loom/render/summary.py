"""`loom show`: counts that let an engineer check a fabric against the drawing on the whiteboard.

The JSON keys are a contract (scripts read them): `switches`, `nodes`, `gpus`, `nic_ports`,
`cables` at the top and again inside each entry of `zones` (and `planes` when the fabric has
planes), plus breakdowns by role / type / kind, port usage per switch role and the capacity (with
`free_by_leaf`: leaf name → free node-facing ports, only leaves that have some).
"""

from __future__ import annotations

from collections import Counter

import networkx as nx
import numpy as np

from loom.expand import CABLE_KINDS, SWITCH, Fabric
from loom.model.names import natural


def _switch_ports(f: Fabric) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per switch: node-facing ports it has, those in use, and all ports in use."""
    edge_down = {z.name: z.edge_down for z in f.model.zones}
    down = np.array([edge_down[s.zone] if s.edge is not None else 0 for s in f.switches])
    c = f.cables
    used_down = np.zeros(len(f.switches), np.int64)
    used = np.zeros(len(f.switches), np.int64)
    for kind, dev, port in ((c.a_kind, c.a_dev, c.a_port), (c.b_kind, c.b_dev, c.b_port)):
        on_switch = kind == SWITCH
        used += np.bincount(dev[on_switch], minlength=len(f.switches))
        is_down = on_switch & (port <= down[np.where(on_switch, dev, 0)])
        used_down += np.bincount(dev[is_down], minlength=len(f.switches))
    return down, used_down, used


def _counts(f: Fabric, ports: tuple, sw_mask: np.ndarray, port_mask: np.ndarray, cable_mask: np.ndarray) -> dict:
    model = f.model
    down, used_down, _ = ports
    sw = [s for s, keep in zip(f.switches, sw_mask) if keep]
    node_ids = sorted({f.ports[i].node for i in np.flatnonzero(port_mask)})
    nodes = [f.nodes[i] for i in node_ids]
    c = f.cables
    return {
        "switches": len(sw),
        "switches_by_role": dict(sorted(Counter(s.role for s in sw).items())),
        "nodes": len(nodes),
        "nodes_by_role": dict(sorted(Counter(n.role for n in nodes).items())),
        "nodes_by_type": dict(sorted(Counter(n.node_type for n in nodes).items())),
        "gpus": sum(len(model.node_types[n.node_type].gpus) for n in nodes),
        "nic_ports": int(np.count_nonzero(port_mask)),
        "cables": int(np.count_nonzero(cable_mask)),
        "cables_by_kind": {k: int(np.count_nonzero(cable_mask & (c.kind == i))) for i, k in enumerate(CABLE_KINDS)
                           if np.any(cable_mask & (c.kind == i))},
        "leaf_down_ports": int(down[sw_mask].sum()),
        "leaf_down_ports_used": int(used_down[sw_mask].sum()),
    }


def summarize(f: Fabric) -> dict:
    c = f.cables
    sw_zone = np.array([s.zone for s in f.switches])
    sw_plane = np.array([s.plane for s in f.switches])
    port_zone = np.array([p.zone for p in f.ports])
    port_plane = np.array([p.plane for p in f.ports])
    ports = _switch_ports(f)
    out = {"name": f.name, "technology": f.technology}
    out.update(_counts(f, ports, np.ones(len(f.switches), bool), np.ones(len(f.ports), bool), np.ones(len(c), bool)))

    def cables_touching(sw_mask: np.ndarray) -> np.ndarray:
        a = (c.a_kind == SWITCH) & sw_mask[np.where(c.a_kind == SWITCH, c.a_dev, 0)]
        b = (c.b_kind == SWITCH) & sw_mask[np.where(c.b_kind == SWITCH, c.b_dev, 0)]
        return a | b

    out["zones"] = {z: _counts(f, ports, sw_zone == z, port_zone == z, cables_touching(sw_zone == z)) for z in f.zones}
    if f.planes > 1:
        out["planes"] = {str(p): _counts(f, ports, sw_plane == p, port_plane == p, cables_touching(sw_plane == p))
                         for p in range(f.planes)}
    out["dual_homed"] = {}
    for g in f.model.node_groups:
        if g.homing in ("dual", "multi"):
            members = {n.index for n in f.nodes if n.group == g.name}
            per_node = Counter((p.node, p.zone) for p in f.ports if p.node in members)
            out["dual_homed"][g.name] = {
                "nodes": len(members),
                "zones": list(g.zones),
                "nodes_with_port_in_every_zone": sum(all(per_node[(n, z)] >= 1 for z in g.zones) for n in members),
                "ports_per_zone": {z: sum(per_node[(n, z)] for n in members) for z in g.zones},
            }
    out["ports"] = {}
    roles = np.array([s.role for s in f.switches])
    for role in sorted(set(roles)):
        total = sum(s.ports for s in f.switches if s.role == role)
        used = int(ports[2][roles == role].sum())
        out["ports"][role] = {"total": total, "used": used, "free": total - used}
    node_facing = out["leaf_down_ports"]
    host_ports = int(np.count_nonzero(c.kind == CABLE_KINDS.index("host")))
    inter = int(np.count_nonzero(c.kind == CABLE_KINDS.index("inter-zone"))) * 2
    down, used_down, _ = ports
    # which leaves the free ports are on: what a technician adding a node needs, not just how many
    free_by_leaf = {f.switches[i].name: int(down[i] - used_down[i]) for i in np.flatnonzero(down > used_down)}
    out["capacity"] = {"node_facing_ports": node_facing, "used_by_nodes": host_ports,
                       "used_by_inter_zone": inter, "free": node_facing - host_ports - inter,
                       "free_by_leaf": dict(sorted(free_by_leaf.items(), key=lambda kv: natural(kv[0])))}
    out["racks"] = len(f.racks)
    out["per_endpoint"] = _per_endpoint(out)
    big = {z.name: _bigraph_facts(f, z) for z in f.model.zones if z.kind == "bigraph"}
    if big:
        out["bigraph"] = big
    return out


def _per_endpoint(s: dict) -> dict:
    """The figures papers compare topologies by (DeepSeek-V3's Table of MPFT / FT2 / FT3, Fire-
    Flyer's switch counts): endpoints (NIC ports), GPUs, switches, switch-to-switch links and
    switch ports, and each per endpoint — the network's cost scales with them."""
    ep = max(s["nic_ports"], 1)
    links = s["cables"] - s["cables_by_kind"].get("host", 0)
    ports = sum(v["total"] for v in s["ports"].values())
    return {"endpoints": s["nic_ports"], "gpus": s["gpus"], "switches": s["switches"], "switch_links": links,
            "switch_ports": ports, "switches_per_1k_endpoints": round(1000 * s["switches"] / ep, 1),
            "switch_links_per_endpoint": round(links / ep, 3), "switch_ports_per_endpoint": round(ports / ep, 2),
            "gpus_per_switch": round(s["gpus"] / max(s["switches"], 1), 1)}


def _bigraph_facts(f: Fabric, z) -> dict:
    """The seed's facts of one BiGraph zone, counted on the expanded fabric (not restated from
    the model): N²/4 links between the parts, and a switch-to-switch diameter of 2 hops."""
    c = f.cables
    kind = CABLE_KINDS.index("bigraph")
    mine = np.array([s.zone == z.name for s in f.switches])
    on = (c.kind == kind) & mine[np.where(c.a_kind == SWITCH, c.a_dev, 0)]
    g = nx.Graph()
    g.add_nodes_from(np.flatnonzero(mine).tolist())
    g.add_edges_from(zip(c.a_dev[on].tolist(), c.b_dev[on].tolist()))
    hosts = sum(1 for p in f.ports if p.zone == z.name)
    return {"switches": z.switches, "per_part": z.switches // 2, "hosts_per_switch": z.hosts_per_switch,
            "links": int(on.sum()), "links_n2_over_4": z.switches ** 2 // 4,
            "diameter_hops": nx.diameter(g) if nx.is_connected(g) else None, "sub_nodes": hosts}
