"""Where Loom keeps a fabric's local state — the fabric lock, the apply journal, the audit log,
what was applied last and the last plan — per target kind, whatever the technology:

    sim   $LOOM_STATE_DIR/<fabric> (default .loom/sim/<fabric>): the simulation's own files too
    ssh   $LOOM_SSH_STATE_DIR/<fabric> (default .loom/ssh/<fabric>)
"""

from __future__ import annotations

import os
from pathlib import Path


def sim_state_dir(fabric_name: str) -> Path:
    root = Path(os.environ.get("LOOM_STATE_DIR", ".loom/sim"))
    return (root / fabric_name).resolve()


def ssh_state_dir(fabric_name: str) -> Path:
    """Local state of an SSH target: lock, journal, audit, last applied (`$LOOM_SSH_STATE_DIR`)."""
    return (Path(os.environ.get("LOOM_SSH_STATE_DIR", ".loom/ssh")) / fabric_name).resolve()


def state_dir(fabric_name: str, target_kind: str) -> Path:
    """The state directory of a fabric on a target kind (`sim` or `ssh`)."""
    return ssh_state_dir(fabric_name) if target_kind == "ssh" else sim_state_dir(fabric_name)


def no_state(directory: Path, target_kind: str = "sim") -> str:
    """'' if the state directory exists; else where the command looked and how to look elsewhere.
    The default directory is under the working directory, so a command run from another one finds
    no fabric there; without this it said only that nothing runs, or nothing is down."""
    if directory.exists():
        return ""
    env = "LOOM_SSH_STATE_DIR" if target_kind == "ssh" else "LOOM_STATE_DIR"
    return (f"no state in {directory}, which is under .loom/ of the working directory unless {env} says otherwise: "
            f"run loom from the project directory, or set {env}")


def sim_not_running(fabric_name: str, directory: Path, model: Path) -> str:
    """What a command that needs the running simulation says without it (`loom sim link`)."""
    where = no_state(directory)
    return (f"the simulated fabric of {fabric_name} is not running" + (f" ({where})" if where else "")
            + f"; `loom sim up {model}` starts it")
