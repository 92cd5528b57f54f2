"""Restart the OpenSM of a pid file as it was started (same arguments, environment and working
directory), for subnet-manager hosts where systemd does not run OpenSM.

Sent to the host as the text of `python3 -c` by the SSH target (nothing of loom is installed
there): `python3 -c SOURCE PIDFILE`.  Why a restart and not SIGHUP: a reloaded OpenSM sends only
what differs from what it believes the ports hold, and measured on the simulated fabric it left
the high-priority VLArb tables as they were; a new OpenSM programs every table (docs/apply.md §3).
Prints the new pid; the caller waits for the new OpenSM's sweep in its log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

STOP_TIMEOUT = 10


def main(pidfile: str) -> int:
    pid = int(Path(pidfile).read_text().split()[0])
    proc = Path(f"/proc/{pid}")
    argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
    env = dict(e.decode().split("=", 1) for e in (proc / "environ").read_bytes().split(b"\0") if b"=" in e)
    cwd = os.readlink(proc / "cwd")
    if not argv or os.path.basename(argv[0]) != "opensm":
        print(f"{pidfile} names pid {pid}, which is not opensm ({argv[:1]})", file=sys.stderr)
        return 2
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT
    while proc.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if proc.exists():
        os.kill(pid, signal.SIGKILL)
    new = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, start_new_session=True)
    tmp = f"{pidfile}.loom-tmp.{os.getpid()}"
    Path(tmp).write_text(f"{new.pid}\n")
    os.replace(tmp, pidfile)
    print(new.pid)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1]))
    except (OSError, ValueError, IndexError) as exc:
        print(f"cannot restart the OpenSM of {sys.argv[1:2]}: {exc}", file=sys.stderr)
        sys.exit(1)
