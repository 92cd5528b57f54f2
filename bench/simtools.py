"""What the benches that run the simulated fabric share."""

from __future__ import annotations

from rich.console import Console

from loom.fabrics.infiniband.sim import tools_missing


def sim_console(width: int) -> Console | None:
    """A console for the bench's tables, or None (said why) when ibsim/OpenSM are not installed."""
    console = Console(width=width)
    if tools_missing():
        console.print(f"missing: {tools_missing()} — run `make setup`")
        return None
    return console
