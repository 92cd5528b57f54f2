"""A saved plan for review: `loom show plan.json [--entries]`.

The plan file holds the tables as rows (`loom/push/packing.py`); the entries a reviewer needs
are the rows that differ between `previous_lfts` (live when the plan was made) and
`desired_lfts`, named by switch and destination."""

from __future__ import annotations

import json
from pathlib import Path

from loom.model.names import natural


def is_plan(path: Path) -> bool:
    """A `.json` file with a `plan_sha256` key (models are YAML; a model written as JSON has no
    such key).  Only the ends are read: `plan_sha256` is the last key `loom plan` writes, and
    reading is bounded later by `read_plan`."""
    if path.suffix != ".json" or not path.is_file():
        return False
    with path.open("rb") as f:
        head = f.read(1 << 16)
        f.seek(max(0, path.stat().st_size - 4096))
        tail = f.read()
    return head.lstrip().startswith(b"{") and b'"plan_sha256"' in head + tail


def changed_entries(plan: dict) -> list[dict]:
    """Every entry the plan changes: switch, LID, destination name, port before and after (None:
    no route), switches in natural order, LIDs ascending."""
    names = {m["lid"]: m["name"] for m in plan["changes"]["destinations_moved"]}
    before, after = plan["previous_lfts"], plan["desired_lfts"]
    out = []
    for sw in sorted(set(before) | set(after), key=natural):
        old = {lid: port for lid, port in before.get(sw, {}).get("rows", [])}
        new = {lid: port for lid, port in after.get(sw, {}).get("rows", [])}
        for lid in sorted(set(old) | set(new)):
            if old.get(lid) != new.get(lid):
                out.append({"switch": sw, "lid": lid, "name": names.get(lid), "from": old.get(lid), "to": new.get(lid)})
    return out


def entry_lines(entries: list[dict]) -> list[str]:
    """`z0-leaf3  LID 0x0012 (node007-hca0): port 21 → 24`, one line per entry."""
    width = max((len(e["switch"]) for e in entries), default=0)

    def port(p: int | None) -> str:
        return "no route" if p is None else f"port {p}"

    return [f"{e['switch']:<{width}}  LID 0x{e['lid']:04x} ({e['name'] or '?'}): {port(e['from'])} → {port(e['to'])}"
            for e in entries]


def summary_json(plan: dict, entries: bool) -> str:
    """The plan without its tables (what a script needs to judge it), plus the entries if asked."""
    body = {k: v for k, v in plan.items() if k not in ("desired_lfts", "previous_lfts")}
    if entries:
        body["entries"] = changed_entries(plan)
    return json.dumps(body, indent=2) + "\n"
