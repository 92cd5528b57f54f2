"""Parsers for facts gathered on a host: `nvidia-smi topo -m`, `lspci -vvv`, `numactl -H`.

They read the tool output as printed (tabs or runs of spaces between columns) and return plain
dicts; `loom.host.check` compares them with the intent.
"""

from __future__ import annotations

import re


def parse_topo(text: str) -> dict:
    """`nvidia-smi topo -m` → {"matrix": {row: {col: link}}, "cpu_affinity": {GPUn: "0-23"},
    "numa": {GPUn: int | None}, "nics": {"NIC0": "mlx5_0"}}."""
    lines = [l.rstrip() for l in text.splitlines()]
    header_i = next((i for i, l in enumerate(lines) if re.match(r"^\s+GPU0\b", l)), None)
    if header_i is None:
        raise ValueError("no header line with GPU0")
    header = re.split(r"\t+|\s{2,}", lines[header_i].strip())
    devices = [h for h in header if re.fullmatch(r"(GPU|NIC)\d+", h)]
    out = {"matrix": {}, "cpu_affinity": {}, "numa": {}, "nics": {}}
    for line in lines[header_i + 1:]:
        m = re.match(r"^((?:GPU|NIC)\d+)\s+(.*)$", line)
        if not m:
            if line.strip().startswith("Legend"):
                break
            continue
        row, rest = m.group(1), re.split(r"\t+|\s{2,}|\s(?=\S)", m.group(2).strip())
        cells = [c.strip() for c in rest if c.strip()]
        out["matrix"][row] = dict(zip(devices, cells[: len(devices)]))
        extra = cells[len(devices):]
        if row.startswith("GPU") and extra:
            out["cpu_affinity"][row] = extra[0]
            out["numa"][row] = int(extra[1]) if len(extra) > 1 and extra[1].isdigit() else None
    for m in re.finditer(r"^\s*(NIC\d+):\s*(\S+)", text, re.M):
        out["nics"][m.group(1)] = m.group(2)
    return out


def parse_lspci(text: str) -> dict[str, dict]:
    """`lspci -vvv` → {"0000:bb:dd.f": {"description", "numa", "relaxed_ordering"}}.

    Relaxed ordering is read from the DevCtl block (`RlxdOrd+` / `RlxdOrd-`), not DevCap."""
    out = {}
    for block in re.split(r"\n(?=[0-9a-fA-F]{2,4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d|[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)", text.strip()):
        if not block.strip():
            continue
        head = block.splitlines()[0]
        addr = head.split()[0]
        if addr.count(":") == 1:
            addr = "0000:" + addr
        numa = re.search(r"NUMA node:\s*(\d+)", block)
        devctl = re.search(r"DevCtl:(.*?)(?:\n\s*\S+:|\Z)", block, re.S)
        ro = None
        if devctl:
            ro = "RlxdOrd+" in devctl.group(1) if "RlxdOrd" in devctl.group(1) else None
        out[addr.lower()] = {"description": head.split(" ", 1)[1] if " " in head else "",
                             "numa": int(numa.group(1)) if numa else None, "relaxed_ordering": ro}
    return out


def parse_numactl(text: str) -> dict[int, list[int]]:
    """`numactl -H` → {node: [cpus]}."""
    return {int(m.group(1)): [int(c) for c in m.group(2).split()]
            for m in re.finditer(r"^node (\d+) cpus:\s*(.*)$", text, re.M)}


def cpu_range(cpus: list[int]) -> str:
    """[0, 1, 2, 5] → "0-2,5"."""
    parts, start = [], None
    for i, c in enumerate(cpus):
        if start is None:
            start = c
        if i + 1 == len(cpus) or cpus[i + 1] != c + 1:
            parts.append(f"{start}-{c}" if c != start else f"{c}")
            start = None
    return ",".join(parts)
