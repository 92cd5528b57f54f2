"""Stage 3: routing engines behind one interface (fabric subnet in, forwarding tables out)."""

from .base import NO_ROUTE, Engine, RoutingError, Tables, engine_for
from .engines import ENGINES, get_engine
from .subnet import Subnet, subnet, subnets


def route(fabric, engine: str = "auto", hint: list[Tables] | None = None) -> list[Tables]:
    """Route every plane (InfiniBand subnet) of the fabric with the named engine (`auto`: the
    one for the model's zone kinds, `routing/auto.py`), keeping the choices of `hint` (tables
    of the same planes in force) where balance allows."""
    eng = get_engine(engine)
    hints = hint or []
    return [eng.route(sn, hints[i] if i < len(hints) else None) for i, sn in enumerate(subnets(fabric))]


__all__ = ["ENGINES", "NO_ROUTE", "Engine", "RoutingError", "Subnet", "Tables", "engine_for", "get_engine", "route", "subnet", "subnets"]
