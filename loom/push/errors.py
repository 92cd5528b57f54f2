"""Errors of the push stage that end a command with a message (never a traceback)."""


class TargetError(Exception):
    """A target (the simulated fabric, an SM host over SSH) or a tool run on it failed; the
    message names which and where to look."""


class PlanError(Exception):
    """A plan or apply that must not go ahead; the message says why and what to do."""


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived during an apply; `outcome` says what was restored."""

    def __init__(self, signum: int, outcome: str = "") -> None:
        self.signum = signum
        self.outcome = outcome
        super().__init__(f"interrupted by signal {signum}")
