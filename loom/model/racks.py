"""Rack names, both ways, and the rule for a node group's `racks:`.

Racks are numbered in walking order (seq 0, 1, ...); `racks_per_row` make a row, rows are
lettered A, B, ..., Z, AA, ... and `layout.rack_name` names them (`{row}{rack:02d}`: A01, A02,
..., B01).  A group's `racks: [H01, H02]` names racks by that scheme, so each name is a place on
the floor (row H, first and second rack) whether or not the lock has reached it yet: the
placement adds the racks up to it (`loom.expand.layout`).
"""

from __future__ import annotations

import re
import string
from typing import Iterator

#: Racks a group may name, counted in walking order: a hall of 4,096 racks (256 rows of 16).
#: The placement adds the racks up to the furthest one named, so a far name costs memory.
MAX_RACKS = 4096


def row_letter(n: int) -> str:
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        out = string.ascii_uppercase[r] + out
    return out


def rack_name(layout, seq: int) -> str:
    row, pos = divmod(seq, layout.racks_per_row)
    return layout.rack_name.format(row=row_letter(row), rack=pos + 1)


def rack_seq(layout, name: str) -> int | None:
    """The walking-order number of the rack `layout.rack_name` calls `name`; None when the scheme
    makes no such name (a rack past the end of its row, a typo)."""
    pattern, fields = "", []
    for text, field, _, _ in string.Formatter().parse(layout.rack_name):
        pattern += re.escape(text)
        if field in ("row", "rack"):
            pattern += "([A-Z]+)" if field == "row" else "([0-9]+)"
            fields.append(field)
    got = re.fullmatch(pattern, name)
    if got is None or sorted(fields) != ["rack", "row"]:
        return None
    values = dict(zip(fields, got.groups()))
    row = 0
    for ch in values["row"]:
        row = row * 26 + ord(ch) - ord("A") + 1
    pos = int(values["rack"]) - 1
    if not 0 <= pos < layout.racks_per_row:
        return None
    seq = (row - 1) * layout.racks_per_row + pos
    return seq if rack_name(layout, seq) == name else None


def group_racks(model) -> Iterator[tuple[tuple, str, str]]:
    """(location, message, fix) for every `node_groups[].racks` that names no rack of the layout,
    names one twice, or has too few units below the leaf units for the group's nodes."""
    lay = model.layout
    per_rack = lay.rack_units - lay.leaf_units_per_node_rack
    example = ", ".join(rack_name(lay, s) for s in (0, 1, lay.racks_per_row))
    for i, g in enumerate(model.node_groups):
        if not g.racks:
            continue
        loc = ("node_groups", i, "racks")
        for k, name in enumerate(g.racks):
            seq = rack_seq(lay, name)
            if seq is None:
                yield (loc + (k,), f"{name!r} is not a rack of the layout (racks are named by layout.rack_name "
                       f"{lay.rack_name!r}, {lay.racks_per_row} per row)", f"name racks as the layout does, e.g. {example}")
            elif seq >= MAX_RACKS:
                yield (loc + (k,), f"rack {name} is rack {seq + 1} in walking order, beyond the {MAX_RACKS} racks a floor may have",
                       f"name a rack among the first {MAX_RACKS} ({rack_name(lay, 0)} to {rack_name(lay, MAX_RACKS - 1)})")
            elif name in g.racks[:k]:
                yield loc + (k,), f"rack {name} is listed twice", "list each rack once"
        nt = model.node_types.get(g.node_type)
        if nt is None:
            continue  # reported by `references`
        fits = len(set(g.racks)) * (per_rack // nt.height_u)
        if g.count > fits:
            yield (loc, f"{g.count} nodes of {nt.height_u} U do not fit in {len(set(g.racks))} rack(s) of "
                   f"{per_rack} node units ({fits} at most)",
                   f"list at least {-(-g.count // max(per_rack // nt.height_u, 1))} racks, or lower count")
