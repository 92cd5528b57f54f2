"""Processes named by more than their pid: a pid is reused by the kernel, so a process is
identified by (pid, start time since boot, program name), read from /proc.  Loom signals a
process only when all three still match what it recorded when it started it."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path


def start_time(pid: int) -> int | None:
    """Clock ticks since boot at which `pid` started (field 22 of /proc/PID/stat); None if gone
    or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] == "Z" else int(fields[19])


def program(pid: int, settle: float = 0.5) -> str | None:
    """Base name of the program `pid` runs (first word of its command line).  The command line
    reads empty for a moment while a process execs (and forever for kernel threads): wait up
    to `settle` seconds for it."""
    deadline = time.monotonic() + settle
    while True:
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0].decode(errors="replace")
        except OSError:
            return None
        if argv0 or time.monotonic() > deadline:
            return os.path.basename(argv0) or None
        time.sleep(0.01)


@dataclass(frozen=True)
class ProcessRef:
    """A process as recorded when it started: pid, start time and program name."""

    pid: int
    start: int | None
    name: str

    @classmethod
    def of(cls, pid: int, name: str) -> "ProcessRef":
        return cls(pid, start_time(pid), name)

    @classmethod
    def parse(cls, text: str, name: str) -> "ProcessRef | None":
        """From a PID file: "PID START NAME" (older files hold only the pid); None for anything
        else (a damaged file names no process: "²" is a digit to `str.isdigit`, not to `int`)."""
        parts = text.split()

        def number(word: str) -> int | None:
            return int(word) if word.isascii() and word.isdigit() and len(word) <= 20 else None

        pid = number(parts[0]) if parts else None
        if pid is None:
            return None
        return cls(pid, number(parts[1]) if len(parts) > 1 else None, parts[2] if len(parts) > 2 else name)

    def line(self) -> str:
        return f"{self.pid} {self.start} {self.name}\n"

    def alive(self) -> bool:
        """The very process recorded: same pid, same start time, same program."""
        now = start_time(self.pid)
        if now is None or (self.start is not None and now != self.start):
            return False
        return program(self.pid) == self.name
