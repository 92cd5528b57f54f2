"""Forwarding tables read by 64-entry blocks (one SMP each, by directed route from the SM's port
over the fabric as it stands): the live tables a plan diffs and an apply checks for staleness
(`read_live`), a full apply's read-back of every table it pushed (`whole_tables`), and a
reload's read-back of only the blocks it touched.

A watcher's reroute changes a few hundred entries of a two-zone fabric's 190,000; OpenSM, told
to re-read its file (SIGHUP), sends only the blocks that differ from what it programmed, so the
read-back that proves the change took asks each switch for exactly those blocks.  Entries the
change did not touch are not re-read: drift made outside OpenSM is `loom apply`'s to repair (it
restarts OpenSM, which reprograms everything, and reads everything back).  `dump_fts` reads the
same tables but discovers the fabric again and prints 15 MB of text (two zones): five times the
time, and CPU taken from the QoS read-back that runs beside it.
"""

from __future__ import annotations

import numpy as np

from loom.push.errors import TargetError
from loom.routing import Tables
from loom.routing.base import NO_ROUTE
from loom.routing.updown import UpDown

from .qos_readback import directed_routes

BLOCK = 64  # LFT entries per SMP (LinearForwardingTable attribute)

Entries = dict[int, np.ndarray]  # switch row → the LIDs whose entry changed


def changed_entries(before: Tables, after: Tables, rows: list[int]) -> Entries:
    """The entries of the switches `rows` (those in service) that differ between two tables."""
    changed = before.lft != after.lft
    return {r: np.flatnonzero(changed[r]) for r in rows if changed[r].any()}


