"""The model's partitions over the expanded fabric: each partition's member nodes and the port
GUIDs OpenSM's `partitions.conf` names (what each port's P_Key table then holds is read from
that file: `loom.fabrics.infiniband.pkeys.intent`).

Membership is per node (`loom.model.partitions.resolve`); OpenSM grants it per port, so every
cabled port of a member node, in the plane asked for, carries the partition.
"""

from __future__ import annotations

from loom.model.partitions import Membership, NodeRecord, resolve

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
