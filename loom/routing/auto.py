"""Engine `auto`: the engine for the model's zone kinds, chosen per subnet (`base.engine_for`:
`bigraph` when every zone is a BiGraph, else `fattree`, which names any zone it cannot route).
The default of every command, so `loom check`, `whatif` and `watch` need no --engine."""

from __future__ import annotations

from .base import Engine, Tables, engine_for
from .bigraph import BiGraphEngine
from .fattree import FatTreeEngine
from .subnet import Subnet

BY_KIND: dict[str, type] = {"bigraph": BiGraphEngine, "fattree": FatTreeEngine}


def _engine(sn: Subnet) -> Engine:
    return BY_KIND[engine_for(sn.fabric.model)]()


class AutoEngine:
    name = "auto"

    def route(self, sn: Subnet, hint: Tables | None = None) -> Tables:
        return _engine(sn).route(sn, hint)

    def repair(self, sn: Subnet, tables: Tables) -> Tables:
        return _engine(sn).repair(sn, tables)
