"""What a host needs of its partitions: the P_Keys its ports carry, full or limited, the IPoIB
child interface of each partition that runs IPoIB, and the P_Key its jobs use.

A job picks its partition on the host, not the fabric: NCCL by the P_Key's *index* in the
port's table (`NCCL_IB_PKEY`), UCX by the P_Key itself (`UCX_IB_PKEY`).  The index is OpenSM's
choice (it differs port to port, see docs/partitions.md), so the host looks it up in
`/sys/class/infiniband/<hca>/ports/<port>/pkeys/` for `loom_ib_pkey`; loom gives the value.
The P_Key a compute node's jobs use is its tenant's: the partition it is a full member of
(storage and management traffic choose theirs per connection).
"""

from __future__ import annotations

from loom.expand.partitions import FULL_BIT
from loom.model.partitions import Membership


def host_partitions(parts: list[Membership], node: str) -> dict:
    """Ansible host_vars for `node` (empty when the model has no partitions)."""
    if not parts:
        return {}
    rows = []
    for m in (m for m in parts if node in m.members):
        entry = m.pkey | (FULL_BIT if m.members[node] == "full" else 0)
        rows.append({"name": m.name, "pkey": f"0x{m.pkey:04x}", "membership": m.members[node], "entry": f"0x{entry:04x}",
                     # a child interface is named after the entry it sends with (`ib0.8101`): full bit set
                     **({"ipoib_child": f"{entry:04x}", "ipoib_mtu": m.ipoib.mtu} if m.ipoib else {})})
    tenant = next((r for r in rows if r["membership"] == "full"), None)
    return {"loom_partitions": rows,
            **({"loom_ib_pkey": tenant["entry"], "loom_ucx_env": {"UCX_IB_PKEY": tenant["entry"]}} if tenant else {})}
