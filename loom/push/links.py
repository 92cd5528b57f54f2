"""Link events on the simulated fabric: a cable pulled or put back, as on the floor.

ibsim reads console commands on its stdin (`Unlink "node"[port]`, `ReLink "node"[port]`); loom
starts it with a FIFO there (`ibsim.console` in the state directory), opened read-write by
ibsim itself so the FIFO never reports end-of-file when a writer goes away.  A command is
written in one `write` (atomic below PIPE_BUF, so two writers never interleave) and its answer
is read from ibsim's log: ibsim prints `sim> ` after every command and `# <reason>` when it
refuses one.  Which cables are down is recorded in `links-down.json` (a new ibsim has them all up).

A link event is the physical world changing, not a change loom makes to the fabric: it takes no
fabric lock, so it can fall in the middle of an apply, like a real failure.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

from loom.expand import Fabric

from .files import write_atomic
from .sim import SimError

CONSOLE = "ibsim.console"
LINKS_DOWN = "links-down.json"
PROMPT = "sim> "


def open_console(directory: Path) -> int:
    """A fresh FIFO for a new ibsim's stdin, opened read-write (the caller passes it to ibsim
    and closes its own copy); every link of a new ibsim is up, so the record is cleared."""
    path = Path(directory) / CONSOLE
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path, 0o600)
    (Path(directory) / LINKS_DOWN).unlink(missing_ok=True)
    return os.open(path, os.O_RDWR | os.O_CLOEXEC)


def console(directory: Path, commands: list[str], timeout: float = 10) -> list[str]:
    """Send commands to ibsim; return its answer to each.  Raises SimError when ibsim is not
    listening or refuses a command (the answer names the reason)."""
    path, log = Path(directory) / CONSOLE, Path(directory) / "ibsim.log"
    if not (path.exists() and stat.S_ISFIFO(path.stat().st_mode)):
        raise SimError(f"ibsim in {directory} has no console (started by an older loom?); `loom sim down` and `loom sim up`")
    start = log.stat().st_size if log.exists() else 0
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # ENXIO: nobody reads the FIFO, ibsim is gone
        raise SimError(f"ibsim is not running (nothing reads {path}); `loom sim up` starts it") from None
    try:
        os.write(fd, "".join(c + "\n" for c in commands).encode())
    finally:
        os.close(fd)
    deadline = time.monotonic() + timeout
    while True:
        with open(log, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        answers = text.split(PROMPT)
        if len(answers) > len(commands):
            break
        if time.monotonic() > deadline:
            raise SimError(f"ibsim did not answer {commands[len(answers) - 1]!r} within {timeout}s; see {log}")
        time.sleep(0.02)
    answers = [a.strip() for a in answers[:len(commands)]]
    refused = [f"{c}: {a.lstrip('# ')}" for c, a in zip(commands, answers) if a.startswith("#")]
    if refused:
        raise SimError("ibsim refused " + "; ".join(refused))
    return answers


def switch_end(fabric: Fabric, cable: int) -> tuple[str, int]:
    """(switch name, port) of a cable's upper end, the end ibsim's console names it by."""
    c = fabric.cables
    return fabric.switches[int(c.b_dev[cable])].name, int(c.b_port[cable])


def links_down(directory: Path) -> list[str]:
    path = Path(directory) / LINKS_DOWN
    try:
        return json.loads(path.read_text())["down"]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def set_links(directory: Path, fabric: Fabric, cables: list[int], up: bool, flip=None) -> list[str]:
    """Pull (up=False) or put back the cables; returns what changed, as cable IDs.  A cable
    already in the wanted state is left alone (the command is idempotent).  `flip(cables, up)`
    changes them in the simulation: ibsim's console by default (an Ethernet lab passes its own,
    `FrrLab.set_cables`); `links-down.json` records them either way."""
    down = links_down(directory)
    keys = [fabric.cable_id(i) for i in cables]
    todo = [(i, k) for i, k in zip(cables, keys) if (k in down) == up]
    if todo:
        (flip or (lambda cs, u: _ibsim_links(directory, fabric, cs, u)))([i for i, _ in todo], up)
    changed = [k for _, k in todo]
    now = sorted(set(down) - set(changed)) if up else sorted(set(down) | set(changed))
    write_atomic(Path(directory) / LINKS_DOWN, json.dumps({"down": now}, indent=1) + "\n")
    return changed


def _ibsim_links(directory: Path, fabric: Fabric, cables: list[int], up: bool) -> None:
    verb = "ReLink" if up else "Unlink"
    console(directory, [f'{verb} "{name}"[{port}]' for name, port in (switch_end(fabric, i) for i in cables)])

