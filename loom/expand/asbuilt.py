"""The fabric as it stands: the design, minus what is declared down, minus what is observed down.

One picture of what is down, read by every command that routes, plans or reports the fabric:
- **design**: the model as drawn — every switch and link of every zone, with the lock file's
  identities (a `missing_*` entry takes nothing out of the design: it is a state, not a shape);
- **declared** (reviewed, in git): the zones' `missing_links` / `missing_switches` in the model,
  the lock file's `as_built` (what NetBox says is not on the floor) and `down` (what an operator
  marked with `loom mark down`, with a reason and the date it should be back);
- **observed** (runtime, from the fabric itself): the design cables a discovery of the running
  fabric does not find — the caller's part (`loom.fabrics`), given here as cable IDs.

Everything is named as the cabling sheet names it (a switch, or a cable by its switch port,
`z0-leaf3/21`), so one entry reads the same in the lock, in `loom status` and in a plan; cables
are rows of the *design* fabric, so tables for the design and for the fabric as it stands line
up entry for entry (the minimal repair of `whatif`, the watcher and the plan compares them).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from .failures import FailureSet, cable_ends, parse_failures, without
from .fabric import Fabric

SOURCES = ("model", "lock as_built", "loom mark", "observed")


@dataclass(frozen=True)
class Down:
    """One thing that is down and where we know it from."""

    name: str  # a switch name or a cable ID
    source: str  # one of SOURCES
    cables: tuple[int, ...]  # the design cables it takes out
    reason: str = ""
    until: str | None = None  # YYYY-MM-DD it should be back (loom mark)
    by: str = ""
    since: str = ""

    def overdue(self, today: datetime.date | None = None) -> bool:
        """Past its date: it still stands (routing never changes on a clock), but it is said."""
        today = today or datetime.date.today()
        return self.until is not None and datetime.date.fromisoformat(self.until) < today

    def as_dict(self) -> dict:
        out = {"name": self.name, "source": self.source, "cables": len(self.cables)}
        out.update({k: v for k, v in (("reason", self.reason), ("until", self.until), ("by", self.by),
                                       ("since", self.since)) if v})
        if self.until:
            out["overdue"] = self.overdue()
        return out


@dataclass(frozen=True)
class AsBuilt:
    design: Fabric
    declared: tuple[Down, ...]
    observed: tuple[Down, ...] = field(default=())

    @cached_property
    def cables_down(self) -> frozenset[int]:
        """Design cables that carry nothing now (declared or observed)."""
        return frozenset(i for d in (*self.declared, *self.observed) for i in d.cables)

    @cached_property
    def fabric(self) -> Fabric:
        """The design without the cables that are down: what routing and checks take."""
        return without(self.design, FailureSet(self.cables_down, frozenset(), ()))

    def cable_names(self, cables) -> list[str]:
        return sorted(self.design.cable_id(i) for i in cables)

    def with_observed(self, cable_ids: list[str]) -> "AsBuilt":
        """This state with `cable_ids` (design cables a discovery did not find) observed down;
        those already declared are not repeated."""
        ends = self.design.cable_index
        declared = {i for d in self.declared for i in d.cables}
        seen = tuple(Down(c, "observed", (ends[c],)) for c in sorted(set(cable_ids)) if c in ends and ends[c] not in declared)
        return AsBuilt(self.design, self.declared, seen)

    def as_dict(self) -> dict:
        return {"declared": [d.as_dict() for d in self.declared], "observed": [d.as_dict() for d in self.observed],
                "cables_down": self.cable_names(self.cables_down)}


def design_model(model):
    """The model as drawn: every zone without its `missing_*` entries."""
    zones = [z.model_copy(update={"missing_links": [], "missing_switches": []}) if hasattr(z, "missing_links") else z
             for z in model.zones]
    return model.model_copy(update={"zones": zones})


def load_as_built(path: Path | str, lock=None) -> AsBuilt:
    """The declared state of the model at `path`: design and what is declared down.  `lock`: a
    `Lock` already read, else (None) the lock file next to the model, if there is one."""
    from loom.model import ModelError, load_model, locate

    from .build import expand
    from .lockfile import lock_path, read_lock

    model = load_model(path)
    lock_file = str(lock_path(path))
    lock = read_lock(lock_path(path)) if lock is None else lock
    try:
        design = expand(design_model(model), lock, lock_file)
    except ModelError as exc:
        raise (exc if exc.file else locate(path, exc)) from None
    return AsBuilt(design, tuple(declared(design, model, lock)))


def declared(design: Fabric, model, lock) -> list[Down]:
    """Everything the model and the lock declare down, resolved to design cables."""
    out = []
    for z in model.zones:
        out += _zone_downs(design, z, "model")
    for zone, entry in (lock.as_built.items() if lock else ()):
        z = next((x for x in model.zones if x.name == zone), None)
        if z is not None and hasattr(z, "missing_links"):
            out += _zone_downs(design, z.model_copy(update={"missing_links": entry.missing_links,
                                                            "missing_switches": entry.missing_switches}), "lock as_built")
    for name, mark in (lock.down.items() if lock else ()):
        out.append(Down(name, "loom mark", tuple(sorted(_marked_cables(design, name))), mark.reason, mark.until, mark.by,
                        mark.since))
    return out


def _marked_cables(design: Fabric, name: str) -> frozenset[int]:
    try:
        return parse_failures(design, [name]).cables
    except ValueError:
        return frozenset()  # a mark of something the model no longer has: shown, takes nothing out


def idle_marks(design: Fabric, lock) -> list[str]:
    """The lock's marks (`loom mark down`) that cover no cable of `design`: a node removed from
    the model leaves its mark on the switch port it was cabled to, which would take the next
    node cabled there out of service without a word (`loom lock` names them)."""
    return [name for name in (lock.down if lock else ()) if not _marked_cables(design, name)]


def _zone_downs(design: Fabric, zone, source: str) -> list[Down]:
    """A fat-tree zone's `missing_links` (leaf, up-link) and `missing_switches` as Downs."""
    ends = cable_ends(design)
    out = []
    for m in getattr(zone, "missing_links", []):
        for s in design.switches:
            if s.zone == zone.name and s.edge == m.leaf and s.role == "leaf":
                hit = ends.get((s.name, zone.leaf_down + 1 + m.up_port))
                if hit:
                    out.append(Down(f"{s.name}/{zone.leaf_down + 1 + m.up_port}", source, (hit[0],)))
    for m in getattr(zone, "missing_switches", []):
        for s in design.switches:
            if (s.zone, s.plane, s.role, s.position) == (zone.name, m.plane, m.role, m.index):
                cables = tuple(sorted({i for (n, _), (i, _) in ends.items() if n == s.name}))
                out.append(Down(s.name, source, cables))
    return out


def without_named(design: Fabric, cable_ids) -> Fabric:
    """The design without the cables named by ID (names it does not have take nothing out)."""
    index = design.cable_index
    return without(design, FailureSet(frozenset(index[c] for c in cable_ids if c in index), frozenset(), ()))
