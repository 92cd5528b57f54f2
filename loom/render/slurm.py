"""Slurm's view of the fabric, from the intent (before a cable exists): `loom slurm`.

Slurm places a job's nodes to share switches (topology/tree) or blocks (topology/block, Slurm
23.11+).  Both come from the expanded fabric, so the names are the lock file's and stay put
when the fabric grows:
- **tree** (topology.conf, and the `tree` topology of topology.yaml): every leaf with its
  scheduled nodes; a node whose ports land on several leaves of the plane (rails, dual ToRs)
  goes under a switch for that set of leaves (`<first leaf>-x<count>`); the leaves of a
  three-layer zone under their pod (`<zone>-pod<p>`), pods or leaves under their zone (`<zone>`:
  the spine layer, which Slurm sees as one switch); zones under the fabric (`<fabric>`) when
  inter-zone links join them.  Only plane 0 is described: the other planes repeat it.
- **block** (topology.yaml): a block is the nodes under one leaf (or leaf set), or one declared
  NVLink domain (`nvlink_domain` of a node group); `block_sizes` from the model or the base
  (smallest block) and its doublings up to the block count.
Which nodes: roles in `slurm.roles` under their leaves, roles in `slurm.own_switch` under a
switch of their own (`<fabric>-<role>`), the rest left out (storage, management by default).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import yaml

from loom.expand import HOST, SWITCH, Fabric

from loom.model.hostlist import compress


@dataclass(frozen=True)
class SlurmSwitch:
    name: str
    switches: tuple[str, ...]  # child switches
    nodes: tuple[str, ...]  # child nodes


@dataclass(frozen=True)
class SlurmTopology:
    fabric: str
    switches: tuple[SlurmSwitch, ...]  # children before parents
    blocks: tuple[tuple[str, tuple[str, ...]], ...]  # (block name, nodes), in placement order
    block_sizes: tuple[int, ...]
    left_out: tuple[str, ...]  # nodes Slurm is not told about
    source: str = "the model and its lock file"  # what the tree was drawn from (topology.conf says it)


class SlurmError(ValueError):
    """The model's Slurm settings cannot be honoured; the message names the field and the fix."""


def edge_switches(f: Fabric, plane: int = 0) -> dict[int, tuple[int, ...]]:
    """Node index → the switches its NIC ports in `plane` are cabled to, in NIC order."""
    c = f.cables
    out: dict[int, list[int]] = defaultdict(list)
    host_a = (c.a_kind == HOST) & (c.b_kind == SWITCH)
    for port, sw in zip(c.a_dev[host_a].tolist(), c.b_dev[host_a].tolist()):
        p = f.ports[port]
        if p.plane == plane and sw not in out[p.node]:
            out[p.node].append(sw)
    return {n: tuple(v) for n, v in out.items()}


@dataclass(frozen=True)
class LeafGroup:
    """Nodes that share their leaf (or set of leaves), and where that leaf sits: its zone (None:
    the leaves span zones, or are joined to none: under the root) and pod (three-layer zones)."""

    name: str
    nodes: tuple[str, ...]
    zone: str | None
    pod: int | None


def slurm_topology(f: Fabric) -> SlurmTopology:
    """The tree and blocks of the model (and its lock file), before a single cable exists."""
    spec = f.model.slurm
    edges = edge_switches(f)
    under: dict[tuple[int, ...], list[str]] = defaultdict(list)
    own: dict[str, list[str]] = defaultdict(list)
    left_out = []
    for node in f.nodes:
        if node.role in spec.roles and node.index in edges:
            under[edges[node.index]].append(node.name)
        elif node.role in spec.own_switch:
            own[node.role].append(node.name)
        else:
            left_out.append(node.name)
    sw = f.switches
    groups = []
    for k in sorted(under, key=lambda k: [(sw[i].zone, sw[i].pod or 0, sw[i].edge or 0) for i in k]):
        zs, pods = {sw[i].zone for i in k}, {sw[i].pod for i in k}
        groups.append(LeafGroup(sw[k[0]].name if len(k) == 1 else f"{sw[k[0]].name}-x{len(k)}", tuple(under[k]),
                                zs.pop() if len(zs) == 1 else None,
                                int(sw[k[0]].pod) if sw[k[0]].pod is not None and len(pods) == 1 else None))
    return build_topology(f, groups, own, left_out, bool(f.model.inter_zone_links))


