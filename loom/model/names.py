"""One grammar for every name that reaches a file, a path, a config line or a script.

A name is letters, digits, `-`, `_` and `.`, starts with a letter or digit, holds no `..` and is
at most `MAX_NAME` characters: it cannot climb out of a directory, start a new line in
`zebra.conf`, run a command in `loom-routes.sh` or carry console markup.  The schema applies it
to every name the user writes (`Name`), the expansion to every name a pattern makes
(`name_problem`), and the writers to every path (`inside`).  Name patterns are Python format
strings restricted to plain fields (`pattern_problem`): no attribute or index access, no
conversions, a bounded width.  Environment variable names follow POSIX (`ENV_VAR`).
"""

from __future__ import annotations

import re
import string
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, Field

MAX_NAME = 63
NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
ENV_VAR_RE = r"^[A-Z_][A-Z0-9_]*$"
#: Free text printed on labels and sheets (site, cable kinds, part numbers): no control or
#: line-separator characters, no markup or shell characters, no leading formula character.
_NOT_IN_LABEL = "\x00-\x1f\x7f-\x9f\u2028\u2029<>\\[\\]{}`$\\\\"
LABEL_RE = f"^[^{_NOT_IN_LABEL}=+@-][^{_NOT_IN_LABEL}]*$"
_NAME = re.compile(NAME_RE)
#: Widest field a pattern may pad to (`{index:04d}` pads to 4).
MAX_WIDTH = 16
_SPEC = re.compile(r"^(0?)([0-9]{0,2})([dxX]?)$")


def name_problem(name: str) -> str | None:
    """Why `name` is not a safe name, or None when it is."""
    if not isinstance(name, str) or not name:
        return "a name must be non-empty text"
    if len(name) > MAX_NAME:
        return f"{len(name)} characters, more than {MAX_NAME}"
    if not _NAME.match(name):
        bad = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c in "-_."))})
        return (f"characters {', '.join(repr(c) for c in bad)} are not allowed" if bad
                else "it must start with a letter or digit")
    if ".." in name:
        return "it contains `..`"
    return None


def _no_dotdot(value: str) -> str:
    if ".." in value:
        raise ValueError("a name may not contain `..`")
    return value


Name = Annotated[str, Field(pattern=NAME_RE, max_length=48), AfterValidator(_no_dotdot)]
EnvVar = Annotated[str, Field(pattern=ENV_VAR_RE, max_length=64)]
Label = Annotated[str, Field(pattern=LABEL_RE, max_length=80)]


def pattern_problem(pattern: str, fields: dict[str, object]) -> str | None:
    """Why a name pattern cannot be used, or None.  `fields` holds a sample value per allowed
    field (None where a field may be absent, as `pod` in a two-layer zone)."""
    try:
        parsed = list(string.Formatter().parse(pattern))
    except ValueError as exc:
        return f"not a valid pattern ({exc})"
    for _, field, spec, conversion in parsed:
        if field is None:
            continue
        if field not in fields:
            return f"unknown field {{{field}}}: use only {', '.join('{' + f + '}' for f in fields)}"
        if conversion:
            return f"conversion !{conversion} is not allowed"
        m = _SPEC.match(spec or "")
        if m is None:
            return f"format spec {spec!r} is not allowed: use a width like 02d or 04d"
        if m.group(2) and int(m.group(2)) > MAX_WIDTH:
            return f"width {m.group(2)} is wider than {MAX_WIDTH}"
        if spec and fields[field] is None or spec and isinstance(fields[field], str) and m.group(3):
            return f"field {{{field}}} is not always a number: drop the format spec {spec!r}"
    return None


class PathEscape(ValueError):
    pass


def inside(root: Path, *parts: str) -> Path:
    """`root / parts...`, refused (PathEscape) unless it stays under `root` once resolved."""
    base = Path(root).resolve()
    path = base.joinpath(*parts).resolve()
    if path != base and base not in path.parents:
        raise PathEscape(f"{'/'.join(parts)!r} would be written outside {root}")
    return path


def natural(name: str) -> tuple:
    """Sort key for names with numbers in them: z0-leaf2 before z0-leaf10 (reports list switches
    in the order a technician walks them, not the order of the characters)."""
    return tuple(int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name))
