"""The routing engines by name, as OpenSM lists its routing modules: one line per engine.  A new
engine is a module beside the others (a class with `name`, `route` and `repair`, see
`base.Engine`) and one entry here; nothing else imports an engine by its module.

An engine's module is imported when it is asked for: the engines pull scipy and networkx
(~0.7 s), which a command that only reads tables or renders Ethernet configs never needs."""

from __future__ import annotations

from importlib import import_module

from .base import Engine, RoutingError

#: name → (module beside this one, class)
ENGINES: dict[str, tuple[str, str]] = {"fattree": ("fattree", "FatTreeEngine"), "bigraph": ("bigraph", "BiGraphEngine"),
                                       "auto": ("auto", "AutoEngine")}


def get_engine(name: str) -> Engine:
    if name not in ENGINES:
        raise RoutingError(f"unknown routing engine `{name}`; known: {', '.join(sorted(ENGINES))}")
    module, cls = ENGINES[name]
    return getattr(import_module(f".{module}", __package__), cls)()
