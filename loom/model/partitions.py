"""Partitions (InfiniBand P_Keys): which node is a full or limited member of which partition,
and the rules a model's `partitions:` must follow.

Two ports can talk when they share a P_Key and at least one of them is a full member: a
tenant's nodes are full members of its partition, compute nodes are limited members of the
storage partition (they reach the storage servers, which are full, but not each other through
it).  OpenSM keeps the default partition 0x7fff with its own port the only full member, so a
node that is in no partition of the model can talk to nothing but the subnet manager — which
is why `unpartitioned` is an error, not a warning: such a node is cut off, silently.

The resolution works on plain node records (name, group, role, zones), so the model rules
(before expansion) and the later stages (on the expanded fabric's nodes) share it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Iterator, NamedTuple

from .hostlist import HostlistError, compress, expand
from .schema import Model, Partition, PartitionMember

#: OpenSM's default partition: the SM's port full, every other port limited (see the module doc).
DEFAULT_PKEY = 0x7FFF


class NodeRecord(NamedTuple):
    name: str
    group: str
    role: str
    zones: tuple[str, ...]


@dataclass(frozen=True)
class Membership:
    """One partition resolved to its nodes: {node name: "full" | "limited"}."""

    name: str
    pkey: int
    members: dict[str, str]
    ipoib: object | None = None
    qos_class: str | None = None

    @property
    def full(self) -> list[str]:
        return [n for n, m in self.members.items() if m == "full"]


class _Index:
    """The nodes by name, role, group and zone: a member entry's nodes are the intersection of
    the sets its selectors name (cost: the nodes it selects, not every node per entry)."""

    def __init__(self, nodes: list[NodeRecord]) -> None:
        self.order = {n.name: i for i, n in enumerate(nodes)}
        self.by: dict[str, dict[str, set[str]]] = {"role": {}, "group": {}, "zone": {}}
        for n in nodes:
            self.by["role"].setdefault(n.role, set()).add(n.name)
            self.by["group"].setdefault(n.group, set()).add(n.name)
            for z in n.zones:
                self.by["zone"].setdefault(z, set()).add(n.name)

    def select(self, member: PartitionMember) -> list[str]:
        """The entry's nodes in node order (none for a malformed hostlist: `partition_problems`
        reports it)."""
        sets = [self.by[k].get(getattr(member, k), set()) for k in self.by if getattr(member, k) is not None]
        if member.nodes is not None:
            try:
                sets.append(set(expand(member.nodes, limit=max(1, len(self.order)))) & self.order.keys())
            except HostlistError:
                return []
        if not sets:
            return []
        return sorted(set.intersection(*sorted(sets, key=len)), key=self.order.__getitem__)


def resolve(partitions: Iterable[Partition], nodes: list[NodeRecord]) -> list[Membership]:
    """Each partition's members; a node selected twice (full by role, limited by zone) is a
    full member — the stronger grant wins, as it would in OpenSM's table (one P_Key entry)."""
    index = _Index(nodes)
    out = []
    for p in partitions:
        members: dict[str, str] = {}
        for m in p.members:
            for name in index.select(m):
                if members.get(name) != "full":
                    members[name] = m.membership
        out.append(Membership(p.name, p.pkey, members, p.ipoib, p.qos_class))
    return out


def tenants(parts: list[Membership], role_of: dict[str, str]) -> list[Membership]:
    """The tenant partitions: those whose members are all compute nodes (a training tenant's
    nodes), as opposed to storage, management or mixed partitions every tenant shares."""
    return [m for m in parts if m.members and all(role_of[n] == "compute" for n in m.members)]


