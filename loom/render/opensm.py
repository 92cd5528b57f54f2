"""OpenSM files: the LFT file for `opensm -R file -U`, in exactly the `opensm-lfts.dump` format
(OpenSM remaps entries by the `portguid` comments, so they must be right), and the `guid2lid`
cache file that pins every port GUID to the LID Loom routed for."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from loom.routing.base import NO_ROUTE, Tables


def lfts_dump(t: Tables) -> str:
    """Every switch's table, as OpenSM dumps it: one line per routed LID, `0x<lid> <port> #
    <what the LID is>`.  The lines of all LIDs are laid out once as bytes with the port left
    blank (`_lines`); each switch's block is that copy with its ports written in as digits, less
    the lines of LIDs it does not route — a two-zone fabric's 15 MB in milliseconds, where
    building 190,000 strings one by one took a tenth of a second of every watcher reroute."""
    sn = t.subnet
    template, at, keep_bytes, lids = _lines(sn)
    out = []
    for row in range(sn.n):
        entries = t.lft[row, lids]
        routed = entries != NO_ROUTE
        if not routed.any():
            continue  # down or cut off: OpenSM cannot reach it, so it has no table to load
        s = sn.switch(row)
        block = template.copy()
        ports = entries.astype(np.uint8)
        block[at], block[at + 1], block[at + 2] = 48 + ports // 100, 48 + ports // 10 % 10, 48 + ports % 10
        if not routed.all():
            block = block[np.repeat(routed, keep_bytes)]
        out += [f"Unicast lids [0-{sn.max_lid}] of switch Lid {s.lid} guid 0x{s.guid:016x} ('{s.name}'):\n".encode(),
                block.tobytes(), f"{sn.max_lid} lids dumped\n".encode()]
    return b"".join(out).decode()


def _lines(sn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(every LID's dump line with `000` for its port, as UTF-8 bytes; where each line's port
    digits start; each line's length in bytes; the LIDs, in order)."""
    f = sn.fabric
    lines = []
    for lid in range(1, sn.max_lid + 1):
        if sn.lid_switch[lid] >= 0:
            s = sn.switch(int(sn.lid_switch[lid]))
            lines.append((lid, f"Switch portguid 0x{s.guid:016x}: '{s.name}'"))
        elif sn.lid_port[lid] >= 0:
            p = f.ports[int(sn.lid_port[lid])]
            lines.append((lid, f"Channel Adapter portguid 0x{p.guid:016x}: '{p.ca}'"))
    encoded = [f"0x{lid:04x} 000 # {what}\n".encode() for lid, what in lines]
    lengths = np.array([len(b) for b in encoded], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    at = starts + np.array([len(f"0x{lid:04x} ") for lid, _ in lines], dtype=np.int64)
    template = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    return template, at, lengths, np.array([lid for lid, _ in lines], dtype=np.int64)


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


# an entry line, found by the newline before it: a literal to search for, where `^` under re.M
# tries every position of a 15 MB dump (twice as slow)
ENTRY = re.compile(r"\n0x([0-9a-fA-F]+) (\d+)")


def parse_lfts_dump(text: str) -> Mapping[int, Mapping[int, int]]:
    """`dump_fts` / `opensm-lfts.dump` text → {switch GUID: {LID: port}}, read-only.

    Parsed once per text: an apply meets the same dump when it checks the plan, digests it,
    turns it into tables, verifies the read-back and records what it applied (ten parses of
    fire-flyer-2's 15 MB dumps, 3.7 s, were four texts).  The last few texts' tables are kept
    (~14 MB each there); read-only, so no caller can change another's."""
    return _parsed(text)


@lru_cache(maxsize=4)
def _parsed(text: str) -> Mapping[int, Mapping[int, int]]:
    out: dict[int, Mapping[int, int]] = {}
    blocks = text.split("Unicast lids")
    for block in blocks[1:]:
        try:
            guid = int(block.split(" guid ", 1)[1].split(None, 1)[0], 16)
        except (IndexError, ValueError):
            raise DumpMismatch(f"a table header has no switch GUID: `Unicast lids{block.splitlines()[0][:60]}`") from None
        out[guid] = MappingProxyType({int(lid, 16): int(port) for lid, port in ENTRY.findall(block)})
    return MappingProxyType(out)


class DumpMismatch(ValueError):
    """The table file is not a table dump of this fabric; the message names the first mismatch."""


def match_dump(subnet, parsed: Mapping[int, Mapping[int, int]], text: str) -> None:
    """Refuse a dump that holds no tables, or whose switches or LIDs are not the model's: checking
    another fabric's tables against this one would report nonsense (unreachable pairs, no loops)."""
    if not parsed:
        raise DumpMismatch("holds no forwarding tables (no `Unicast lids ... of switch ...` block)")
    guids = {subnet.switch(r).guid: subnet.switch(r) for r in range(subnet.n)}
    for block in text.split("Unicast lids")[1:]:
        head = block.split("\n", 1)[0]
        guid = int(head.split(" guid ", 1)[1].split(None, 1)[0], 16)
        if guid not in guids:
            raise DumpMismatch(f"switch GUID 0x{guid:016x} ({head.strip()[:80]}) is not a switch of this model's plane "
                               f"{subnet.plane}")
        lid = int(head.split("switch Lid ", 1)[1].split()[0]) if "switch Lid " in head else None
        if lid is not None and lid != guids[guid].lid:
            raise DumpMismatch(f"switch {guids[guid].name} (GUID 0x{guid:016x}) has LID {lid} in the file, "
                               f"{guids[guid].lid} in the model (were the LIDs pinned with loom's guid2lid?)")
    for guid, entries in parsed.items():
        for lid in entries:
            if lid > subnet.max_lid or subnet.lid_names[lid] is None:
                raise DumpMismatch(f"switch {guids[guid].name} routes LID {lid}, which no port of the model has")


def tables_from_dump(subnet, text: str, engine: str) -> Tables:
    """LFTs read from an OpenSM dump (or `dump_fts`) as `Tables` over Loom's subnet view, so
    Loom's checks can measure any engine's routing (LIDs must be the ones Loom pinned; `match_dump`
    refuses a file that is not this fabric's tables)."""
    parsed = parse_lfts_dump(text)
    lft = np.full((subnet.n, subnet.max_lid + 1), NO_ROUTE, dtype=np.uint8)
    for row in range(subnet.n):
        entries = parsed.get(subnet.switch(row).guid)
        if entries:
            lids = np.fromiter(entries.keys(), dtype=np.int64, count=len(entries))
            ports = np.fromiter(entries.values(), dtype=np.int64, count=len(entries))
            if ports.max() > NO_ROUTE:  # the uint8 table would wrap it
                raise DumpMismatch(f"switch {subnet.switch(row).name} routes to port {ports.max()}, which no switch has")
            keep = lids <= subnet.max_lid
            lft[row, lids[keep]] = ports[keep]
    return Tables(subnet, lft, engine)


def ibdmchk_path_sls(t: Tables, sl_of_pair) -> str:
    """ibdmchk's `-c` file: `0x<source node GUID> <destination LID> <SL>` for every CA-to-CA pair
    of the subnet; `sl_of_pair(source zone, destination zone)` gives the default class's SL."""
    sn = t.subnet
    names = [z.name for z in sn.fabric.model.zones]
    ports = [p for p in sn.fabric.ports if p.plane == sn.plane and sn.port_lid[p.index] in set(sn.ca_lids.tolist())]
    lines = []
    for src in ports:
        for dst in ports:
            if dst.index != src.index:
                lines.append(f"0x{src.ca_guid:016x} {dst.lid} {sl_of_pair(names.index(src.zone), names.index(dst.zone))}")
    return "\n".join(lines) + "\n"


def ibdmchk_sl2vl(t: Tables, sl2vl: tuple[int, ...]) -> str:
    """ibdmchk's `-d` file: `0x<switch GUID> <in port> <out port> 0x<SL0><SL1> ...` (one VL nibble
    per SL, two per byte) for every pair of a switch's cabled ports: the same map everywhere."""
    sn = t.subnet
    table = " ".join(f"0x{sl2vl[i]:x}{sl2vl[i + 1]:x}" for i in range(0, 16, 2))
    lines = []
    for row in range(sn.n):
        if (t.lft[row] == NO_ROUTE).all():
            continue
        cabled = [int(p) for p in np.flatnonzero(sn.peer_kind[row] != 0)]
        guid = sn.switch(row).guid
        lines += [f"0x{guid:016x} {i} {o} {table}" for i in cabled for o in cabled if i != o]
    return "\n".join(lines) + "\n"
