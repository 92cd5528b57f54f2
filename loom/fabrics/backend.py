"""What every fabric technology provides, behind one protocol: the commands ask the backend the
model picked (`loom.fabrics.backend_for`) and never test the technology themselves.

    sim      sim_up, sim_down, sim_status, sim_dead,        the embedded simulated fabric
             link_event
    route    route_files, qos, check_extra, print_check     what `loom route` / `check` add
    plan     target, prepare_plan, make_plan, has_changes,  Terraform-style, the fabric as state
             print_plan, check_shape, review, plan_entries,
             entry_lines, settle
    apply    apply                                          journalled, verified, restored
    other    watcher, require_discovery, discover_text,   what only one technology has: the
             opensm_recompute, configs_allowed               other raises `Unsupported`

Targets (sim, ssh, later others) sit behind their own small interface inside each backend
(`targets.py`).  A backend prints through the `Ui` the command hands it, so what the user sees
is the same whichever command gets there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Protocol

from rich.console import Console


class Unsupported(Exception):
    """The fabric's technology has no such operation (a usage error: exit `code`)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


class Ui(Protocol):
    """How a backend talks to the user: two consoles, a progress line, a timed phase."""

    out: Console
    err: Console

    def progress(self, message: str) -> None:
        """One line of progress on stderr."""

    def phase(self, name: str, fn: Callable, *args) -> Any:
        """Run `fn(*args)` with a spinner (and bars), then print how long it took."""


class Backend(Protocol):
    technology: str

    # ---------------------------------------------------------------- the simulated fabric
    def sim_up(self, model: Path, fabric, ui: Ui) -> None: ...
    def sim_down(self, fabric, force: bool, ui: Ui) -> None: ...
    def sim_status(self, fabric, as_json: bool, ui: Ui) -> bool: ...

    def sim_dead(self, fabric) -> list[str] | None:
        """The simulation's daemons that were started and no longer run (as `sim_status` judges
        them), [] if all run, None if it was not started (or was stopped): `loom status` names
        the dead ones, which the commands that only read state files would not notice."""

    def link_event(self, model: Path, fabric, cables: list[int], up: bool, ui: Ui) -> list[str]: ...

    # ---------------------------------------------------------------- route and check
    def route_files(self, fabric, tables) -> dict[str, str]: ...
    def qos(self, fabric): ...
    def check_extra(self, fabric) -> dict: ...
    def print_check(self, ui: Ui, name: str, planes: list[dict], cabling: dict) -> None: ...
    def drained_links(self, fabric, target_kind: str) -> dict[str, list[str]]: ...

    # ---------------------------------------------------------------- plan and apply
    plan_label: str
    routing_resource: bool  # does Terraform's loom_routing resource manage it (`loom tf routing`)

    def target(self, fabric, kind: str, inventory: Path | None, ssh_config: Path | None): ...
    def prepare_plan(self, model: Path, fabric, ui: Ui, target): ...
    def make_plan(self, model: Path, fabric, target) -> dict: ...
    def has_changes(self, plan: dict) -> bool: ...
    def print_plan(self, ui: Ui, plan: dict, saved: Path) -> None: ...
    def check_shape(self, plan: dict, path: Path) -> None: ...
    def review(self, plan: dict) -> list[str]: ...
    no_entries: str

    def plan_entries(self, plan: dict) -> list[dict]: ...
    def entry_lines(self, entries: list[dict]) -> list[str]: ...
    def settle(self, target, progress: Callable[[str], None]) -> str | None: ...
    def apply(self, plan: dict, plan_path: Path, progress: Callable[[str], None], keep_live: bool,
              from_edited: bool = False, timeout: float | None = None): ...

    # ---------------------------------------------------------------- one technology only
    def watcher(self, model: Path, fabric, target, hold_down: float, log: Callable, health_interval: float | None = None): ...
    def serve_metrics(self, watcher, address: str): ...
    def link_health(self, model: Path, fabric, target, interval: float) -> tuple[list, float]: ...
    def require_discovery(self, model: Path, fabric) -> None: ...
    def discover_text(self, fabric, target) -> tuple[str, str]: ...
    def opensm_recompute(self, fabric, failure, design, engines: list[str], ui: Ui) -> dict: ...
    def configs_allowed(self, model: Path, fabric) -> None: ...
