"""Switch layers of one zone: which switches exist and how they are cabled to each other.

One builder per zone kind, registered in `BUILDERS`; a new fabric kind is a new builder, not a
new branch elsewhere.  A builder returns switches and inter-switch cables in *zone-local*
indices; `loom.expand.build` offsets them into the fabric.

Port numbering (documented because cabling sheets and routing tables depend on it):
- leaf: ports 1..leaf_down face nodes; up-port u (0-based) is port leaf_down+1+u and goes to
  spine u mod S, as that spine's link u div S (up-links interleave over the spines);
- spine: down port for leaf l, link k is 1 + l*links + k; (three layers) up-port v is
  spine_down+1+v, to core (s*G + v mod G) of the spine's core group s, G = cores / spines_per_pod;
- core: port 1 + pod*links + k;
- BiGraph: ports 1..M face nodes; upper switch u takes lower switch d on port M+1+d, and d takes
  u on port M+1+u.
"""

from __future__ import annotations

from dataclasses import dataclass

from loom.model.schema import BiGraph, FatTree2, FatTree3


@dataclass(frozen=True)
class LocalSwitch:
    role: str
    pod: int | None
    position: int
    edge: int | None  # index among node-facing switches


@dataclass(frozen=True)
class LocalCable:
    a: int  # local switch index, lower layer
    a_port: int
    b: int  # local switch index, upper layer
    b_port: int
    kind: str


@dataclass(frozen=True)
class ZoneSwitches:
    switches: list[LocalSwitch]
    cables: list[LocalCable]
    edge: list[int]  # local indices of node-facing switches, by edge index


def _two_layer(leaves: int, spines: int, leaf_down: int, leaf_up: int, pod: int | None,
               first_leaf: int, first_spine: int, base: int) -> tuple[list[LocalSwitch], list[LocalCable]]:
    """One two-layer tree (a zone, or a pod of a three-layer tree), numbered from `base`."""
    links = leaf_up // spines
    sw = [LocalSwitch("leaf", pod, first_leaf + l, first_leaf + l) for l in range(leaves)]
    sw += [LocalSwitch("spine", pod, first_spine + s, None) for s in range(spines)]
    cables = []
    for l in range(leaves):
        for u in range(leaf_up):
            s, k = u % spines, u // spines
            cables.append(LocalCable(base + l, leaf_down + 1 + u, base + leaves + s, 1 + l * links + k, "leaf-spine"))
    return sw, cables


def fat_tree_2(z: FatTree2) -> ZoneSwitches:
    sw, cables = _two_layer(z.leaves, z.spines, z.leaf_down, z.leaf_up, None, 0, 0, 0)
    return ZoneSwitches(sw, cables, list(range(z.leaves)))


def fat_tree_3(z: FatTree3) -> ZoneSwitches:
    sw: list[LocalSwitch] = []
    cables: list[LocalCable] = []
    edge: list[int] = []
    per_pod = z.leaves_per_pod + z.spines_per_pod
    for p in range(z.pods):
        base = p * per_pod
        s, c = _two_layer(z.leaves_per_pod, z.spines_per_pod, z.leaf_down, z.leaf_up, p,
                          p * z.leaves_per_pod, p * z.spines_per_pod, base)
        sw += s
        cables += c
        edge += range(base, base + z.leaves_per_pod)
    core0 = z.pods * per_pod
    sw += [LocalSwitch("core", None, c, None) for c in range(z.cores)]
    group = z.cores // z.spines_per_pod
    clinks = z.spine_up // group
    spine_down = z.leaves_per_pod * (z.leaf_up // z.spines_per_pod)
    for p in range(z.pods):
        for s in range(z.spines_per_pod):
            spine = p * per_pod + z.leaves_per_pod + s
            for v in range(z.spine_up):
                core, k = s * group + v % group, v // group
                cables.append(LocalCable(spine, spine_down + 1 + v, core0 + core, 1 + p * clinks + k, "spine-core"))
    return ZoneSwitches(sw, cables, edge)


def bigraph(z: BiGraph) -> ZoneSwitches:
    half = z.switches // 2
    M = z.hosts_per_switch
    sw = [LocalSwitch("upper", None, i, i) for i in range(half)]
    sw += [LocalSwitch("lower", None, i, half + i) for i in range(half)]
    cables = [LocalCable(half + d, M + 1 + u, u, M + 1 + d, "bigraph") for u in range(half) for d in range(half)]
    return ZoneSwitches(sw, cables, list(range(z.switches)))


BUILDERS = {"fat-tree-2": fat_tree_2, "fat-tree-3": fat_tree_3, "bigraph": bigraph}


def absent_links(zone) -> set[tuple[int, int]]:
    """(leaf, up-link u) the zone's design leaves out: links past a spine's `spine_links` count."""
    counts = getattr(zone, "spine_links", None)
    if counts is None:
        return set()
    spines = len(counts)
    return {(l, u) for l in range(zone.edge_switches) for u in range(zone.leaf_up) if u // spines >= counts[u % spines]}


def build_zone(zone) -> ZoneSwitches:
    """The zone's switches and cables, without the up-links its design leaves out (`spine_links`)
    or the model lists as missing."""
    built = BUILDERS[zone.kind](zone)
    missing = {(m.leaf, m.up_port) for m in getattr(zone, "missing_links", [])} | absent_links(zone)
    if not missing:
        return built
    edge = {i: s.edge for i, s in enumerate(built.switches)}
    keep = [c for c in built.cables
            if not (c.kind == "leaf-spine" and (edge[c.a], c.a_port - zone.leaf_down - 1) in missing)]
    return ZoneSwitches(built.switches, keep, built.edge)
