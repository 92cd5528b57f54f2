"""Change sheets: what a technician does on the floor to go from one model to another.

Node cables are matched by their node end (device + NIC/port): same node end, other switch
port = a move.  Switch-to-switch cables are matched by both ends.  Lines come in walking order
(rack, RU, device, port): removals at their old place, additions and moves at their new one.
"""

from __future__ import annotations

import csv
import io

from loom.expand import Fabric

from .cabling import Cable, RackMap, walk_key


def _key(c: Cable) -> tuple:
    if c.kind == "host":
        return ("host", c.a.device, c.a.port)
    return ("link", tuple(sorted([(c.a.device, c.a.port), (c.b.device, c.b.port)])))


def change_sheet(old_f: Fabric, old: list[Cable], new_f: Fabric, new: list[Cable]) -> list[dict]:
    old_by, new_by = {_key(c): c for c in old}, {_key(c): c for c in new}
    old_racks, new_racks = RackMap(old_f), RackMap(new_f)
    lines = []
    for k in old_by.keys() - new_by.keys():
        c = old_by[k]
        lines.append((walk_key(old_racks, c), {"action": "remove", "cable_id": c.cable_id, "label": c.label,
                                                "from": f"{c.b.rack} U{c.b.ru} {c.b.device} {c.b.port}", "to": ""}))
    for k in new_by.keys() - old_by.keys():
        c = new_by[k]
        lines.append((walk_key(new_racks, c), {"action": "add", "cable_id": c.cable_id, "label": c.label, "from": "",
                                                "to": f"{c.b.rack} U{c.b.ru} {c.b.device} {c.b.port}"}))
    for k in old_by.keys() & new_by.keys():
        o, n = old_by[k], new_by[k]
        if (o.a, o.b) != (n.a, n.b):
            lines.append((walk_key(new_racks, n), {
                "action": "move", "cable_id": n.cable_id, "label": n.label,
                "from": f"{o.b.rack} U{o.b.ru} {o.b.device} {o.b.port}" if o.a == n.a else f"{o.a.rack} {o.a.device} {o.a.port}",
                "to": f"{n.b.rack} U{n.b.ru} {n.b.device} {n.b.port}" if o.a == n.a else f"{n.a.rack} {n.a.device} {n.a.port}",
            }))
    order = {"remove": 0, "move": 1, "add": 2}
    return [line for _, line in sorted(lines, key=lambda kl: (order[kl[1]["action"]], kl[0]))]


def change_sheet_text(lines: list[dict]) -> str:
    if not lines:
        return "no cabling changes\n"
    out = [f"{len(lines)} cabling change(s), in walking order:"]
    for l in lines:
        where = {"remove": f"unplug at {l['from']}", "add": f"plug in at {l['to']}", "move": f"{l['from']}  ->  {l['to']}"}
        out.append(f"  {l['action'].upper():<6} {l['cable_id']:<16} {where[l['action']]}    [{l['label']}]")
    return "\n".join(out) + "\n"


def change_sheet_csv(lines: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["action", "cable_id", "from", "to", "label"], lineterminator="\n")
    w.writeheader()
    for l in lines:
        w.writerow(l)
    return buf.getvalue()
