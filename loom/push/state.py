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
