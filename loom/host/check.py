"""`loom host check`: a host's observed devices, layout and settings against its node type.

Facts directory: `lspci-vvv.txt` (`lspci -vvv`), `numactl-H.txt` (`numactl -H`) and, on a node
with GPUs, `nvidia-smi-topo.txt` (`nvidia-smi topo -m`).  Every mismatch is listed:
- GPUs and fabric NICs that are missing or unexpected: found in lspci (NVIDIA 3D/VGA
  controllers; Mellanox InfiniBand/Ethernet controllers, one per device, virtual functions not
  counted) against the model; a model `bus_id` is where the device must be, devices without
  one take the remaining ones in PCI address order;
- a NIC on another NUMA node than the model says, relaxed ordering off on a NIC;
- a GPU whose distance to its paired NIC differs, a GPU on another NUMA node;
- a NUMA node with other CPUs than the derived list.
"""

from __future__ import annotations

import re
from pathlib import Path

from loom.model.schema import Model

from .derive import derive
from .facts import cpu_range, parse_lspci, parse_numactl, parse_topo

FACT_FILES = {"topo": "nvidia-smi-topo.txt", "lspci": "lspci-vvv.txt", "numactl": "numactl-H.txt"}
OPTIONAL = {"topo"}  # a node without GPUs has no nvidia-smi
KINDS = {"GPU": re.compile(r"^(3D|VGA compatible) controller: NVIDIA"),
         "NIC": re.compile(r"^(Infiniband|Ethernet) controller: Mellanox")}
TOOLS = {"topo": "nvidia-smi topo -m", "lspci": "lspci -vvv", "numactl": "numactl -H"}


class FactsError(Exception):
    pass


def read_facts(directory: Path) -> dict[str, str]:
    """The fact files, each bounded, regular and UTF-8 (`loom.model.reading`, as a model file)."""
    from loom.model.errors import ModelError
    from loom.model.reading import read_text

    directory = Path(directory)
    present = {k: f for k, f in FACT_FILES.items() if k not in OPTIONAL or (directory / f).exists()}
    missing = [f for f in present.values() if not (directory / f).exists()]
    if missing:
        raise FactsError(f"{directory}: missing fact files {', '.join(missing)} (gather them with "
                         "`nvidia-smi topo -m`, `lspci -vvv`, `numactl -H`)")
    try:
        return {k: read_text(directory / f, "fact file") for k, f in present.items()}
    except ModelError as exc:
        raise FactsError(exc.problems[0].render(exc.file)) from None


def parse_facts(facts: dict[str, str]) -> tuple[dict, dict, dict]:
    """lspci, nvidia-smi topo and numactl facts parsed; output that is not the tool's is refused."""
    parsed = []
    for key, parse in (("lspci", parse_lspci), ("topo", parse_topo), ("numactl", parse_numactl)):
        if key not in facts:
            parsed.append(None)
            continue
        try:
            parsed.append(parse(facts[key]))
        except ValueError as exc:
            raise FactsError(f"{FACT_FILES[key]} is not the output of {TOOLS[key]} ({exc}); "
                             f"gather it again with `{TOOLS[key]}`") from None
    return tuple(parsed)


def devices(pci: dict[str, dict]) -> dict[str, list[str]]:
    """PCI addresses of the GPUs and fabric NICs lspci lists (a NIC once per device: the
    functions of a dual-port card are one NIC; virtual functions are not NICs)."""
    out: dict[str, list[str]] = {k: [] for k in KINDS}
    for addr, dev in sorted(pci.items()):
        for kind, pattern in KINDS.items():
            if pattern.match(dev["description"]) and "Virtual Function" not in dev["description"]:
                if kind == "GPU" or not any(a[:-1] == addr[:-1] for a in out[kind]):
                    out[kind].append(addr)
    return out


def match(kind: str, wanted: list, found: list[str], pci: dict) -> tuple[dict[str, str], list[str]]:
    """Model devices → addresses found, and the problems: a device whose bus_id holds nothing,
    devices missing, devices found that the model does not have."""
    got, problems, free = {}, [], list(found)
    for d in wanted:
        if d.bus_id:
            if d.bus_id.lower() in free:
                got[d.name] = d.bus_id.lower()
                free.remove(d.bus_id.lower())
            else:
                problems.append(f"{kind} {d.name}: missing (the model expects it at {d.bus_id}, lspci shows "
                                f"{'another device' if d.bus_id.lower() in pci else 'nothing'} there)")
    for d in wanted:
        if not d.bus_id and d.name not in got:
            if free:
                got[d.name] = free.pop(0)
            else:
                problems.append(f"{kind} {d.name}: missing (lspci shows {len(found)} {kind}s, the model has {len(wanted)})")
    problems += [f"unexpected {kind} at {a} ({pci[a]['description']}): the model has {len(wanted)} {kind}s" for a in free]
    return got, problems


def check_host(model: Model, node_type: str, facts: dict[str, str]) -> list[str]:
    nt = model.node_types[node_type]
    intent = derive(model, node_type)
    pci, topo, numa_cpus = parse_facts(facts)
    found = devices(pci)
    _, problems = match("GPU", list(nt.gpus), found["GPU"], pci)
    nics, nic_problems = match("NIC", list(nt.nics), found["NIC"], pci)
    problems += nic_problems
    for nic in nt.nics:
        addr = nics.get(nic.name)
        if addr is None:
            continue
        dev = pci[addr]
        if dev["numa"] is not None and dev["numa"] != intent.nic_numa[nic.name]:
            problems.append(f"NIC {nic.name} ({addr}) sits on NUMA node {dev['numa']}, the model says {intent.nic_numa[nic.name]}")
        if dev["relaxed_ordering"] is False:
            problems.append(f"NIC {nic.name} ({addr}): PCIe relaxed ordering is off (DevCtl RlxdOrd-)")
    if intent.pairs and topo is None:
        raise FactsError(f"{FACT_FILES['topo']} is missing: node type {node_type} has GPUs; gather it with `{TOOLS['topo']}`")
    nic_col = {name: col for col, name in topo["nics"].items()} if topo else {}
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
