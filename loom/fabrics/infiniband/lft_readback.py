"""Verify a table change by reading back only the forwarding-table blocks it touched.

A watcher's reroute changes a few hundred entries of a two-zone fabric's 190,000; OpenSM, told
to re-read its file (SIGHUP), sends only the blocks that differ from what it programmed.  So the
read-back that proves the change took asks each switch for exactly those 64-entry blocks (one
SMP each, by directed route from the SM's port over the fabric as it stands) instead of dumping
every table (`dump_fts`: 3,000 SMPs and a 15 MB text to parse).  Entries the change did not
touch are not re-read: drift made outside OpenSM is `loom apply`'s to repair (it restarts
OpenSM, which reprograms everything, and reads everything back).
"""

from __future__ import annotations

import numpy as np

from loom.routing import Tables

from .qos_readback import directed_routes

BLOCK = 64  # LFT entries per SMP (LinearForwardingTable attribute)

Entries = dict[int, np.ndarray]  # switch row → the LIDs whose entry changed


def changed_entries(before: Tables, after: Tables, rows: list[int]) -> Entries:
    """The entries of the switches `rows` (those in service) that differ between two tables."""
    changed = before.lft != after.lft
    return {r: np.flatnonzero(changed[r]) for r in rows if changed[r].any()}


def blocks_of(entries: Entries) -> dict[int, list[int]]:
    return {r: sorted({int(lid) // BLOCK for lid in lids}) for r, lids in entries.items()}


def read_blocks(target, sn, blocks: dict[int, list[int]]) -> dict[int, dict[int, list[int]]]:
    """{switch row: [block numbers]} → row → block → 64 ports, read through `target` by
    directed route over `sn` (the fabric as it stands: no route crosses a cable that is down)."""
    paths, _ = directed_routes(sn, target.sm_ca())
    jobs = [{"key": str(row), "path": paths[row], "lft": numbers} for row, numbers in blocks.items() if row in paths]
    answers = target.smp(jobs, "the table read-back")
    return {int(a["key"]): {int(b): ports for b, ports in a["lft"].items()} for a in answers}


def block_mismatch(want: Tables, entries: Entries, back: dict[int, dict[int, list[int]]]) -> str | None:
    """How the blocks read back (`back`: row → block → 64 ports) differ from `want` at the
    changed entries; None when every one holds its new port."""
    sn = want.subnet
    bad = []
    for row, lids in entries.items():
        blocks = back.get(row, {})
        for lid in lids.tolist():
            got = blocks.get(lid // BLOCK, [None] * BLOCK)[lid % BLOCK]
            if got != int(want.lft[row, lid]):
                bad.append(f"{sn.name(row)} LID {lid:#06x}: port {got} read back, {int(want.lft[row, lid])} applied")
    return f"{len(bad)} entries differ, e.g. {bad[0]}" if bad else None