def partition_problems(model: Model, nodes: list[NodeRecord]) -> Iterator[tuple[tuple, str, str]]:
    """(YAML location, message, fix) for every way `partitions:` is wrong."""
    parts = model.partitions
    if not parts:
        return
    if model.technology != "infiniband":
        yield ("partitions",), "partitions are InfiniBand P_Keys; this fabric is Ethernet", \
            "remove `partitions` (separate RoCE tenants by VRF or VLAN outside loom)"
        return
    yield from _unique(parts)
    zones = {z.name for z in model.zones}
    groups = {g.name for g in model.node_groups}
    names = {n.name for n in nodes}
    classes = {c.name for c in model.qos.classes} if model.qos else set()
    resolved = resolve(parts, nodes)
    index = _Index(nodes)
    for i, (p, r) in enumerate(zip(parts, resolved)):
        for j, m in enumerate(p.members):
            yield from _member_problems(("partitions", i, "members", j), m, zones, groups, names, index)
        if r.members and not r.full:
            yield (("partitions", i, "members"), f"partition `{p.name}` has only limited members: limited members "
                   "cannot talk to each other, so nobody in it can talk",
                   "make the servers the others use (storage, a head node) full members, or all members full")
        if p.qos_class is not None and p.qos_class not in classes:
            yield (("partitions", i, "qos_class"),
                   f"partition `{p.name}` rides class `{p.qos_class}`, which has no SL/VL: "
                   + ("the model has no `qos` section" if model.qos is None else "no such class in qos.classes"),
                   f"use one of: {', '.join(sorted(classes))}" if classes else "add the class under qos.classes")
    covered = {n for r in resolved for n in r.members}
    lost = [n.name for n in nodes if n.name not in covered]
    if lost:
        yield (("partitions",), f"{len(lost)} node(s) are in no partition but the default, where they can reach only "
               f"the subnet manager: {compress(lost)[:200]}",
               "add them to a partition (a tenant, storage as limited members, or a partition of their own)")


def _unique(parts: list[Partition]) -> Iterator[tuple[tuple, str, str]]:
    for field in ("name", "pkey"):
        values = [getattr(p, field) for p in parts]
        for dup in [v for v, c in Counter(values).items() if c > 1]:
            i = len(values) - 1 - values[::-1].index(dup)
            first = parts[values.index(dup)].name
            shown = f"P_Key 0x{dup:04x}" if field == "pkey" else f"name `{dup}`"
            yield (("partitions", i, field), f"partition `{parts[i].name}` uses {shown}, as `{first}` does: "
                   + ("two tenants on one P_Key can reach each other" if field == "pkey" else "names must be unique"),
                   f"give every partition its own {field}" + (" (0x0001 to 0x7ffe)" if field == "pkey" else ""))


def _member_problems(loc: tuple, m: PartitionMember, zones: set[str], groups: set[str], names: set[str],
                     index: _Index) -> Iterator[tuple[tuple, str, str]]:
    if m.role is None and m.group is None and m.zone is None and m.nodes is None:
        yield loc, "a member entry selects nobody", "give role, group, zone or nodes (a hostlist)"
        return
    if m.group is not None and m.group not in groups:
        yield loc + ("group",), f"unknown node group `{m.group}`", f"use one of: {', '.join(sorted(groups))}"
        return
    if m.zone is not None and m.zone not in zones:
        yield loc + ("zone",), f"unknown zone `{m.zone}`", f"use one of: {', '.join(sorted(zones))}"
        return
    if m.nodes is not None:
        try:
            listed = expand(m.nodes, limit=max(1, len(names)))
        except HostlistError as exc:
            yield loc + ("nodes",), str(exc), "write a hostlist of the model's nodes, such as z0-c[00-03],st01"
            return
        unknown = [n for n in listed if n not in names]
        if unknown:
            yield loc + ("nodes",), f"{len(unknown)} unknown node(s): {compress(unknown)[:120]}", \
                "name nodes of the model's node groups (their name_pattern)"
            return
    if not index.select(m):
        yield loc, "this member entry matches no node (its selectors exclude each other)", \
            "check role, group, zone and nodes: a node must match all that are given"
