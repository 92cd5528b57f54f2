"""OpenSM files: the LFT file for `opensm -R file -U`, in exactly the `opensm-lfts.dump` format
(OpenSM remaps entries by the `portguid` comments, so they must be right), and the `guid2lid`
cache file that pins every port GUID to the LID Loom routed for."""

from __future__ import annotations

import re

import numpy as np

from loom.routing.base import NO_ROUTE, Tables


def lfts_dump(t: Tables) -> str:
    sn = t.subnet
    f = sn.fabric
    comment = {}
    for lid in range(1, sn.max_lid + 1):
        if sn.lid_switch[lid] >= 0:
            s = sn.switch(int(sn.lid_switch[lid]))
            comment[lid] = f"Switch portguid 0x{s.guid:016x}: '{s.name}'"
        elif sn.lid_port[lid] >= 0:
            p = f.ports[int(sn.lid_port[lid])]
            comment[lid] = f"Channel Adapter portguid 0x{p.guid:016x}: '{p.ca}'"
    head = {lid: f"0x{lid:04x} " for lid in comment}
    tail = {lid: f" # {c}" for lid, c in comment.items()}
    ports = [f"{p:03d}" for p in range(256)]
    lids = np.array(sorted(comment), dtype=np.int64)
    out = []
    for row in range(sn.n):
        if (t.lft[row] == NO_ROUTE).all():
            continue  # down or cut off: OpenSM cannot reach it, so it has no table to load
        s = sn.switch(row)
        out.append(f"Unicast lids [0-{sn.max_lid}] of switch Lid {s.lid} guid 0x{s.guid:016x} ('{s.name}'):")
        entries = t.lft[row, lids]
        keep = lids[entries != NO_ROUTE].tolist()
        out.extend(head[l] + ports[p] + tail[l] for l, p in zip(keep, t.lft[row, keep].tolist()))
        out.append(f"{sn.max_lid} lids dumped")
    return "\n".join(out) + "\n"


def guid2lid(t: Tables) -> str:
    """One `0x<guid> 0x<lid> 0x<lid>` line per port, each followed by an empty line (OpenSM ignores
    the file without them)."""
    sn = t.subnet
    lines = []
    for row in range(sn.n):
        s = sn.switch(row)
        lines.append(f"0x{s.guid:016x} 0x{s.lid:04x} 0x{s.lid:04x}\n")
    for p in sn.fabric.ports:
        if p.plane == sn.plane:
            lines.append(f"0x{p.guid:016x} 0x{p.lid:04x} 0x{p.lid:04x}\n")
    return "\n".join(lines) + "\n"


ENTRY = re.compile(r"^0x([0-9a-fA-F]+) (\d+)", re.M)


def parse_lfts_dump(text: str) -> dict[int, dict[int, int]]:
    """`dump_fts` / `opensm-lfts.dump` text → {switch GUID: {LID: port}}."""
    out: dict[int, dict[int, int]] = {}
    blocks = text.split("Unicast lids")
    for block in blocks[1:]:
        guid = int(block.split(" guid ", 1)[1].split(None, 1)[0], 16)
        out[guid] = {int(lid, 16): int(port) for lid, port in ENTRY.findall(block)}
    return out


def tables_from_dump(subnet, text: str, engine: str) -> Tables:
    """LFTs read from an OpenSM dump (or `dump_fts`) as `Tables` over Loom's subnet view, so
    Loom's checks can measure any engine's routing (LIDs must be the ones Loom pinned)."""
    parsed = parse_lfts_dump(text)
    lft = np.full((subnet.n, subnet.max_lid + 1), NO_ROUTE, dtype=np.uint8)
    for row in range(subnet.n):
        for lid, port in parsed.get(subnet.switch(row).guid, {}).items():
            if lid <= subnet.max_lid:
                lft[row, lid] = port
    return Tables(subnet, lft, engine)
