"""`loom host check`: a host's observed layout and settings against the intent of its node type.

Facts directory: `nvidia-smi-topo.txt` (`nvidia-smi topo -m`), `lspci-vvv.txt` (`lspci -vvv`),
`numactl-H.txt` (`numactl -H`).  Every mismatch is listed: a NIC on another NUMA node than the
model says, relaxed ordering off on a NIC, a GPU whose distance to its paired NIC differs, a
GPU on another NUMA node, a NUMA node with other CPUs than the derived list.
"""

from __future__ import annotations

from pathlib import Path

from loom.model.schema import Model

from .derive import derive, pci_address
from .facts import cpu_range, parse_lspci, parse_numactl, parse_topo

FACT_FILES = {"topo": "nvidia-smi-topo.txt", "lspci": "lspci-vvv.txt", "numactl": "numactl-H.txt"}
TOOLS = {"topo": "nvidia-smi topo -m", "lspci": "lspci -vvv", "numactl": "numactl -H"}


class FactsError(Exception):
    pass


def read_facts(directory: Path) -> dict[str, str]:
    """The fact files, each bounded, regular and UTF-8 (`loom.inputs`)."""
    from loom.inputs import InputError, read_fact_files

    try:
        return read_fact_files(directory, FACT_FILES)
    except InputError as exc:
        raise FactsError(str(exc)) from None


def parse_facts(facts: dict[str, str]) -> tuple[dict, dict, dict]:
    """lspci, nvidia-smi topo and numactl facts parsed; output that is not the tool's is refused."""
    parsed = []
    for key, parse in (("lspci", parse_lspci), ("topo", parse_topo), ("numactl", parse_numactl)):
        try:
            parsed.append(parse(facts[key]))
        except ValueError as exc:
            raise FactsError(f"{FACT_FILES[key]} is not the output of {TOOLS[key]} ({exc}); "
                             f"gather it again with `{TOOLS[key]}`") from None
    return tuple(parsed)


def check_host(model: Model, node_type: str, facts: dict[str, str]) -> list[str]:
    nt = model.node_types[node_type]
    intent = derive(model, node_type)
    pci, topo, numa_cpus = parse_facts(facts)
    problems = []
    for nic in nt.nics:
        addr = pci_address(nt, nic).lower()
        dev = pci.get(addr)
        if dev is None:
            problems.append(f"NIC {nic.name}: no PCI device at {addr}")
            continue
        if dev["numa"] is not None and dev["numa"] != intent.nic_numa[nic.name]:
            problems.append(f"NIC {nic.name} ({addr}) sits on NUMA node {dev['numa']}, the model says {intent.nic_numa[nic.name]}")
        if dev["relaxed_ordering"] is False:
            problems.append(f"NIC {nic.name} ({addr}): PCIe relaxed ordering is off (DevCtl RlxdOrd-)")
    nic_col = {name: col for col, name in topo["nics"].items()}
    for i, pair in enumerate(intent.pairs):
        row = f"GPU{i}"
        col = nic_col.get(pair.nic)
        seen = topo["matrix"].get(row, {}).get(col) if col else None
        if seen is None:
            problems.append(f"{pair.gpu} ({row}) or NIC {pair.nic} missing from nvidia-smi topo -m")
        elif seen != pair.distance:
            problems.append(f"{pair.gpu} ({row}) to {pair.nic}: {seen}, the model gives {pair.distance}")
        numa = topo["numa"].get(row)
        if numa is not None and numa != intent.gpu_numa[pair.gpu]:
            problems.append(f"{pair.gpu} ({row}) is on NUMA node {numa}, the model says {intent.gpu_numa[pair.gpu]}")
    for numa in range(nt.numa_nodes):
        want = f"{numa * nt.cores_per_numa}-{(numa + 1) * nt.cores_per_numa - 1}"
        got = cpu_range(numa_cpus.get(numa, []))
        if got != want:
            problems.append(f"NUMA node {numa} has CPUs {got or 'none'}, the model derives {want}")
    return problems
