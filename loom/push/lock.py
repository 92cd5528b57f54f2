"""One lock for everything that changes a fabric (apply, sim up/down, link events, watchers).

The lock is the file `fabric.lock` in the target's state directory, held by an exclusive
`flock` on it.  A taker writes its record (pid + start time, uid, user, host, command, purpose)
into a private file first, takes the flock on that file, then links it into place with
`link(2)`, which fails if `fabric.lock` exists.  So the file is never at its path without a
complete record and a live flock: a loser always reads who holds it, under any load, and two
processes can never hold it at once.  A holder releases by unlinking the file, then closing it.

A holder that dies however it dies (SIGKILL, power loss) loses its flock with its process; its
file stays behind, unlocked.  The next taker flocks that file, checks the path still names it,
and renames its own file over it; the dead holder's record is reported (`took_over`) for the
caller to announce and audit.  A file whose flock is held but whose recorded process (pid + start time
on this host) is gone is being replaced by another taker: wait for that, then try again.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import time
from pathlib import Path

from .audit import who
from .procs import start_time

LOCK_NAME = "fabric.lock"


class LockHeld(Exception):
    """Someone else holds the fabric lock; the message names them."""

    def __init__(self, holder: dict, path: Path) -> None:
        self.holder = holder
        what = holder.get("purpose") or "change"
        command = f", running `{holder['command']}`" if holder.get("command") else ""
        super().__init__(f"another {what} is running: held by {holder.get('user', '?')} (pid {holder.get('pid', '?')} "
                         f"on {holder.get('host', '?')}{command}) since {holder.get('since', '?')}; wait for it to "
                         f"finish (lock {path})")


def _read(fd: int) -> dict:
    """The record in an open lock file; {} for an empty file (left by Loom before 0.2), a stand-in
    for an unreadable one."""
    try:
        text = os.pread(fd, 65536, 0).decode(errors="replace")
        record = json.loads(text) if text.strip() else {}
        return record if isinstance(record, dict) else {"purpose": "change", "user": "unknown"}
    except (OSError, json.JSONDecodeError):
        return {"purpose": "change", "user": "unknown"}


def _alive(record: dict) -> bool:
    """Whether the process a record names still runs: same pid and start time on this host.
    A record from another host (a shared state directory) is taken as alive: it cannot be checked."""
    if record.get("host") not in (None, socket.gethostname()):
        return True
    pid = record.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    started = start_time(pid)
    return started is not None and started == record.get("start", started)


def _dead(record: dict) -> bool:
    """Whether a record names a process on this host that no longer runs (an empty record, left
    by Loom before 0.2, names nobody: its flock alone says whether it is held)."""
    return "pid" in record and not _alive(record)


def _replaced_soon(fd: int, path: Path, record: dict, wait: float = 10.0) -> bool:
    """A dead holder's file whose flock is held: another taker is replacing it (or a process
    forked by the dead holder still has it open).  Wait for the flock or the path to move on,
    then return False to try again; after `wait` seconds report the record as the holder."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
        except BlockingIOError:
            if not _names(fd, path):
                return False
        time.sleep(0.005)
    raise LockHeld(record, path)


def _open(path: Path) -> int:
    """Another's lock file, opened to be flocked: read-write where allowed (on NFS an exclusive
    flock needs a file open for writing), else read-only."""
    try:
        return os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except PermissionError:
        return os.open(path, os.O_RDONLY | os.O_CLOEXEC)


def _names(fd: int, path: Path) -> bool:
    """Whether `path` still names the open file `fd` (not removed or replaced since it was opened)."""
    try:
        here, there = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


class FabricLock:
    """`with FabricLock(state_dir, "apply") as lock:`; raises LockHeld when taken."""

    def __init__(self, directory: Path, purpose: str) -> None:
        self.path = Path(directory) / LOCK_NAME
        self.purpose = purpose
        self.fd: int | None = None
        self.took_over: dict | None = None

    def _record(self) -> bytes:
        me = {**who(), "start": start_time(os.getpid()), "purpose": self.purpose,
              "command": " ".join([os.path.basename(sys.argv[0] or "python")] + sys.argv[1:])[:300],
              "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        return json.dumps(me).encode()

    def _private(self) -> tuple[int, Path]:
        """A file holding this taker's record, flocked, not yet at the lock's path."""
        host = socket.gethostname()
        for left in self.path.parent.glob(f".{LOCK_NAME}.{host}.*"):  # this host's takers killed before they linked
            pid = left.name.rsplit(".", 2)[-2]
            if pid.isdigit() and start_time(int(pid)) is None:
                left.unlink(missing_ok=True)
        tmp = self.path.with_name(f".{LOCK_NAME}.{host}.{os.getpid()}.{time.monotonic_ns()}")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, self._record())
            os.fsync(fd)  # the record survives a power loss, so the next taker reports the takeover
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        return fd, tmp

    def _take_from_the_dead(self, tmp: Path) -> bool:
        """Look at the file at the lock's path: raise LockHeld if its holder lives; if its holder
        died, put this taker's file in its place (one rename, made while holding the dead file's
        flock, so no other taker can do the same) and return True; False to try again."""
        try:
            fd = _open(self.path)
        except FileNotFoundError:
            return False  # released since the link failed
        try:
            record = _read(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if _names(fd, self.path) and not _dead(record):
                    raise LockHeld(record, self.path) from None
                return _replaced_soon(fd, self.path, record)
            if not _names(fd, self.path):
                return False
            os.replace(tmp, self.path)
            self.took_over = record or None
            return True
        finally:
            os.close(fd)

    def acquire(self) -> "FabricLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = self._private()
        try:
            while True:
                try:
                    os.link(tmp, self.path)
                    break
                except FileExistsError:
                    if self._take_from_the_dead(tmp):
                        break
        except BaseException:
            os.close(fd)
            raise
        finally:
            tmp.unlink(missing_ok=True)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        if _names(self.fd, self.path):
            try:
                self.path.unlink()
            except OSError:
                pass  # a read-only directory: the flock still goes with the close, the next taker removes it
        os.close(self.fd)
        self.fd = None

    def __enter__(self) -> "FabricLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def is_free(directory: Path) -> bool:
    """True when nobody holds the lock (tests and `sim status` ask)."""
    path = Path(directory) / LOCK_NAME
    try:
        fd = _open(path)
    except FileNotFoundError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return _dead(_read(fd))
    finally:
        os.close(fd)
