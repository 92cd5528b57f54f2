"""What a model change does to the Ethernet switches' configuration files: every switch's
frr.conf and config_db.json rendered on both sides and compared line by line (as multisets:
a line moved within a file is no change; O(lines) per switch).  A switch only one side has
counts all its lines as added or removed.  `loom diff` reports this beside the routes.
"""

from __future__ import annotations

from collections import Counter

from loom.expand import Fabric
from loom.routing.base import Tables

from .roce import RoceConfigs

FILES = ("frr.conf", "config_db.json")


def _lines(rc: RoceConfigs) -> dict[str, Counter]:
    return {s.name: Counter(line for f in FILES for line in rc.switch(s)[f].splitlines()) for s in rc.f.switches}


def config_changes(base: Fabric, base_tables: list[Tables], head: Fabric, head_tables: list[Tables]) -> dict:
    """{"lines_changed", "per_switch": {switch: {"added", "removed"}}, "switches_added", "switches_removed"}"""
    old, new = _lines(RoceConfigs(base, base_tables)), _lines(RoceConfigs(head, head_tables))
    per_switch = {}
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name, Counter()), new.get(name, Counter())
        added, removed = sum((b - a).values()), sum((a - b).values())
        if added or removed:
            per_switch[name] = {"added": added, "removed": removed}
    return {"lines_changed": sum(x["added"] + x["removed"] for x in per_switch.values()), "per_switch": per_switch,
            "switches_added": sorted(new.keys() - old.keys()), "switches_removed": sorted(old.keys() - new.keys())}
