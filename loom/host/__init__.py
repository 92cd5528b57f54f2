"""Stage 5: host settings derived from node types (PCIe/NUMA layout) and the fabric's QoS."""

from .derive import HostIntent, Pair, derive

__all__ = ["HostIntent", "Pair", "derive"]
