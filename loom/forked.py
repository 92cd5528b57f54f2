"""Run part of a large pass in a forked child while the parent does the rest.

Routing and checking a large subnet are passes over read-only [switch × LID] arrays that split
cleanly: the balance check beside reachability, deadlock and eBB; half the LIDs of `carried`;
half the switches of the engine's legality repair.  fork() hands the child those arrays
copy-on-write, so nothing is copied or pickled on the way in and only the result comes back
through a pipe: the second core does half the work (the LID-limit fabric: 150 million cells).

Used only where it pays and is safe: subnets of at least FORK_CELLS cells (below that the fork
costs more than it saves), on the main thread (the child resets SIGINT/SIGTERM to their
defaults so an apply's restore handler never runs in it, and only the main thread may), where
os.fork exists and works, and not inside a child (children are the parent's alone: on two cores,
a child's own forks would only queue); otherwise the
work runs inline and `result()` just returns it.  The child touches no console, log or file of
the parent (descriptors it inherits are only held until it exits, seconds later) and leaves
with os._exit, so no atexit handler of the parent (a temporary directory's removal) runs twice.

A child may also take one value the parent hands over after the fork (`takes_input`): the
balance check starts on its own figures while the path counts it needs later are made in
another child, so no core waits on another from the start (`loom.checks.check_tables`).
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
from typing import Callable, Generic, TypeVar

T = TypeVar("T")

#: [switch × LID] cells from which a pass is worth a process of its own
FORK_CELLS = 1 << 24
_in_child = False  # set in a forked child: it runs everything inline


class Forked(Generic[T]):
    """`fn()` running in a child process (or already run inline); `result()` waits for it.

    With `takes_input`, `fn(receive)` is called instead: `receive()` returns the value the parent
    hands over with `send()` (in a child it waits for it; run inline, `fn` is only called by
    `result()`, after the parent's `send()`)."""

    def __init__(self, fn: Callable[..., T], cells: int, takes_input: bool = False) -> None:
        global _in_child
        self.pid, self._fn, self._input, self._feed = 0, None, None, None
        if cells < FORK_CELLS or _in_child or not hasattr(os, "fork") or threading.current_thread() is not threading.main_thread():
            self._inline(fn, takes_input)
            return
        read, write = os.pipe()
        feed_read, feed_write = os.pipe() if takes_input else (-1, -1)
        try:
            self.pid = os.fork()
        except OSError:  # no memory or process slot for a child: do it here
            for fd in (read, write, feed_read, feed_write):
                if fd >= 0:
                    os.close(fd)
            self._inline(fn, takes_input)
            return
        if self.pid == 0:  # the child
            _in_child = True
            os.close(read)
            if takes_input:
                os.close(feed_write)  # else its own copy would keep the feed open: no end of input
                fn = self._reader(fn, feed_read)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            try:
                data = pickle.dumps((True, fn()))
            except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent
                try:
                    data = pickle.dumps((False, exc))
                except Exception:  # noqa: BLE001 - an exception that does not pickle
                    data = pickle.dumps((False, RuntimeError(repr(exc))))
            with os.fdopen(write, "wb") as out:
                out.write(data)
            os._exit(0)
        os.close(write)
        self._pipe = os.fdopen(read, "rb")
        if takes_input:
            os.close(feed_read)
            self._feed = os.fdopen(feed_write, "wb")

    def _inline(self, fn: Callable[..., T], takes_input: bool) -> None:
        if takes_input:
            self._fn = lambda: fn(lambda: self._input)  # waits for send(): called by result()
        else:
            self._value = fn()

    @staticmethod
    def _reader(fn: Callable[..., T], fd: int) -> Callable[[], T]:
        """`fn` with a `receive` that returns the parent's value from `fd`.  A thread drains the
        pipe from the start: the parent's `send()` writes more than a pipe holds and must not
        wait until `fn` asks (that would put the cores back in series)."""
        got: list = []
        drain = threading.Thread(target=lambda: got.append(os.fdopen(fd, "rb").read()), daemon=True)
        drain.start()

        def receive():
            drain.join()
            if not got or not got[0]:
                raise RuntimeError("the parent of a forked check stopped before handing over its input")
            return pickle.loads(got[0])

        return lambda: fn(receive)

    def send(self, value) -> None:
        """Hand `value` to the child's `receive()` (only with `takes_input`; once)."""
        if self._feed is None:
            self._input = value
            return
        feed, self._feed = self._feed, None
        try:
            with feed:
                feed.write(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        except BrokenPipeError:
            pass  # the child stopped early (failed): result() raises its error

    def result(self) -> T:
        """The child's value (or its exception, raised here)."""
        if self._fn is not None:
            fn, self._fn = self._fn, None
            self._value = fn()
        if not self.pid:
            return self._value
        data = self._pipe.read()
        self._pipe.close()
        os.waitpid(self.pid, 0)
        self.pid = 0
        if not data:
            raise RuntimeError("a forked check died without a result (out of memory?)")
        ok, value = pickle.loads(data)
        if not ok:
            raise value
        return value

    def close(self) -> None:
        """Stop and reap the child if it is still running (the parent failed first)."""
        if not self.pid:
            return
        pid, self.pid = self.pid, 0
        self._pipe.close()
        if self._feed is not None:
            self._feed.close()
            self._feed = None
        try:
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        except ChildProcessError:
            pass
        self._value = None
