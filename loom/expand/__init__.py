"""Stage 2: model → port-level fabric (switches, nodes, NIC ports, cables, identities, racks)."""

from .build import expand
from .lockfile import Lock, lock_path, read_lock, with_as_built

_NEXT_TO_MODEL = object()


def load_fabric(path, lock=_NEXT_TO_MODEL, as_built: bool = True):
    """Load, validate and expand a model file; every problem names the file and line.

    The lock file next to the model (`lock_path`) is read first unless `lock` is given (a `Lock`,
    or None to place everything by policy).  The lock's `as_built` entries (what NetBox says is
    not on the floor) join the zones' `missing_links` / `missing_switches` unless `as_built` is
    False (the design as drawn: what `loom netbox plan` puts in NetBox)."""
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
from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric, HostPort, Node, Switch

__all__ = ["CABLE_KINDS", "HOST", "SWITCH", "Cables", "Fabric", "HostPort", "Node", "Switch", "Lock", "expand",
           "load_fabric", "lock_path", "read_lock"]
