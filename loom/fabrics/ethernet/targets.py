"""The Ethernet targets by kind, found from a command's options or from a plan:

    sim   the live simulation (`loom sim up` on an Ethernet model; `target.FrrSimTarget`)
    ssh   the switches' FRR over SSH, the inventory's `frr_switches` (`ssh.FrrSshTarget`)"""

from __future__ import annotations

from pathlib import Path

from loom.expand import Fabric
from loom.push.errors import PlanError
from loom.push.planfile import check_state_dir

from .lab import STATE, FrrLab
from .ssh import FrrSshTarget
from .target import FrrSimTarget, FrrTarget


def target_named(fabric: Fabric, kind: str, inventory: Path | None = None, ssh_config: Path | None = None) -> FrrTarget:
    """The target a command's --target (and --inventory, --ssh-config) name; PlanError on a bad one."""
    if kind not in ("sim", "ssh"):
        raise PlanError(f"unknown target {kind!r}: use --target sim or --target ssh")
    if kind == "sim":
        return FrrSimTarget.of(fabric.name)
    return FrrSshTarget.from_inventory(fabric, inventory or Path("inventory") / fabric.name,
                                       str(ssh_config.resolve()) if ssh_config else None)


def frr_target_of_plan(plan: dict, where: str = "the plan") -> FrrTarget:
    """The target an Ethernet plan was made for."""
    spec = plan.get("target") or {}
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "sim":
        return FrrSimTarget(FrrLab(check_state_dir(plan, where, marker=STATE)))
    if kind == "ssh":
        from .ssh import FrrSshTarget

        return FrrSshTarget.from_spec(spec, check_state_dir(plan, where, marker="target.json"), where)
    raise PlanError(f"{where}: unknown target {kind!r} for an Ethernet fabric (known: sim, ssh); run `loom plan` again")
