"""Stage 2: model → port-level fabric (switches, nodes, NIC ports, cables, identities, racks)."""

import time
from pathlib import Path

from .build import expand
from .lockfile import Lock, lock_path, read_lock, with_as_built

_NEXT_TO_MODEL = object()


def load_fabric(path, lock=_NEXT_TO_MODEL, as_built: bool = True, marked: bool = True):
    """Load, validate and expand a model file; every problem names the file and line.

    The lock file next to the model (`lock_path`) is read first unless `lock` is given (a `Lock`,
    or None to place everything by policy).  The lock's `as_built` entries (what NetBox says is
    not on the floor) join the zones' `missing_links` / `missing_switches`, and the cables of what
    an operator marked down (`down`, `loom mark`) are left out, unless `as_built` is False (the
    design as drawn: what `loom netbox plan` puts in NetBox) or `marked` is (the cabling on the
    floor, which a mark does not change: what the simulator cables).  `loom.expand.asbuilt` keeps
    the design and what is down apart, for the commands that compare the two.  A fabric expanded
    before from the same files by the same loom is read from `loom.expand.cache`."""
    from . import cache

    name = cache.key(Path(path), lock_path(path), as_built) if lock is _NEXT_TO_MODEL else None
    fabric = cache.get(name) if name else None
    if fabric is None:
        started = time.perf_counter()
        fabric = _expanded(path, lock, as_built)
        # kept if worth a file, and under the name of the bytes that were read (keyed again: a
        # file edited while it was read would otherwise be kept under the old bytes' name)
        if (name and time.perf_counter() - started >= cache.WORTH_SECONDS
                and cache.key(Path(path), lock_path(path), as_built) == name):
            cache.put(name, fabric)
    return without_marked(fabric) if as_built and marked else fabric


def _expanded(path, lock, as_built: bool):
    from loom.model import ModelError, load_model, locate

    model = load_model(path)
    lock_file = str(lock_path(path))
    if lock is _NEXT_TO_MODEL:
        lock = read_lock(lock_path(path))
    if as_built and lock is not None and lock.as_built:
        model = with_as_built(model, lock, lock_file)
    try:
        return expand(model, lock, lock_file)
    except ModelError as exc:
        raise (exc if exc.file else locate(path, exc)) from None


def without_marked(fabric):
    """The fabric without the cables of what `loom mark down` declared (a name the model no
    longer has takes nothing out: `loom status` shows it)."""
    from .failures import FailureSet, FailureSpecError, parse_failures, without

    cables: set[int] = set()
    for name in fabric.marked:
        try:
            cables |= parse_failures(fabric, [name]).cables
        except FailureSpecError:
            pass
    return without(fabric, FailureSet(frozenset(cables), frozenset(), ())) if cables else fabric
from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric, HostPort, Node, Switch

__all__ = ["CABLE_KINDS", "HOST", "SWITCH", "Cables", "Fabric", "HostPort", "Node", "Switch", "Lock", "expand",
           "load_fabric", "lock_path", "read_lock", "without_marked"]
