"""The routing engines by name, as OpenSM lists its routing modules: one line per engine.  A new
engine is a module beside the others (a class with `name`, `route` and `repair`, see
`base.Engine`) and one entry here; nothing else imports an engine by its module."""

from __future__ import annotations

from .auto import AutoEngine
from .base import Engine, RoutingError
from .bigraph import BiGraphEngine
from .fattree import FatTreeEngine

ENGINES: dict[str, type] = {e.name: e for e in (FatTreeEngine, BiGraphEngine, AutoEngine)}


def get_engine(name: str) -> Engine:
    if name not in ENGINES:
        raise RoutingError(f"unknown routing engine `{name}`; known: {', '.join(sorted(ENGINES))}")
    return ENGINES[name]()
