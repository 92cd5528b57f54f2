"""Test servers as context managers: whatever `start` got running is stopped, also when `start`
fails half-way, and also when the process is told to stop (SIGTERM, as `kill` or a CI runner's
timeout sends): Python's default for SIGTERM ends the process without unwinding, which left a
killed `make bench`'s NetBox (gunicorn, PostgreSQL, Redis) running."""

from __future__ import annotations

import signal
import threading


class Terminated(SystemExit):
    """SIGTERM, raised where the process was, so that every `with` block stops what it started."""


def _raise(signum, frame):
    raise Terminated(128 + signum)


class Started:
    """Subclasses define `start()` and `stop()`; `stop()` must cope with a partial start."""

    _handler = None  # the SIGTERM handler before this one made it raise (only the outermost does)

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            self._handler = signal.signal(signal.SIGTERM, _raise)
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.stop()
        finally:
            if self._handler is not None:
                signal.signal(signal.SIGTERM, self._handler)
                self._handler = None
