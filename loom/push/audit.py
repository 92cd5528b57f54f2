"""The audit log of everything that changes (or was refused the right to change) a fabric:
one JSON object a line in `audit.log` of the target's state directory.

Each record names the real user (uid and the account name of that uid, never `$LOGNAME`,
which anyone can set), the host and pid, the time, and what the caller adds (event, plan and
model digests, outcome).  Writing is best effort: a full disk must not turn a finished apply
into a failed one, so `record` returns False instead of raising."""

from __future__ import annotations

import json
import os
import pwd
import socket
import time
from pathlib import Path


def who() -> dict:
    uid = os.getuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = f"uid-{uid}"
    return {"uid": uid, "user": name, "host": socket.gethostname(), "pid": os.getpid()}


def record(directory: Path, event: str, **fields) -> bool:
    entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "event": event, **who(), **fields}
    try:
        with open(Path(directory) / "audit.log", "a") as fh:
            fh.write(json.dumps(entry, sort_keys=True, default=str) + "\n")
        return True
    except OSError:
        return False


def read(directory: Path) -> list[dict]:
    path = Path(directory) / "audit.log"
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []
