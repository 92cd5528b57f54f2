"""Engine `auto`: the engine for the model's zone kinds, chosen per subnet (`base.engine_for`:
`bigraph` when every zone is a BiGraph, else `fattree`, which names any zone it cannot route).
The default of every command, so `loom check`, `whatif` and `watch` need no --engine."""

from __future__ import annotations

from .base import Tables, engine_for, get_engine, register
from .subnet import Subnet


@register
class AutoEngine:
    name = "auto"

    def route(self, sn: Subnet, hint: Tables | None = None) -> Tables:
        return get_engine(engine_for(sn.fabric.model)).route(sn, hint)

    def repair(self, sn: Subnet, tables: Tables) -> Tables:
        return get_engine(engine_for(sn.fabric.model)).repair(sn, tables)
