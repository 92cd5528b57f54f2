"""Change sheets: what a technician does on the floor to go from one model to another.

Which cables are added, removed or re-pulled comes from `loom.expand.churn`, the same source as
`loom diff`, so the two always agree.  Every line gives both ends with rack, RU, device and port
(old and new for a re-pull) and the cable: a re-pull whose new run needs another length or
medium says which part replaces which.  Lines come in walking order: rack by rack (removals at
their old place, re-pulls and additions at their new one), and at each rack remove, re-pull,
add.  The pull list says, per rack, which parts to bring and which come back.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict

from loom.expand import Fabric
from loom.expand.churn import churn

from .cabling import Cable, End, RackMap, walk_key

COLUMN_DOC = {
    "action": "add, remove or move (re-pull: an end on another port, or a device at another rack/RU)",
    "cable_id": "the cable's ID (new one for add/move, old one for remove)",
    "from": "the end that changes, as it was (rack, RU, device, port); empty for add",
    "to": "the end that changes, as it will be; empty for remove",
    "old_a": "old end A (node or lower switch): rack, RU, device, port", "old_b": "old end B",
    "new_a": "new end A", "new_b": "new end B",
    "old_cable": "length, media and part number of the cable in place", "new_cable": "of the cable the new run needs",
    "replace": "when the part changes: `replace 5 m AOC MFS1S00-H005V with 15 m AOC MFS1S00-H015V`",
    "rack": "where the work is done: the rack of end A (old for remove, new otherwise)",
    "label": "the cable's label text",
}
COLUMNS = tuple(COLUMN_DOC)
ORDER = {"remove": 0, "move": 1, "add": 2}


def _end(e: End) -> str:
    return f"{e.rack} U{e.ru} {e.device} {e.port}"


def _part(c: Cable) -> str:
    return f"{c.length_m:g} m {c.media} {c.part_number}"


def change_sheet(old_f: Fabric, old: list[Cable], new_f: Fabric, new: list[Cable]) -> list[dict]:
    old_at, new_at = {c.index: c for c in old}, {c.index: c for c in new}
    old_racks, new_racks = RackMap(old_f), RackMap(new_f)
    lines = []
    for ch in churn(old_f, new_f).cables:
        o, n = old_at.get(ch.old), new_at.get(ch.new)
        line = dict.fromkeys(COLUMNS, "")
        line.update(action=ch.action, cable_id=(n or o).cable_id, label=(n or o).label)
        if o:
            line.update(old_a=_end(o.a), old_b=_end(o.b), old_cable=_part(o))
        if n:
            line.update(new_a=_end(n.a), new_b=_end(n.b), new_cable=_part(n))
        if ch.action == "remove":
            line.update({"from": _end(o.b), "rack": o.a.rack})
            key = walk_key(old_racks, o)
        else:
            line["rack"] = n.a.rack
            key = walk_key(new_racks, n)
            if ch.action == "add":
                line["to"] = _end(n.b)
            else:
                same_a = (o.a.device, o.a.port) == (n.a.device, n.a.port) and (o.b.device, o.b.port) != (n.b.device, n.b.port)
                line.update({"from": _end(o.b) if same_a else _end(o.a), "to": _end(n.b) if same_a else _end(n.a)})
                if o.part_number != n.part_number:
                    line["replace"] = f"replace {_part(o)} with {_part(n)}"
        lines.append(((key[0], ORDER[ch.action]) + key[1:], line))
    return [line for _, line in sorted(lines, key=lambda kl: kl[0])]


def pull_list(lines: list[dict], new: list[Cable]) -> list[dict]:
    """Per rack, in walking order: parts to bring (new cables, replacements, two transceivers per
    new fibre run) and parts coming back (removed and replaced cables)."""
    by_id = {c.cable_id: c for c in new}
    bring: dict[str, Counter] = defaultdict(Counter)
    back: dict[str, Counter] = defaultdict(Counter)
    for l in lines:
        if l["action"] == "add" or l["replace"]:
            bring[l["rack"]][l["new_cable"]] += 1
            if by_id[l["cable_id"]].transceiver:
                bring[l["rack"]][f"transceiver {by_id[l['cable_id']].transceiver}"] += 2
        if l["action"] == "remove" or l["replace"]:
            back[l["rack"]][l["old_cable"]] += 1
    racks = list(dict.fromkeys(l["rack"] for l in lines))
    return [{"rack": r, "bring": sorted(bring[r].items()), "back": sorted(back[r].items())} for r in racks
            if bring[r] or back[r]]


def change_sheet_text(lines: list[dict], pulls: list[dict]) -> str:
    if not lines:
        return "no cabling changes\n"
    out = [f"{len(lines)} cabling change(s), in walking order:"]
    for l in lines:
        if l["action"] == "remove":
            where = f"unplug {l['old_a']}  <->  {l['old_b']}; take back {l['old_cable']}"
        elif l["action"] == "add":
            where = f"plug in {l['new_a']}  <->  {l['new_b']}; {l['new_cable']}"
        else:
            where = (f"{l['old_a']} <-> {l['old_b']}  =>  {l['new_a']} <-> {l['new_b']}; "
                     + (l["replace"] or f"keep {l['old_cable']}"))
        out.append(f"  rack {l['rack']:<5} {l['action'].upper():<6} {l['cable_id']:<16} {where}")
    if pulls:
        out.append("pull list (parts per rack, in walking order):")
        for p in pulls:
            bring = ", ".join(f"{n} × {part}" for part, n in p["bring"]) or "nothing"
            back = ", ".join(f"{n} × {part}" for part, n in p["back"]) or "nothing"
            out.append(f"  rack {p['rack']:<5} bring {bring}; take back {back}")
    return "\n".join(out) + "\n"


def change_sheet_csv(lines: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for l in lines:
        w.writerow(l)
    return buf.getvalue()
