"""The `loom` command line: one module per command group, each command a few lines that call
the pipeline (`loom.pipeline`) or the fabric's backend (`loom.fabrics`) and print.

    common      options, consoles, loading, writing, the backend of a fabric
    model       validate, show, expand, lock, configs, inventory, host
    routing     route, check, whatif, discover, diff       (sides: a change's two models)
    asbuilt     status, mark down|up: the fabric as it stands
    health      health: link health from port counters
    push        sim, watch, plan, apply, show PLAN
    cabling     cabling sheet|diff
    scheduling  slurm, ranks
    terraform   fabric, tf routing|netbox
    netbox      netbox plan|apply|import
    docs        docs

`commands.py` registers them, in the order `loom --help` lists them; `helpcache.py` answers a
`--help` it printed before without loading any of them.  Exit codes: 0 success, 1 invalid
model / failed check / refusal, 2 usage errors (Typer's).
"""

from __future__ import annotations

import os
import sys

from . import helpcache


def __getattr__(name: str):
    """`from loom.cli import app`: the Typer app, loaded on first use (`main` answers a kept
    `--help` without it)."""
    if name == "app":
        from .commands import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _ReaderMayLeave:
    """stdout that outlives its reader: once a pipe's reader has gone (`loom check M | head`),
    what is left to print goes to /dev/null and the command runs to its end, exiting with its own
    code.  Click alone would exit 1 at the first write (which a script reads as a failed check),
    and an apply would be cut short between writing and verifying."""

    def __init__(self, stream, record: bool = False) -> None:
        self._stream = stream
        self.recorded: list[str] | None = [] if record else None  # what was written, for the help cache

    def write(self, text: str) -> int:
        try:
            n = self._stream.write(text)  # Click's probe for a binary stream (b"") fails here
        except BrokenPipeError:
            self._reader_left()
            n = len(text)
        if self.recorded is not None:
            self.recorded.append(text)
        return n

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def _reader_left(self) -> None:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, self._stream.fileno())  # what is still buffered, and the flush at exit, go there
        os.close(null)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main() -> None:
    """The `loom` program (and `python -m loom.cli`)."""
    keep = helpcache.key(sys.argv[1:], getattr(sys.stdout, "encoding", None))
    stdout = sys.stdout = _ReaderMayLeave(sys.stdout, record=keep is not None)
    if keep is not None and (text := helpcache.load(keep)) is not None:
        stdout.write(text)
        return
    if keep is not None:  # a help that wrote to stderr too is not kept: only stdout is replayed
        sys.stderr = _ReaderMayLeave(sys.stderr, record=True)
    from loom.process import as_a_command

    from .commands import FROM_EXEC, app

    FROM_EXEC["on"] = True
    as_a_command()
    try:
        app()
    except SystemExit as done:
        if keep is not None and done.code in (0, None) and not sys.stderr.recorded:
            helpcache.store(keep, "".join(stdout.recorded))
        raise
