"""The push stage per fabric technology: one backend per technology behind one protocol
(`backend.Backend`), picked here once, from the model or from a plan.  Adding a technology is a
package beside `infiniband/` and `ethernet/` and one line in `BACKENDS`."""

from __future__ import annotations

from importlib import import_module

from .backend import Backend, Ui, Unsupported

#: technology → the module whose `BACKEND` serves it (imported when first asked for)
BACKENDS = {"infiniband": "loom.fabrics.infiniband.backend", "ethernet": "loom.fabrics.ethernet.backend"}


def backend_named(technology: str) -> Backend:
    if not isinstance(technology, str) or technology not in BACKENDS:
        raise Unsupported(f"no backend for technology {technology!r} (known: {', '.join(BACKENDS)})", 1)
    return import_module(BACKENDS[technology]).BACKEND


def backend_for(fabric) -> Backend:
    """The backend of a model's fabric."""
    return backend_named(fabric.model.technology)


def backend_of_plan(plan: dict) -> Backend:
    """The backend of a saved plan (plans without `technology` are InfiniBand's, as before 0.2)."""
    return backend_named(plan.get("technology") or "infiniband")


__all__ = ["BACKENDS", "Backend", "Ui", "Unsupported", "backend_for", "backend_named", "backend_of_plan"]
