"""What a model change does to the Ethernet switches' configuration files: every switch's
frr.conf and config_db.json compared between the sides line by line (as multisets:
a line moved within a file is no change; O(lines) per switch).  A switch only one side has
counts all its lines as added or removed.  `loom diff` reports this beside the routes.

Only the switches whose rendering inputs (`RoceConfigs.switch_inputs`: every value the
templates and config_db.json are made from) differ between the sides are rendered: equal
inputs give identical files, and on a 1,536-switch fabric rendering both sides of every switch
was most of the diff's time.
"""

from __future__ import annotations

from collections import Counter

from loom.expand import Fabric
from loom.routing.base import Tables

from .roce import RoceConfigs, render_switch

FILES = ("frr.conf", "config_db.json")


def _lines(files: dict[str, str]) -> Counter:
    return Counter(line for f in FILES for line in files[f].splitlines())


def config_changes(base: Fabric, base_tables: list[Tables], head: Fabric, head_tables: list[Tables]) -> dict:
    """{"lines_changed", "per_switch": {switch: {"added", "removed"}}, "switches_added", "switches_removed"}"""
    old_rc, new_rc = RoceConfigs(base, base_tables), RoceConfigs(head, head_tables)
    old = {s.name: old_rc.switch_inputs(s) for s in base.switches}
    new = {s.name: new_rc.switch_inputs(s) for s in head.switches}
    per_switch = {}
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) == new.get(name):
            continue  # the same inputs render the same files: nothing changed, nothing to render
        a = _lines(render_switch(old[name])) if name in old else Counter()
        b = _lines(render_switch(new[name])) if name in new else Counter()
        added, removed = sum((b - a).values()), sum((a - b).values())
        if added or removed:
            per_switch[name] = {"added": added, "removed": removed}
    return {"lines_changed": sum(x["added"] + x["removed"] for x in per_switch.values()), "per_switch": per_switch,
            "switches_added": sorted(new.keys() - old.keys()), "switches_removed": sorted(old.keys() - new.keys())}
