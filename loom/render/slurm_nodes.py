"""slurm.conf's `NodeName=` lines for the nodes Slurm schedules (`loom slurm` writes nodes.conf).

Slurm must be told each node's CPUs and GPUs, and the model knows them per node type: sockets,
NUMA nodes per socket and cores per NUMA node, and the GPUs.  One line per node type, its nodes
as a hostlist.  What the model does not know stays out rather than guessed: memory
(`RealMemory`, default 1 MB: add it per node type in slurm.conf, or Slurm cannot schedule by
memory), hyper-threads (ThreadsPerCore=1, CPUs = cores: with SMT on, slurmd finds more and Slurm
keeps the configured count), the GPU model and device files (`gres.conf` with `AutoDetect=nvml`
finds them on the node, with their CPU affinity).
"""

from __future__ import annotations

from loom.expand import Fabric
from loom.model.hostlist import compress


def nodes_conf(f: Fabric, scheduled: set[str]) -> str:
    by_type: dict[str, list[str]] = {}
    for n in f.nodes:
        if n.name in scheduled:
            by_type.setdefault(n.node_type, []).append(n.name)
    lines = [f"# nodes.conf for {f.name}: written by `loom slurm` from the model's node types; `Include` it in",
             "# slurm.conf (with GresTypes=gpu when a line has Gres).  Not known to the model, so not here:",
             "# RealMemory, the GPU model, hyper-threads (CPUs = cores).  Feature = the node type (--constraint)."]
    for node_type, names in by_type.items():
        nt = f.model.node_types[node_type]
        cores = nt.numa_per_socket * nt.cores_per_numa
        parts = [f"NodeName={compress(names)}", f"CPUs={nt.sockets * cores}", "Boards=1",
                 f"SocketsPerBoard={nt.sockets}", f"CoresPerSocket={cores}", "ThreadsPerCore=1"]
        if nt.gpus:
            parts.append(f"Gres=gpu:{len(nt.gpus)}")
        parts += [f"Feature={node_type}", "State=UNKNOWN"]
        lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"