def blocks_of(entries: Entries) -> dict[int, list[int]]:
    """The LFT blocks (64 LIDs each) that hold each switch's entries, in order."""
    return {r: np.unique(np.asarray(lids, dtype=np.int64) // BLOCK).tolist() for r, lids in entries.items()}


def read_live(target, sn) -> Tables:
    """The forwarding tables of every switch in service as they are now, read by blocks over
    `sn` (the fabric as it stands): what a plan diffs and an apply checks staleness against.
    The same SMPs as a read-back (7,920 on two zones, 0.2 s) where `dump_fts` discovers the
    fabric again and prints 15 MB of text to parse (1.1 s, its CPU taken from the QoS read-back
    beside it).  Each switch is asked first who it is: a route that reaches another switch than
    the model's, or a switch on other LIDs than the pinned ones, is refused, as a dump of
    another fabric is (`render.opensm.match_dump`)."""
    rows = [int(r) for r in np.flatnonzero(UpDown.of(sn).live)]
    blocks = list(range(sn.max_lid // BLOCK + 1))
    back, who, paths = _ask(target, sn, {r: blocks for r in rows}, "the live tables", ident=True)
    silent = [sn.name(r) for r in rows if r not in back or r not in who]
    if silent:
        again = " (`loom sim link up MODEL SWITCH`)" if target.kind == "sim" else ""
        raise TargetError(f"read the tables of {len(rows) - len(silent)} of {len(rows)} switches; no answer from "
                          f"{', '.join(silent[:8])}" + (f" and {len(silent) - 8} more" if len(silent) > 8 else "")
                          + f": down? `loom mark down MODEL {silent[0]} --reason ...` routes around it, or bring it "
                          f"back{again}, then plan again")
    lft = np.full((sn.n, sn.max_lid + 1), NO_ROUTE, dtype=np.uint8)
    for r in rows:
        s = sn.switch(r)
        if (who[r]["guid"], who[r]["lid"]) != (s.guid, s.lid):
            raise TargetError(f"the switch at directed route {paths[r]} is GUID 0x{who[r]['guid']:016x} with LID {who[r]['lid']}; "
                              f"the model has {s.name} there (GUID 0x{s.guid:016x}, LID {s.lid}): is this the model's "
                              "fabric, cabled as it says (`loom discover`), with the LIDs loom pinned (its guid2lid)?")
        lft[r] = np.concatenate([np.asarray(back[r][b], dtype=np.uint8) for b in blocks])[:sn.max_lid + 1]
    return Tables(sn, lft, "live")


def read_blocks(target, sn, blocks: dict[int, list[int]]) -> dict[int, dict[int, list[int]]]:
    """{switch row: [block numbers]} → row → block → 64 ports, read through `target` by
    directed route over `sn` (the fabric as it stands: no route crosses a cable that is down)."""
    return _ask(target, sn, blocks, "the table read-back")[0]


def _ask(target, sn, blocks: dict[int, list[int]], what: str, ident: bool = False):
    """The SMPs behind both readers, by directed route from the SM's port over `sn`: (row →
    block → 64 ports, row → {"guid", "lid"} of the switch that answered when `ident`, row →
    route).  With `ident` a switch that does not answer is left out, for the caller to name
    with what to do; without it, the target's own error names it."""
    paths, _ = directed_routes(sn, target.sm_ca())
    answers = target.smp(block_jobs(paths, blocks, ident), what, every=not ident)
    who = {int(a["key"][3:]): a for a in answers if a["key"].startswith("id ")}
    return blocks_answered(answers), who, paths


def block_jobs(paths: dict[int, str], blocks: dict[int, list[int]], ident: bool = False) -> list[dict]:
    """madquery jobs for the blocks of each switch row (by its directed route in `paths`; a row
    without one is not asked), and with `ident` for who answers there."""
    jobs = []
    for r, numbers in blocks.items():
        if r in paths:
            jobs.append({"key": str(r), "path": paths[r], "lft": numbers})
            if ident:
                jobs.append({"key": f"id {r}", "path": paths[r], "ident": 1})
    return jobs


def blocks_answered(answers: list[dict]) -> dict[int, dict[int, list[int]]]:
    """Row → block → 64 ports, from the answers to `block_jobs` (others are passed over)."""
    return {int(a["key"]): {int(b): ports for b, ports in a["lft"].items()} for a in answers if "lft" in a}


def whole_tables(t: Tables, in_service: list[int] | None) -> Entries:
    """Every LID of every switch in service (GUIDs; None: all) that has a table: what a full
    apply reads back.  By blocks, like a change's entries, not by `dump_fts`: on two zones the
    blocks are 7,920 SMPs in 0.2 s, where `dump_fts` discovers the fabric again and prints
    15 MB of text to parse (1.1 s, and its CPU is taken from the QoS read-back beside it)."""
    sn = t.subnet
    only = None if in_service is None else set(in_service)
    lids = np.arange(1, sn.max_lid + 1)
    return {r: lids for r in range(sn.n)
            if (only is None or sn.switch(r).guid in only) and (t.lft[r] != NO_ROUTE).any()}


def block_mismatch(want: Tables, entries: Entries, back: dict[int, dict[int, list[int]]]) -> str | None:
    """How the blocks read back (`back`: row → block → 64 ports) differ from `want` at the
    entries; None when every one holds its port.  A switch that did not answer has no blocks:
    all of its entries differ."""
    sn = want.subnet
    bad, first = 0, None
    for row, lids in entries.items():
        live = np.full((int(lids.max()) // BLOCK + 1) * BLOCK if lids.size else 0, -1, dtype=np.int16)
        for block, ports in back.get(row, {}).items():
            if block * BLOCK < live.size:
                live[block * BLOCK:(block + 1) * BLOCK] = ports
        differ = np.flatnonzero(live[lids] != want.lft[row, lids])
        if differ.size and first is None:
            lid = int(lids[differ[0]])
            got = int(live[lid]) if live[lid] >= 0 else None
            first = f"{sn.name(row)} LID {lid:#06x}: port {got} read back, {int(want.lft[row, lid])} applied"
        bad += differ.size
    return f"{bad} entries differ, e.g. {first}" if bad else None
