"""The design tables, and the tables of the fabric as it stands made from them.

A fabric with something down is routed as the *minimal repair* of the tables of the intact
design — the function `loom whatif` judges and the watcher applies (the engine's `repair`) — so
a dead spine moves exactly the destinations it carried, and when it is back the fabric returns
to the design tables, moving those destinations back and nothing else.

Which design tables: the ones loom applied on the intact fabric, kept in the target's state
directory (`design.lfts`, with the routing key of the design they were made for in
`design.key`), while the design is unchanged; else the design routed afresh, keeping the
choices of `hint` (the tables in force) where balance allows.  An apply of a plan made with
nothing down records them (`design_files`, written by `loom.fabrics.infiniband.apply`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from loom.expand.asbuilt import AsBuilt
from loom.push.packing import digest_live
from loom.render.opensm import tables_from_dump
from loom.routing import Tables, subnet
from loom.routing.repair import repair_or_widen, settled

DESIGN_LFTS, DESIGN_KEY = "design.lfts", "design.key"


def design_files(state_dir: Path, design_key: str, lfts: str | Path, digest: str | None = None) -> dict[Path, str | Path]:
    """The files that keep `lfts` as the design tables of the design with `design_key` (the
    caller writes them with its own records, atomically: `loom.files.write_all_atomic`; a Path
    is a file holding them, linked).  `digest`: `digest_live(lfts)` when the caller has it (an
    apply verified those tables live: parsing two zones' 15 MB again costs 0.2 s)."""
    if digest is None:
        digest = digest_live(lfts.read_text() if isinstance(lfts, Path) else lfts)
    return {Path(state_dir) / DESIGN_LFTS: lfts, Path(state_dir) / DESIGN_KEY: f"{design_key} {digest}\n"}


def recorded(state_dir: Path, design_key: str, design) -> Tables | None:
    """The design tables loom applied, if they were made for this design (`design_key`) and are
    the ones its digest names."""
    try:
        key, digest = (Path(state_dir) / DESIGN_KEY).read_text().split()
        text = (Path(state_dir) / DESIGN_LFTS).read_text()
    except (OSError, ValueError):
        return None
    if key != design_key or digest != digest_live(text):
        return None
    return tables_from_dump(subnet(design, 0), text, "design")


def routed_before(state_dir: Path, key: str) -> bool:
    """Did loom apply, or record as the design, tables of the fabric with routing `key`?"""
    try:
        design_key = (Path(state_dir) / DESIGN_KEY).read_text().split()[0]
    except (OSError, IndexError):
        design_key = None
    return key in (design_key, key_of_last(state_dir))


def key_of_last(state_dir: Path) -> str | None:
    """The routing key of the fabric whose plan loom applied last (`last-applied.key`; a
    watcher's apply leaves none).  Equal to the fabric's now: routing it again from those tables
    gives those tables (a plan's routing is a fixpoint), so they are taken as they are."""
    path = Path(state_dir) / "last-applied.key"
    return path.read_text().strip() if path.exists() else None


def applied_last(state_dir: Path, digest: str) -> bool:
    """Whether tables of this digest are what loom applied last (`last-applied.sha256`): the one
    question plan, apply, `sim up` and the watcher ask before trusting tables as loom's own."""
    last = Path(state_dir) / "last-applied.sha256"
    return last.exists() and last.read_text().strip() == digest


def last_applied(state_dir: Path, fabric) -> Tables | None:
    """The tables loom applied last (`last-applied.lfts`, when its digest is the recorded one).
    Routing keeps *these* choices, not the live ones: a hand edit on a switch or in OpenSM's
    input file is drift to undo (the model wins), not a choice to keep."""
    copy = Path(state_dir) / "last-applied.lfts"
    if not copy.exists():
        return None
    text = copy.read_text()
    if not applied_last(state_dir, digest_live(text)):
        return None
    return tables_from_dump(subnet(fabric, 0), text, "last applied")


def design_tables(state_dir: Path, design, design_key: str, hint: Tables | None) -> tuple[Tables, bool]:
    """The design tables, found the same way by plan and the watcher, and whether loom keeps
    them already: those it recorded (`design.lfts`), else what it applied last if that was the
    intact design's routing; else (not kept) the design routed keeping the choices of `hint`
    (what loom applied last, or what is live) — a plan carries those, so that its apply keeps
    them and the next failure is repaired from the same design."""
    kept = recorded(state_dir, design_key, design)
    if kept is not None:
        return kept, True
    last = last_applied(state_dir, design)
    if last is not None and key_of_last(state_dir) == design_key:
        return last, True
    return (settled_route(design, hint) if hint is not None else settled(subnet(design, 0), None)), False


def settled_route(fabric, hint: Tables) -> Tables:
    """The fabric's routing keeping the choices of `hint`, settled (`loom.routing.repair.settled`)."""
    return settled(subnet(fabric, 0), hint)


def as_it_stands(state: AsBuilt, design: Tables, failing: Callable[[Tables], list[str]],
                 engine: str = "auto") -> tuple[Tables, str, list[str]]:
    """The tables for the fabric as it stands, how they were made, and the checks they fail:
    the design's where nothing is down, else their repair (`loom.routing.repair`: minimal,
    widened if that fails a check — the function `whatif` and the watcher use)."""
    if not state.cables_down:
        return design, "design", failing(design)
    return repair_or_widen(subnet(state.fabric, 0), design, failing, engine)
