"""Slurm topology files checked against Slurm's documented format, without a Slurm to load them.

Debian 12 ships Slurm 22.05, which reads topology.conf (topology/tree) and is what the tests
start; topology.yaml and topology/block need Slurm 23.11 / 25.05.  These checks are written
from topology.yaml(5), topology.conf(5) and the block plugin's reading of `BlockSizes`
(src/plugins/topology/block/block_record.c):
- a topology.yaml is a list of topologies, each a mapping whose first key is `topology` (a
  unique name), optional `cluster_default`, and exactly one of `block`, `flat`, `tree`;
- tree: `switches`, each with a unique `switch` name of at most 64 characters, `children`
  (switches defined in the file, no switch its own ancestor) and/or `nodes`;
- block: `block_sizes`, the planning base block size first, each next a power of two times the
  one before (at most 2^15 times the base); `blocks`, each a unique `block` name with `nodes`,
  at least the base block size of them; no node in two blocks.
Every function returns a list of problems (empty: valid); node names are expanded with Slurm's
hostlist syntax.  Cost: linear in the file.
"""

from __future__ import annotations

import networkx as nx
import yaml

from loom.model.blocks import check_block_sizes
from loom.model.hostlist import HostlistError, expand

TOPOLOGY_KINDS = ("block", "flat", "tree")
MAX_SWITCH_NAME = 64


def _names(expr, what: str, problems: list[str]) -> list[str]:
    if not isinstance(expr, str) or not expr.strip():
        problems.append(f"{what}: expected a hostlist string such as node[01-04]")
        return []
    try:
        return expand(expr)
    except HostlistError as exc:
        problems.append(f"{what}: {exc}")
        return []


def _check_tree(tree, where: str, problems: list[str]) -> set[str]:
    switches = tree.get("switches") if isinstance(tree, dict) else None
    if not isinstance(switches, list) or not switches:
        problems.append(f"{where}: tree needs a non-empty list `switches`")
        return set()
    seen: dict[str, dict] = {}
    for i, s in enumerate(switches):
        if not isinstance(s, dict) or not isinstance(s.get("switch"), str):
            problems.append(f"{where}: switches[{i}] needs a `switch` name")
            continue
        extra = set(s) - {"switch", "children", "nodes"}
        if extra:
            problems.append(f"{where}: switch {s['switch']}: unknown keys {', '.join(sorted(extra))}")
        if len(s["switch"]) > MAX_SWITCH_NAME:
            problems.append(f"{where}: switch name {s['switch'][:20]}... is longer than {MAX_SWITCH_NAME} characters")
        if s["switch"] in seen:
            problems.append(f"{where}: switch {s['switch']} is defined twice")
        seen[s["switch"]] = s
    graph = nx.DiGraph()
    nodes: set[str] = set()
    for name, s in seen.items():
        graph.add_node(name)
        if "children" in s:
            for child in _names(s["children"], f"{where}: switch {name} children", problems):
                if child not in seen:
                    problems.append(f"{where}: switch {name} lists child switch {child}, which is not defined")
                graph.add_edge(name, child)
        if "nodes" in s:
            nodes |= set(_names(s["nodes"], f"{where}: switch {name} nodes", problems))
        if "children" not in s and "nodes" not in s:
            problems.append(f"{where}: switch {name} has neither children nor nodes")
    if not nx.is_directed_acyclic_graph(graph):
        problems.append(f"{where}: switches form a cycle: {' -> '.join(a for a, _ in nx.find_cycle(graph))}")
    return nodes


def _check_block(block, where: str, problems: list[str]) -> set[str]:
    if not isinstance(block, dict):
        problems.append(f"{where}: block must be a mapping with block_sizes and blocks")
        return set()
    extra = set(block) - {"block_sizes", "blocks"}
    if extra:
        problems.append(f"{where}: block: unknown keys {', '.join(sorted(extra))}")
    blocks = block.get("blocks")
    if not isinstance(blocks, list) or not blocks:
        problems.append(f"{where}: block needs a non-empty list `blocks`")
        return set()
    counts: dict[str, int] = {}
    owner: dict[str, str] = {}
    for i, b in enumerate(blocks):
        if not isinstance(b, dict) or not isinstance(b.get("block"), str):
            problems.append(f"{where}: blocks[{i}] needs a `block` name")
            continue
        name = b["block"]
        if name in counts:
            problems.append(f"{where}: block {name} is defined twice")
        members = _names(b.get("nodes"), f"{where}: block {name} nodes", problems)
        counts[name] = len(members)
        for n in members:
            if n in owner:
                problems.append(f"{where}: node {n} is in blocks {owner[n]} and {name}")
            owner[n] = name
    if "block_sizes" in block:
        problems += [f"{where}: {p}" for p in check_block_sizes(block["block_sizes"], counts)]
    return set(owner)


def check_topology_yaml(text: str, nodes: set[str] | None = None) -> list[str]:
    """Problems of a topology.yaml; with `nodes` (slurm.conf's nodes), each topology must name
    only those, and a tree must reach every one of them."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [f"not YAML: {str(exc).splitlines()[0]}"]
    if not isinstance(doc, list) or not doc:
        return ["topology.yaml must be a non-empty list of topologies"]
    problems: list[str] = []
    names = set()
    for i, topo in enumerate(doc):
        if not isinstance(topo, dict) or next(iter(topo), None) != "topology":
            problems.append(f"topology {i + 1}: must be a mapping whose first attribute is `topology`")
            continue
        where = f"topology {topo['topology']}"
        if topo["topology"] in names:
            problems.append(f"{where}: the name is used twice")
        names.add(topo["topology"])
        extra = set(topo) - {"topology", "cluster_default", *TOPOLOGY_KINDS}
        if extra:
            problems.append(f"{where}: unknown keys {', '.join(sorted(extra))}")
        if not isinstance(topo.get("cluster_default", False), bool):
            problems.append(f"{where}: cluster_default must be true or false")
        kinds = [k for k in TOPOLOGY_KINDS if k in topo]
        if len(kinds) != 1:
            problems.append(f"{where}: needs exactly one of block, flat, tree (has {', '.join(kinds) or 'none'})")
            continue
        named = (_check_tree(topo["tree"], where, problems) if kinds == ["tree"]
                 else _check_block(topo["block"], where, problems) if kinds == ["block"] else None)
        if nodes is not None and named is not None:
            unknown = sorted(named - nodes)
            if unknown:
                problems.append(f"{where}: names nodes slurm.conf does not define: {', '.join(unknown[:5])}")
            if kinds == ["tree"] and nodes - named:
                problems.append(f"{where}: nodes under no switch: {', '.join(sorted(nodes - named)[:5])}")
    return problems
