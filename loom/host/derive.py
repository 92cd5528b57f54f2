"""Host settings derived from a node type's layout (and the fabric's QoS), per node type and host.

- GPU↔NIC pairing by PCIe distance, ranked as `nvidia-smi topo -m` ranks it:
  PIX (same PCIe switch) < PXB (different switches, same root complex) < PHB (same root complex)
  < NODE (same NUMA node) < SYS (across the SMP interconnect); each GPU takes its nearest NIC
  (ties: the NIC with fewest GPUs so far, then NIC order), as Fire-Flyer 2 routes NCCL through
  the HCA of the GPU's NUMA node and EFLOPS pairs each GPU with the NIC on its PCIe switch.
- CPU list of a NUMA node: cores `n·cores_per_numa … (n+1)·cores_per_numa − 1` (the Linux
  numbering of NPS-n EPYC systems without SMT siblings; SMT siblings are not modelled).
- NCCL environment: NCCL_IB_HCA (NIC:port for every cabled port), the SL/TC of the `nccl`
  traffic class when the model has one, NCCL_SOCKET_IFNAME (bootstrap off the fabric:
  `^lo,docker`), NCCL_NET_GDR_LEVEL (the worst distance a GPU has to its NIC, so GPUDirect RDMA
  stays on for every pair), and NCCL_TOPO_FILE only when the model gives every GPU and NIC its
  real PCI address (`bus_id`): a topology file of made-up addresses would mislead NCCL, which
  otherwise reads the topology from sysfs itself.  Node types without GPUs get no NCCL settings.
- NIC IRQ affinity: the NIC's NUMA-local cores.  RDMA: memlock unlimited.
- PCIe relaxed ordering: firmware `mlxconfig -d <NIC> set PCI_WR_ORDERING=1` and the PCIe Device
  Control "Enable Relaxed Ordering" bit (bit 4 of CAP_EXP+8) on each NIC, set at every boot on
  the device the NIC's name resolves to in sysfs (the host_tuning role's boot script); the
  model's `bus_id`s are expectations `loom host check` compares, never addresses to write to.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.model.schema import Model, NodeType

RANKS = ("PIX", "PXB", "PHB", "NODE", "SYS")


@dataclass(frozen=True)
class Pair:
    gpu: str
    nic: str
    distance: str  # one of RANKS
    numa: int
    cpus: str


@dataclass(frozen=True)
class HostIntent:
    node_type: str
    gpu_numa: dict[str, int]
    nic_numa: dict[str, int]
    pairs: tuple[Pair, ...]
    nic_cpus: dict[str, str]
    env: dict[str, str]
    topology_xml: str
    relaxed_ordering: dict[str, str] = field(default_factory=dict)  # NIC → its model bus_id (an expectation)
    memlock: str = "unlimited"


def numa_of(nt: NodeType) -> dict[str, int]:
    return {rc.name: rc.numa for rc in nt.root_complexes}


def cpus(nt: NodeType, numa: int) -> str:
    first = numa * nt.cores_per_numa
    return f"{first}-{first + nt.cores_per_numa - 1}"


def distance(nt: NodeType, a, b) -> str:
    """PCIe distance between two devices (GPU or NIC entries of the node type)."""
    rc_numa = numa_of(nt)
    if a.pcie_switch and a.pcie_switch == b.pcie_switch:
        return "PIX"
    if a.root_complex == b.root_complex:
        return "PXB" if a.pcie_switch and b.pcie_switch else "PHB"
    if rc_numa[a.root_complex] == rc_numa[b.root_complex]:
        return "NODE"
    return "SYS"


def pair_gpus(nt: NodeType) -> list[Pair]:
    rc_numa = numa_of(nt)
    load = {n.name: 0 for n in nt.nics}
    out = []
    for g in nt.gpus:
        best = min(nt.nics, key=lambda n: (RANKS.index(distance(nt, g, n)), load[n.name], nt.nics.index(n)))
        load[best.name] += 1
        numa = rc_numa[g.root_complex]
        out.append(Pair(g.name, best.name, distance(nt, g, best), numa, cpus(nt, numa)))
    return out


def pci_address(nt: NodeType, device) -> str:
    """A device's PCI address: the model's `bus_id` when given, else one derived from its place
    (root complex index → bus, device index within it) so the topology file is consistent."""
    if getattr(device, "bus_id", None):
        return device.bus_id
    rc = [r.name for r in nt.root_complexes].index(device.root_complex)
    members = [d.name for d in list(nt.gpus) + list(nt.nics) if d.root_complex == device.root_complex]
    return f"0000:{(rc + 1) * 0x10 + members.index(device.name):02x}:00.0"


def topology_xml(nt: NodeType, speed_mbps: dict[str, int]) -> str:
    """NCCL topology file (NCCL_TOPO_FILE): CPUs (NUMA nodes) → root complexes → PCIe switches →
    GPUs and NICs."""
    lines = ['<system version="1">']
    for numa in range(nt.numa_nodes):
        first, n = numa * nt.cores_per_numa, nt.cores_per_numa
        mask = ((1 << n) - 1) << first
        lines.append(f'  <cpu numaid="{numa}" affinity="{mask:x}" arch="x86_64">')
        for rc in [r for r in nt.root_complexes if r.numa == numa]:
            devices = [d for d in list(nt.gpus) + list(nt.nics) if d.root_complex == rc.name]
            if not devices:
                continue
            groups: dict[str | None, list] = {}
            for d in devices:
                groups.setdefault(d.pcie_switch, []).append(d)
            for sw, members in groups.items():
                indent = "    "
                if sw:
                    lines.append(f'    <pci busid="{pci_address(nt, members[0])[:-4]}0.0" class="0x060400" '
                                 f'link_speed="16.0 GT/s PCIe" link_width="16">')
                    indent = "      "
                for d in members:
                    if d in nt.gpus:
                        lines.append(f'{indent}<pci busid="{pci_address(nt, d)}" class="0x030200" '
                                     f'link_speed="16.0 GT/s PCIe" link_width="16"/>')
                    else:
                        lines.append(f'{indent}<pci busid="{pci_address(nt, d)}" class="0x020700" '
                                     f'link_speed="16.0 GT/s PCIe" link_width="16">')
                        lines.append(f'{indent}  <nic>')
                        for port in range(1, d.ports + 1):
                            lines.append(f'{indent}    <net name="{d.name}" dev="{nt.nics.index(d)}" port="{port}" '
                                         f'speed="{speed_mbps[d.name]}" gdr="1" maxconn="131072"/>')
                        lines.append(f'{indent}  </nic>')
                        lines.append(f'{indent}</pci>')
                if sw:
                    lines.append("    </pci>")
        lines.append("  </cpu>")
    lines.append("</system>")
    return "\n".join(lines) + "\n"


def derive(model: Model, node_type: str) -> HostIntent:
    from loom.model.schema import SPEEDS_GBPS
    from loom.qos import plan_qos

    nt = model.node_types[node_type]
    rc_numa = numa_of(nt)
    pairs = pair_gpus(nt)
    located = all(d.bus_id for d in list(nt.gpus) + list(nt.nics))
    env = {
        "NCCL_IB_HCA": ",".join(f"{n.name}:{p}" for n in nt.nics for p in range(1, n.ports + 1)),
        "NCCL_SOCKET_IFNAME": "^lo,docker",
        **({"NCCL_TOPO_FILE": "/etc/loom/nccl-topo.xml"} if located else {}),
    } if nt.gpus else {}
    if pairs:
        env["NCCL_NET_GDR_LEVEL"] = max((p.distance for p in pairs), key=RANKS.index)
    qos = plan_qos(model)
    if qos and nt.gpus:
        nccl = next((c for c in qos.classes if "NCCL_IB_SL" in c.env or "NCCL_IB_TC" in c.env), None)
        if nccl:
            env.update({k: v for k, v in nccl.env.items() if k.startswith("NCCL_")})
    speeds = {n.name: SPEEDS_GBPS[n.speed] * 1000 for n in nt.nics}
    return HostIntent(
        node_type=node_type,
        gpu_numa={g.name: rc_numa[g.root_complex] for g in nt.gpus},
        nic_numa={n.name: rc_numa[n.root_complex] for n in nt.nics},
        pairs=tuple(pairs),
        nic_cpus={n.name: cpus(nt, rc_numa[n.root_complex]) for n in nt.nics},
        env=env,
        topology_xml=topology_xml(nt, speeds) if nt.gpus and located else "",
        relaxed_ordering={n.name: n.bus_id for n in nt.nics if n.bus_id},
    )
