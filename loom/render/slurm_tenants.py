"""Slurm partitions for the fabric's tenants (`loom slurm`'s `tenants.conf`, included from
slurm.conf): one Slurm partition per tenant partition of the model (its members all compute
nodes), so a tenant's jobs land on the nodes its P_Key reaches and nowhere else."""

from __future__ import annotations

from loom.expand import Fabric
from loom.expand.partitions import memberships
from loom.model.hostlist import compress
from loom.model.partitions import tenants


def tenants_conf(fabric: Fabric, scheduled: set[str]) -> str | None:
    """`PartitionName=` lines over the nodes Slurm schedules; None without tenant partitions."""
    rows = []
    for m in tenants(memberships(fabric), {n.name: n.role for n in fabric.nodes}):
        nodes = [n for n in m.members if n in scheduled]
        if nodes:
            rows.append(f"# {m.name}: P_Key 0x{m.pkey:04x}, {len(nodes)} nodes\n"
                        f"PartitionName={m.name} Nodes={compress(nodes)} State=UP\n")
    if not rows:
        return None
    return (f"# Slurm partitions for the tenants of {fabric.name}, written by loom (`Include tenants.conf` in slurm.conf):\n"
            "# one per InfiniBand tenant partition, so a tenant's jobs run where its P_Key reaches.\n" + "".join(rows))
