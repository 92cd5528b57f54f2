"""Stage 2: model → port-level fabric (switches, nodes, NIC ports, cables, identities, racks)."""

from .build import expand
from .lockfile import Lock, lock_path, read_lock

_NEXT_TO_MODEL = object()


def load_fabric(path, lock=_NEXT_TO_MODEL):
    """Load, validate and expand a model file; every problem names the file and line.

    The lock file next to the model (`lock_path`) is read first unless `lock` is given (a `Lock`,
    or None to place everything by policy)."""
    from loom.model import ModelError, load_model, locate

    model = load_model(path)
    lock_file = str(lock_path(path))
    if lock is _NEXT_TO_MODEL:
        lock = read_lock(lock_path(path))
    try:
        return expand(model, lock, lock_file)
    except ModelError as exc:
        raise (exc if exc.file else locate(path, exc)) from None
from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric, HostPort, Node, Switch

__all__ = ["CABLE_KINDS", "HOST", "SWITCH", "Cables", "Fabric", "HostPort", "Node", "Switch", "Lock", "expand",
           "load_fabric", "lock_path", "read_lock"]
