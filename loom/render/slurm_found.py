"""Slurm's tree from the fabric as found (`loom slurm MODEL --from-discover FILE`).

`loom slurm` draws the tree from the model and its lock file, before a cable exists.  When the
floor differs — a node cabled to another leaf than planned, a leaf whose uplinks are not in yet,
a node not racked — Slurm should place jobs by what is cabled, as NVIDIA's topograph does from
`ibnetdiscover`.  Here the leaf level comes from an `ibnetdiscover` dump: each scheduled node
under the switches its HCA ports are found on.  Devices are named as `loom discover` identifies
them (`loom.checks.cabling`: by GUID, name, or place), so the names are the lock file's; a
switch the model does not have keeps its node description.  Above the leaves the model's zones
and pods stay (they are how the model names the spine layer), but a leaf with no link up into
its zone goes under the root on its own: Slurm must not count it as near its zone's other leaves.
What differs from the model is listed, so the operator knows why the two trees differ.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from loom.expand import Fabric
from loom.expand.live import LiveFabric

from .slurm import LeafGroup, SlurmTopology, build_topology, edge_switches


@dataclass(frozen=True)
class Found:
    topology: SlurmTopology
    moved: tuple[str, ...]  # "NODE under X (the model: Y)"
    missing: tuple[str, ...]  # scheduled nodes of the model not found on any switch
    unknown: tuple[str, ...]  # hosts found that the model does not have (left out)
    cut_off: tuple[str, ...]  # leaves with nodes and no link into their zone


def found_topology(f: Fabric, live: LiveFabric, mapping: dict[int, str], source: str) -> Found:
    """The tree of the fabric as found in `live`, with `mapping` (live GUID → model device) from
    `loom.checks.cabling.compare`."""
    spec = f.model.slurm
    node_of_ca = {p.ca: f.nodes[p.node] for p in f.ports}
    model_sw = {s.name: s for s in f.switches}
    guid_kind = {g: n.kind for g, n in live.nodes.items()}

    def switch_name(g: int) -> str:
        return mapping.get(g) or live.nodes[g].desc or f"S-{g:016x}"

    cabled: dict[str, list[str]] = defaultdict(list)  # node → switches its ports are found on
    near: dict[str, set[str]] = defaultdict(set)  # switch → switches it has a link to
    unknown = set()
    for link in live.links:
        (a, _), (b, _) = link.a, link.b
        kinds = (guid_kind.get(a), guid_kind.get(b))
        if kinds == ("switch", "switch"):
            near[switch_name(a)].add(switch_name(b))
            near[switch_name(b)].add(switch_name(a))
        elif set(kinds) == {"switch", "ca"}:
            ca, sw = (a, b) if kinds[0] == "ca" else (b, a)
            node = node_of_ca.get(mapping.get(ca, ""))
            if node is None:
                unknown.add(live.nodes[ca].desc or f"H-{ca:016x}")
            elif switch_name(sw) not in cabled[node.name]:
                cabled[node.name].append(switch_name(sw))

    def zone_of(name: str) -> str | None:
        if name in model_sw:
            return model_sw[name].zone
        zones = Counter(model_sw[n].zone for n in near[name] if n in model_sw)
        return zones.most_common(1)[0][0] if zones else None

    def order(name: str) -> tuple:
        s = model_sw.get(name)
        return (0, s.zone, s.pod or 0, s.edge or 0, "") if s else (1, "", 0, 0, name)

    planned = {f.nodes[n].name: [f.switches[i].name for i in sws] for n, sws in edge_switches(f).items()}
    under: dict[tuple[str, ...], list[str]] = defaultdict(list)
    own: dict[str, list[str]] = defaultdict(list)
    left_out, missing, moved = [], [], []
    for node in f.nodes:
        if node.role not in spec.roles and node.role not in spec.own_switch:
            left_out.append(node.name)
        elif node.name not in cabled:
            missing.append(node.name)
        elif node.role in spec.roles:
            key = tuple(sorted(cabled[node.name], key=order))
            under[key].append(node.name)
            if sorted(key) != sorted(planned.get(node.name, [])):
                moved.append(f"{node.name} under {', '.join(key)} (the model: {', '.join(planned.get(node.name, [])) or 'none'})")
        else:
            own[node.role].append(node.name)
    groups, cut_off = [], []
    for key in sorted(under, key=lambda k: [order(n) for n in k]):
        zones = {zone_of(n) for n in key}
        zone = zones.pop() if len(zones) == 1 else None
        if zone is not None and not any(zone_of(m) == zone for n in key for m in near[n]):
            cut_off.extend(key)
            zone = None
        pods = {model_sw[n].pod if n in model_sw else None for n in key}
        pod = pods.pop() if len(pods) == 1 else None
        name = key[0] if len(key) == 1 else f"{key[0]}-x{len(key)}"
        groups.append(LeafGroup(name, tuple(under[key]), zone, int(pod) if pod is not None and zone else None))
    linked = any(zone_of(a) != zone_of(b) for a, ns in near.items() for b in ns)
    t = build_topology(f, groups, own, left_out, linked, f"the fabric as found ({source})")
    return Found(t, tuple(moved), tuple(missing), tuple(sorted(unknown)), tuple(cut_off))
