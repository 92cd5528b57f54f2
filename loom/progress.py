"""Progress of long, countable work (thousands of ports read back, NetBox objects written,
config files rendered): the work says how far it is, a listener draws it.  The CLI listens with
a Rich progress bar (`loom.cli.common.phase`); library callers and tests listen to nothing and pay
nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol


class Listener(Protocol):
    def start(self, what: str, total: int) -> object:
        """A new piece of work; returns a handle for `advance` and `finish`."""

    def advance(self, handle: object, steps: int) -> None: ...

    def finish(self, handle: object) -> None: ...


_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


@contextmanager
def counting(what: str, total: int) -> Iterator[Callable[[int], None]]:
    """Work of `total` steps; yields `advance(steps)`."""
    handles = [(l, l.start(what, total)) for l in _listeners]

    def advance(steps: int = 1) -> None:
        for l, h in handles:
            l.advance(h, steps)

    try:
        yield advance
    finally:
        for l, h in handles:
            l.finish(h)
