"""Slurm hostlist expressions: `z0-c[000-014,020]` ⇄ the names it stands for.

Slurm reads node and switch lists in this form (topology.conf, topology.yaml, slurm.conf); a
name splits into a prefix and a trailing number, and runs of consecutive numbers of the same
prefix and width fold into `prefix[a-b,...]`, zero padding kept.  `expand` is the inverse,
strict about what it accepts (it reads files other tools wrote).
"""

from __future__ import annotations

import re
from itertools import groupby

_NAME = re.compile(r"^(.*?)(\d+)$")
_TERM = re.compile(r"([^,\[\]]+)(?:\[([0-9,\-]+)\])?([^,\[\]]*)")
MAX_EXPANSION = 1_000_000  # names
MAX_CHARS = 64_000_000  # characters of all names together: long prefixes count too
MAX_DIGITS = 18  # a range bound wider than this is no host number (and would not fit an int64)


class HostlistError(ValueError):
    pass


def compress(names: list[str]) -> str:
    """Fold names into one expression; order: by prefix as first seen, then by number.  Numbers
    of a prefix that none writes with a leading zero fold regardless of length (`leaf[8-12]`)."""
    split: list[tuple[str, str]] = []
    plain: list[str] = []
    for n in names:
        m = _NAME.match(n)
        if m is None:
            plain.append(n)
        else:
            split.append((m.group(1), m.group(2)))
    padded = {p for p, d in split if len(d) > 1 and d[0] == "0"}
    keyed: dict[tuple[str, int], list[int]] = {}
    for prefix, digits in split:
        keyed.setdefault((prefix, len(digits) if prefix in padded else 0), []).append(int(digits))
    parts = list(plain)
    for (prefix, width), nums in keyed.items():
        nums = sorted(set(nums))
        if len(nums) == 1:
            parts.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        runs = []
        for _, run in groupby(enumerate(nums), key=lambda iv: iv[1] - iv[0]):
            r = [v for _, v in run]
            runs.append(f"{r[0]:0{width}d}" + (f"-{r[-1]:0{width}d}" if len(r) > 1 else ""))
        parts.append(f"{prefix}[{','.join(runs)}]")
    return ",".join(parts)


def _shown(expr: str) -> str:
    return repr(expr if len(expr) <= 60 else expr[:57] + "...")


def expand(expr: str, limit: int = MAX_EXPANSION) -> list[str]:
    """The names of an expression (`a[1-3],b7`); HostlistError on anything malformed, or on
    one that stands for more than `limit` names or MAX_CHARS characters."""
    out: list[str] = []
    chars = 0
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TERM.match(expr, pos)
        if m is None or m.end() == pos:
            raise HostlistError(f"cannot read the hostlist {_shown(expr)} at character {pos + 1}")
        prefix, ranges, suffix = m.groups()
        if ranges is None:
            out.append(prefix + suffix)
            chars += len(prefix) + len(suffix)
        else:
            for part in ranges.split(","):
                lo, _, hi = part.partition("-")
                if not lo.isdigit() or (hi and not hi.isdigit()) or max(len(lo), len(hi)) > MAX_DIGITS:
                    raise HostlistError(f"bad range {_shown(part)} in the hostlist {_shown(expr)} (numbers of at most "
                                        f"{MAX_DIGITS} digits)")
                a, b = int(lo), int(hi or lo)
                width = len(prefix) + len(suffix) + max(len(lo), len(str(b)))
                if b < a or len(out) + b - a >= limit or chars + (b - a + 1) * width > MAX_CHARS:
                    raise HostlistError(f"bad range {_shown(part)} in the hostlist {_shown(expr)} (at most "
                                        f"{limit:,} names, {MAX_CHARS // 1_000_000} MB of names)")
                out += [f"{prefix}{i:0{len(lo)}d}{suffix}" for i in range(a, b + 1)]
                chars += (b - a + 1) * width
        pos = m.end()
        if pos < len(expr):
            if expr[pos] != ",":
                raise HostlistError(f"cannot read the hostlist {_shown(expr)} at character {pos + 1}")
            pos += 1
    return out
