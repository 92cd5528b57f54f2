"""The model's partitions over the expanded fabric: each partition's member nodes and the port
GUIDs OpenSM's `partitions.conf` names, and the P_Key table every CA port must then hold.

Membership is per node (`loom.model.partitions.resolve`); OpenSM grants it per port, so every
cabled port of a member node, in the plane asked for, carries the partition.
"""

from __future__ import annotations

from loom.model.partitions import DEFAULT_PKEY, Membership, NodeRecord, resolve

from .fabric import Fabric

FULL_BIT = 0x8000  # bit 15 of a P_Key table entry: full membership


def memberships(fabric: Fabric) -> list[Membership]:
    """The model's partitions resolved to the fabric's nodes (empty without `partitions:`)."""
    nodes = [NodeRecord(n.name, n.group, n.role, tuple(n.zones)) for n in fabric.nodes]
    return resolve(fabric.model.partitions, nodes)


def port_members(fabric: Fabric, m: Membership, plane: int) -> list[tuple[int, str]]:
    """(port GUID, "full" | "limited") of every port of the partition's nodes in `plane`."""
    return [(p.guid, m.members[fabric.nodes[p.node].name]) for p in fabric.ports
            if p.plane == plane and fabric.nodes[p.node].name in m.members]


def pkey_tables(fabric: Fabric, plane: int, sm_ca: str, parts: list[Membership] | None = None) -> dict[str, list[int]]:
    """{"<CA>/<port>": sorted P_Key entries (membership bit included)} for every CA port of the
    plane: the default partition (full on the port of the CA `sm_ca` the SM runs on — OpenSM's
    `SELF` — limited elsewhere) and each partition the port's node belongs to.  Empty without
    partitions (OpenSM's own default then applies)."""
    parts = memberships(fabric) if parts is None else parts
    if not parts:
        return {}
    out = {}
    for p in fabric.ports:
        if p.plane != plane:
            continue
        name = fabric.nodes[p.node].name
        entries = {DEFAULT_PKEY | (FULL_BIT if p.ca == sm_ca else 0)}
        entries |= {m.pkey | (FULL_BIT if m.members[name] == "full" else 0) for m in parts if name in m.members}
        out[f"{p.ca}/{p.port}"] = sorted(entries)
    return out
