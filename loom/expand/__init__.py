"""Stage 2: model → port-level fabric (switches, nodes, NIC ports, cables, identities, racks)."""

from .build import expand
from .fabric import CABLE_KINDS, HOST, SWITCH, Cables, Fabric, HostPort, Node, Switch

__all__ = ["CABLE_KINDS", "HOST", "SWITCH", "Cables", "Fabric", "HostPort", "Node", "Switch", "expand"]
