"""Stage 3: routing engines behind one interface (fabric subnet in, forwarding tables out)."""

from .base import ENGINES, NO_ROUTE, Engine, RoutingError, Tables, get_engine
from .subnet import Subnet, subnet, subnets


def route(fabric, engine: str = "fattree") -> list[Tables]:
    """Route every plane (InfiniBand subnet) of the fabric with the named engine."""
    eng = get_engine(engine)
    return [eng.route(sn) for sn in subnets(fabric)]


__all__ = ["ENGINES", "NO_ROUTE", "Engine", "RoutingError", "Subnet", "Tables", "get_engine", "route", "subnet", "subnets"]
