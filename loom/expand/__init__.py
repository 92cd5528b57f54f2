"""Stage 2: model → port-level fabric (switches, nodes, NIC ports, cables, identities, racks)."""

from .build import expand


def load_fabric(path):
    """Load, validate and expand a model file; every problem names the file and line."""
    from loom.model import ModelError, load_model, locate

    model = load_model(path)
    try:
        return expand(model)
    except ModelError as exc:
        raise locate(path, exc) from None
from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric, HostPort, Node, Switch

__all__ = ["CABLE_KINDS", "HOST", "SWITCH", "Cables", "Fabric", "HostPort", "Node", "Switch", "expand", "load_fabric"]
