"""The InfiniBand targets by kind, found from a command's options or from a plan:

    sim   the embedded simulated fabric (`loom sim up`; `target.SimTarget`), the default
    ssh   the fabric's subnet-manager hosts, a master and its standbys (`ssh.SshTarget`)

A new target is a module with a class that answers `target.Target`, and one branch in each
function here."""

from __future__ import annotations

from pathlib import Path

from loom.expand import Fabric
from loom.push.errors import PlanError
from loom.push.planfile import check_state_dir

from .daemon import Daemons
from .ssh import SshTarget
from .target import SimTarget, Target

KINDS = ("sim", "ssh")


def target_named(fabric: Fabric, kind: str, inventory: Path | None = None, ssh_config: Path | None = None) -> Target:
    """The target a command's --target (and --inventory, --ssh-config) name; PlanError on a bad one."""
    if kind == "sim":
        return SimTarget.of(fabric.name)
    if kind != "ssh":
        raise PlanError(f"unknown target {kind!r}: use --target sim or --target ssh")
    return SshTarget.from_inventory(fabric, inventory or Path("inventory") / fabric.name,
                                    str(ssh_config.resolve()) if ssh_config else None)


def target_of_plan(plan: dict, where: str = "the plan") -> Target:
    """The target a plan was made for (plans without `target` are for the simulated fabric)."""
    spec = plan.get("target") or {"kind": "sim"}
    kind = spec.get("kind") if isinstance(spec, dict) else None
    if kind == "sim":
        return SimTarget(Daemons(check_state_dir(plan, where)))
    if kind == "ssh":
        return SshTarget.from_spec(plan.get("fabric"), spec, check_state_dir(plan, where, marker="target.json"))
    raise PlanError(f"{where}: unknown target {kind!r} (known: sim, ssh); run `loom plan` again")
