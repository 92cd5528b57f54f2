"""How much a change of forwarding tables changes, counted one way by every command that says it:
`loom plan` (and `show`), `loom whatif`, the watcher's events and `bench/failures.py`.

Counted on the switches in service after the change — those the subnet manager reaches
(`UpDown.live`): a switch that is down or cut off cannot be programmed, so its row is no
change anyone makes.  Per entry (switch, destination LID):
- *moved*: it forwarded the destination before and forwards it through another port now;
- *added*: it forwarded nothing before (a switch or a destination back in service, or new);
- *removed*: it forwards nothing now (the destination is gone or cut off).
A destination *moves* when one of its entries moved; it is *added* when its entries were only
added (a switch back in service takes a whole table: that is not traffic moving).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import NO_ROUTE, Tables
from .updown import UpDown


@dataclass(frozen=True)
class TableChanges:
    changed: np.ndarray  # [switch, LID] the entry changes (switches in service only)
    moved: np.ndarray  # [switch, LID] it changes port
    added: np.ndarray  # [switch, LID] it routed nothing before
    gone: np.ndarray  # [LID] some switch forwarded it before, no switch in service does now

    @property
    def entries(self) -> int:
        return int(self.changed.sum())

    @property
    def switches(self) -> int:
        return int(self.changed.any(axis=1).sum())

    @property
    def destinations_moved(self) -> np.ndarray:
        return np.flatnonzero(self.moved.any(axis=0))

    @property
    def destinations_added(self) -> np.ndarray:
        return np.flatnonzero(self.added.any(axis=0) & ~self.moved.any(axis=0))

    @property
    def destinations_removed(self) -> np.ndarray:
        """Destinations no longer forwarded anywhere: gone from the model, or cut off."""
        return np.flatnonzero(self.gone)

    def per_switch(self) -> np.ndarray:
        return self.changed.sum(axis=1)


def table_changes(before: Tables, after: Tables) -> TableChanges:
    """The changes from `before` to `after` (tables of the same switches and LIDs)."""
    live = UpDown.of(after.subnet).live
    changed = (before.lft != after.lft) & live[:, None]
    was, now = before.lft != NO_ROUTE, after.lft != NO_ROUTE
    gone = (changed & was & ~now).any(axis=0) & ~(now & live[:, None]).any(axis=0)
    return TableChanges(changed, changed & was & now, changed & ~was, gone)
