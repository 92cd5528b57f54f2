"""The Rich progress display of a CLI phase: a spinner for the phase, a bar with counts and
time left for each countable piece of work inside it (`loom.progress`).  Transient: on a
terminal it is gone when the phase ends; in a log (no terminal) it prints nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from loom.progress import listening


class _Count(MofNCompleteColumn):
    """done/total for counted work; nothing for the phase itself (its length is unknown)."""

    def render(self, task) -> Text:
        return Text("") if task.total is None else super().render(task)


class _Left(TimeRemainingColumn):
    def render(self, task) -> Text:
        return Text("") if task.total is None else super().render(task)


@contextmanager
def bars(console: Console, phase: str | None = None) -> Iterator[None]:
    """A live display while the block runs: the phase's spinner (if named) and a bar for each
    piece of work reported through `loom.progress.counting`.  Not on a log: a stopped live display
    leaves an empty line there."""
    if not console.is_terminal:
        yield
        return
    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), _Count(), TimeElapsedColumn(),
                        _Left(), console=console, transient=True)
    with progress, listening(RichListener(progress)):
        if phase:
            progress.add_task(f"{phase} ...", total=None)
        yield


class RichListener:
    """`loom.progress.Listener` drawing each piece of work as a task of `progress`."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def start(self, what: str, total: int) -> object:
        return self.progress.add_task(f"  {what}", total=total)

    def advance(self, handle: object, steps: int) -> None:
        self.progress.advance(handle, steps)

    def finish(self, handle: object) -> None:
        self.progress.remove_task(handle)
