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
MAX_EXPANSION = 1_000_000


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


def expand(expr: str) -> list[str]:
    """The names of an expression (`a[1-3],b7`); HostlistError on anything malformed."""
    out: list[str] = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = _TERM.match(expr, pos)
        if m is None or m.end() == pos:
            raise HostlistError(f"cannot read the hostlist {expr!r} at character {pos + 1}")
        prefix, ranges, suffix = m.groups()
        if ranges is None:
            out.append(prefix + suffix)
        else:
            for part in ranges.split(","):
                lo, _, hi = part.partition("-")
                if not lo.isdigit() or (hi and not hi.isdigit()):
                    raise HostlistError(f"bad range {part!r} in the hostlist {expr!r}")
                a, b = int(lo), int(hi or lo)
                if b < a or len(out) + b - a >= MAX_EXPANSION:
                    raise HostlistError(f"bad range {part!r} in the hostlist {expr!r}")
                out += [f"{prefix}{i:0{len(lo)}d}{suffix}" for i in range(a, b + 1)]
        pos = m.end()
        if pos < len(expr):
            if expr[pos] != ",":
                raise HostlistError(f"cannot read the hostlist {expr!r} at character {pos + 1}")
            pos += 1
    return out
