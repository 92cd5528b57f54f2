"""Who can talk to whom through the partitions, against the intent.

Two nodes can talk when they share a P_Key and at least one of them is a full member there
(the InfiniBand rule, which the SA applies to path queries and the HCAs to every packet).  Nodes
with the same memberships behave alike, so the matrix is over *classes* of nodes (a class per
role and distinct set of memberships, the default partition included), not over node pairs: a
few rows even on a fabric of thousands.

The intent, independent of how the partitions are written:
- tenants isolated: two compute nodes that share no tenant partition (one whose members are
  all compute nodes) cannot talk;
- storage reached: every compute node can talk to every storage node;
- management only where the model says: a node reaches a management node only through a
  partition in which that management node is a full member (management reaches out; nobody
  reaches in by being made full somewhere a management node is limited).
The subnet manager's node is the default partition's only full member, so it reaches every
node: that is OpenSM's requirement, shown in the matrix, and allowed by the third rule.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from loom.expand import Fabric
from loom.expand.partitions import memberships
from loom.model.hostlist import compress
from loom.model.partitions import DEFAULT_PKEY, Membership, tenants as tenant_partitions

DEFAULT_NAME = "default"


@dataclass(frozen=True)
class Matrix:
    """Nodes grouped into classes of equal memberships, and which classes can talk."""

    labels: list[str]  # a class's name: its nodes as a hostlist
    nodes: list[list[str]]  # each class's nodes
    roles: list[str]  # each class's role (a class holds one role: the intent is about roles)
    grants: list[dict[str, str]]  # each class's memberships: partition name → full | limited
    pkeys: dict[str, int]  # partition name → P_Key

    def talk(self, a: int, b: int) -> list[str]:
        """The partitions through which class a's nodes can talk to class b's (a == b: to each
        other, which needs two nodes)."""
        if a == b and len(self.nodes[a]) < 2:
            return []
        ga, gb = self.grants[a], self.grants[b]
        return [p for p in ga if p in gb and "full" in (ga[p], gb[p])]


def sm_node(fabric: Fabric) -> str | None:
    """The node whose port is the default partition's full member (OpenSM's SELF): the model's
    subnet manager, else the node of the first CA port (where the simulator runs OpenSM)."""
    if fabric.model.subnet_manager:
        return fabric.model.subnet_manager
    return fabric.nodes[fabric.ports[0].node].name if fabric.ports else None


def matrix(fabric: Fabric, parts: list[Membership] | None = None) -> Matrix | None:
    parts = memberships(fabric) if parts is None else parts
    if not parts:
        return None
    sm = sm_node(fabric)
    classes: dict[tuple, list] = defaultdict(list)
    for n in fabric.nodes:
        grant = {DEFAULT_NAME: "full" if n.name == sm else "limited"}
        grant.update({m.name: m.members[n.name] for m in parts if n.name in m.members})
        classes[(n.role, tuple(sorted(grant.items())))].append(n)
    labels, nodes, roles, grants = [], [], [], []
    for key, members in sorted(classes.items(), key=lambda kv: kv[1][0].index):
        names = [n.name for n in members]
        label = compress(names)
        labels.append(label if len(label) <= 60 else f"{label[:50]}… ({len(names)} nodes)")
        nodes.append(names)
        roles.append(key[0])
        grants.append(dict(key[1]))
    return Matrix(labels, nodes, roles, grants, {DEFAULT_NAME: DEFAULT_PKEY, **{m.name: m.pkey for m in parts}})


def _through(mx: Matrix, a: int, b: int, via: list[str]) -> str:
    p = via[0]
    full = mx.labels[a] if mx.grants[a][p] == "full" else mx.labels[b]
    return f"through {p} (P_Key 0x{mx.pkeys[p]:04x}), where {full} is a full member"


def check_partitions(fabric: Fabric) -> dict | None:
    """The matrix and the intent's verdicts (`loom check`'s `partitions`); None without partitions."""
    parts = memberships(fabric)
    mx = matrix(fabric, parts)
    if mx is None:
        return None
    tenants = {m.name for m in tenant_partitions(parts, {n.name: n.role for n in fabric.nodes})}
    n = len(mx.labels)
    idx = range(n)
    tenant_of = [sorted(p for p in mx.grants[i] if p in tenants) for i in idx]
    breaches, unreached, management = [], [], []
    for a in idx:
        for b in idx:
            via = mx.talk(a, b)
            if (a < b and mx.roles[a] == mx.roles[b] == "compute" and via
                    and not set(tenant_of[a]) & set(tenant_of[b])):
                breaches.append(f"{mx.labels[a]} ({', '.join(tenant_of[a]) or 'no tenant'}) can reach {mx.labels[b]} "
                                f"({', '.join(tenant_of[b]) or 'no tenant'}) {_through(mx, a, b, via)}")
            if mx.roles[a] == "compute" and mx.roles[b] == "storage" and not via:
                unreached.append(f"{mx.labels[a]} cannot reach storage {mx.labels[b]}: no partition holds both with "
                                 "one of them full")
            if a != b and mx.roles[b] == "management" and mx.roles[a] != "management" and via \
                    and not any(mx.grants[b][p] == "full" for p in via):
                management.append(f"{mx.labels[a]} can reach management {mx.labels[b]} {_through(mx, a, b, via)}, "
                                  "not one the management nodes are full members of")
    return {
        "ok": not (breaches or unreached or management),
        "tenants_isolated": not breaches,
        "storage_reached": not unreached,
        "management_isolated": not management,
        "partitions": [{"name": m.name, "pkey": f"0x{m.pkey:04x}", "full": len(m.full),
                        "limited": len(m.members) - len(m.full), "tenant": m.name in tenants} for m in parts],
        "classes": [{"label": mx.labels[i], "role": mx.roles[i], "nodes": len(mx.nodes[i]),
                     "hostlist": compress(mx.nodes[i]), "memberships": mx.grants[i]} for i in idx],
        "matrix": [[bool(mx.talk(a, b)) for b in idx] for a in idx],
        "problems": breaches + unreached + management,
    }


def talk_changes(base: Fabric, head: Fabric) -> dict | None:
    """`loom diff`: the node pairs that can talk on one side and not on the other, by classes of
    nodes (present on both sides); None when neither side has partitions."""
    mb, mh = matrix(base), matrix(head)
    if mb is None and mh is None:
        return None
    cb, ch = _class_of(base, mb), _class_of(head, mh)
    both = defaultdict(list)
    for name in cb.keys() & ch.keys():
        both[(cb[name], ch[name])].append(name)
    keys = sorted(both, key=lambda k: min(both[k]))
    gained, lost, pairs = [], [], 0
    for i, ka in enumerate(keys):
        for kb in keys[i:]:
            tb = _can(mb, ka[0], kb[0])
            th = _can(mh, ka[1], kb[1])
            if tb == th or (ka == kb and len(both[ka]) < 2):
                continue
            a, b = both[ka], both[kb]
            pairs += len(a) * (len(a) - 1) // 2 if ka == kb else len(a) * len(b)
            line = f"{compress(sorted(a))} ↔ {'each other' if ka == kb else compress(sorted(b))}"
            (gained if th else lost).append(line)
    vb, vh = check_partitions(base), check_partitions(head)
    return {"changed": bool(gained or lost), "pairs_changed": pairs, "gained": gained, "lost": lost,
            "intent_base": None if vb is None else vb["ok"], "intent_head": None if vh is None else vh["ok"],
            "problems_head": [] if vh is None else vh["problems"]}


def _class_of(fabric: Fabric, mx: Matrix | None) -> dict[str, int]:
    if mx is None:  # no partitions: everyone in the default partition, which OpenSM then makes all full
        return {n.name: -1 for n in fabric.nodes}
    return {name: i for i, names in enumerate(mx.nodes) for name in names}


def _can(mx: Matrix | None, a: int, b: int) -> bool:
    """Without partitions OpenSM makes every port a full member of the default partition."""
    return True if mx is None else bool(mx.talk(a, b))
