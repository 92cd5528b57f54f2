"""Errors about a model, each naming the file, the YAML path and line, and the fix.

A user who mistypes a model must never see a traceback: every stage raises `ModelError`
holding one or more `Problem`s, and the CLI prints them and exits 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    path: str  # YAML path, e.g. "zones[0].leaves"; "" for the whole file
    message: str  # what is wrong
    fix: str  # what to do about it
    line: int | None = None  # 1-based line in the file, when known
    loc: tuple = ()  # YAML location, for stages after loading that have no line numbers

    def render(self, file: str) -> str:
        where = f"{file}:{self.line}" if self.line else file
        at = f" {self.path}:" if self.path else ""
        return f"{where}:{at} {self.message}\n  fix: {self.fix}"


@dataclass
class ModelError(Exception):
    file: str
    problems: list[Problem] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(p.render(self.file) for p in self.problems)
