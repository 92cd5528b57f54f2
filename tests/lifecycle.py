"""Test servers as context managers: whatever `start` got running is stopped, also when `start` fails half-way."""

from __future__ import annotations


class Started:
    """Subclasses define `start()` and `stop()`; `stop()` must cope with a partial start."""

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
