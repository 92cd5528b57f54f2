"""One lock for everything that changes a fabric (apply, sim up/down, link events, watchers).

The lock is a `flock` on `fabric.lock` in the target's state directory: the kernel releases it
when its holder dies however it dies (SIGKILL, power loss), so a dead holder never blocks and
two processes can never hold it at once — there is no read-check-unlink race to lose.
The file's content names the holder (pid + start time, uid, user, host, purpose) for messages;
a holder releases by emptying it, so content found by the next holder means the previous one
died holding the lock: the takeover is reported (`took_over`) for the caller to announce and audit.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from .audit import who
from .procs import start_time


class LockHeld(Exception):
    """Someone else holds the fabric lock; the message names them."""

    def __init__(self, holder: dict, path: Path) -> None:
        self.holder = holder
        what = holder.get("purpose") or "change"
        super().__init__(f"another {what} is running: held by {holder.get('user', '?')} (pid {holder.get('pid', '?')} "
                         f"on {holder.get('host', '?')}) since {holder.get('since', '?')}; wait for it to finish "
                         f"(lock {path})")


def _read(fd: int) -> dict:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 65536).decode(errors="replace")
        return json.loads(text) if text.strip() else {}
    except (OSError, json.JSONDecodeError):
        return {"purpose": "change", "user": "unknown"}


def _holder(fd: int, wait: float = 2.0) -> dict:
    """The holder's record; a holder that has just taken the flock writes it a moment later, so wait briefly."""
    deadline = time.monotonic() + wait
    holder = _read(fd)
    while not holder and time.monotonic() < deadline:
        time.sleep(0.02)
        holder = _read(fd)
    return holder


class FabricLock:
    """`with FabricLock(state_dir, "apply") as lock:`; raises LockHeld when taken."""

    def __init__(self, directory: Path, purpose: str) -> None:
        self.path = Path(directory) / "fabric.lock"
        self.purpose = purpose
        self.fd: int | None = None
        self.took_over: dict | None = None

    def acquire(self) -> "FabricLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise LockHeld(holder, self.path) from None
        self.took_over = _read(fd) or None
        me = {**who(), "start": start_time(os.getpid()), "purpose": self.purpose,
              "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(me).encode(), 0)
            os.fsync(fd)
        except OSError:
            pass  # a full disk: the flock holds all the same, only the holder's name is missing from messages
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)
        except OSError:
            pass  # a read-only or full disk: the flock still goes with the close
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "FabricLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def is_free(directory: Path) -> bool:
    """True when nobody holds the lock (tests and `sim status` ask)."""
    path = Path(directory) / "fabric.lock"
    if not path.exists():
        return True
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