def build_topology(f: Fabric, groups: list[LeafGroup], own: dict[str, list[str]], left_out: list[str],
                   zones_linked: bool, source: str = SlurmTopology.source) -> SlurmTopology:
    """The tree over leaf groups (in placement order): leaves under their pod, pods or leaves under
    their zone, zones (and groups of no zone) under the fabric when links join the zones (or there
    is one zone); a switch of its own
    per role in `slurm.own_switch`; and the blocks."""
    spec = f.model.slurm
    if not groups and not own:
        raise SlurmError(f"no node has a role Slurm schedules (slurm.roles: {', '.join(spec.roles)}; slurm.own_switch: "
                         f"{', '.join(spec.own_switch) or 'none'}); fix: list the nodes' roles in slurm.roles")
    taken = {s.name for s in f.switches} | {n.name for n in f.nodes}
    leaves = [SlurmSwitch(g.name, (), g.nodes) for g in groups]

    def virtual(name: str) -> str:
        if name in taken:
            raise SlurmError(f"`loom slurm` names a switch {name!r}, which is already a switch or node of the model; "
                             "fix: rename the zone or the device (naming / name_pattern)")
        taken.add(name)
        return name

    zones_of: dict[str, list[str]] = defaultdict(list)  # zone → its children (pods or leaf-level switches)
    pods: dict[tuple[str, int], list[str]] = defaultdict(list)
    top: list[str] = []
    for g in groups:
        if g.zone is None:
            top.append(g.name)
        elif g.pod is not None:
            pods[(g.zone, g.pod)].append(g.name)
        else:
            zones_of[g.zone].append(g.name)
    mids = []
    for (zone, pod), children in pods.items():
        mids.append(SlurmSwitch(virtual(f"{zone}-pod{pod}"), tuple(children), ()))
        zones_of[zone].append(mids[-1].name)
    zone_sw = [SlurmSwitch(virtual(z), tuple(children), ()) for z, children in zones_of.items()]
    own_sw = [SlurmSwitch(virtual(f"{f.name}-{role}"), (), tuple(nodes)) for role, nodes in own.items()]
    roots = [s.name for s in zone_sw] + top + [s.name for s in own_sw]
    joined = len(zone_sw) <= 1 or zones_linked
    root = [SlurmSwitch(virtual(f.name), tuple(roots), ())] if joined and len(roots) > 1 else []
    blocks = _blocks(f, leaves)
    return SlurmTopology(f.name, tuple(leaves + own_sw + mids + zone_sw + root), blocks,
                         block_sizes(f, blocks), tuple(left_out), source)


def _blocks(f: Fabric, leaves: list[SlurmSwitch]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Blocks in placement order: NVLink domains of the groups that declare them, else leaves."""
    domain: dict[str, str] = {}
    members: dict[str, list[str]] = defaultdict(list)
    for g in f.model.node_groups:
        if g.nvlink_domain:
            group = [n for n in f.nodes if n.group == g.name]
            for i, n in enumerate(group):
                domain[n.name] = f"{g.name}-nvl{i // g.nvlink_domain}"
    out: list[tuple[str, tuple[str, ...]]] = []
    for leaf in leaves:
        rest = [n for n in leaf.nodes if n not in domain]
        if rest:
            out.append((leaf.name, tuple(rest)))
        for n in leaf.nodes:
            if n in domain:
                if domain[n] not in members:
                    out.append((domain[n], ()))
                members[domain[n]].append(n)
    return tuple((name, tuple(members[name]) if name in members else nodes) for name, nodes in out)


def block_sizes(f: Fabric, blocks) -> tuple[int, ...]:
    """The model's `slurm.block_sizes`, or the smallest block and its doublings while there are
    that many blocks (Slurm ignores larger levels)."""
    if f.model.slurm.block_sizes:
        return tuple(f.model.slurm.block_sizes)
    if not blocks:
        return ()
    base = min(len(nodes) for _, nodes in blocks)
    sizes, k = [base], 2
    while k <= len(blocks):
        sizes.append(base * k)
        k *= 2
    return tuple(sizes)


def topology_conf(t: SlurmTopology) -> str:
    """topology.conf for TopologyPlugin=topology/tree (every Slurm since 2.0, Debian 12's 22.05)."""
    lines = [f"# topology.conf for {t.fabric}: written by `loom slurm` from {t.source}",
             "# (TopologyPlugin=topology/tree).  Switch and node names are the lock file's."]
    if t.left_out:
        lines.append(f"# not scheduled (roles outside slurm.roles / slurm.own_switch): {len(t.left_out)} nodes")
    for s in t.switches:
        parts = [f"SwitchName={s.name}"]
        if s.switches:
            parts.append(f"Switches={compress(list(s.switches))}")
        if s.nodes:
            parts.append(f"Nodes={compress(list(s.nodes))}")
        lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def topology_yaml(t: SlurmTopology) -> str:
    """topology.yaml (Slurm 25.05+): topology `tree` (cluster default) and topology `block`."""
    tree = [{"switch": s.name, **({"children": compress(list(s.switches))} if s.switches else {}),
             **({"nodes": compress(list(s.nodes))} if s.nodes else {})} for s in t.switches]
    doc = [{"topology": "tree", "cluster_default": True, "tree": {"switches": tree}}]
    if t.blocks:
        doc.append({"topology": "block", "cluster_default": False,
                    "block": {"block_sizes": list(t.block_sizes),
                              "blocks": [{"block": name, "nodes": compress(list(nodes))} for name, nodes in t.blocks]}})
    head = f"# topology.yaml for {t.fabric}: written by `loom slurm` (Slurm 25.05+; topology.conf serves older Slurm)\n"
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)
