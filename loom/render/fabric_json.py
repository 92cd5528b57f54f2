"""Canonical JSON of an expanded fabric: the form in which "same model ⇒ byte-identical
expansion" is checked, and what external tools can read without importing Loom."""

from __future__ import annotations

import json
from dataclasses import asdict

from loom.expand import CABLE_KINDS, Fabric

CABLE_COLUMNS = ("a_kind", "a_dev", "a_port", "b_kind", "b_dev", "b_port", "kind", "plane", "speed_gbps", "subnet")


def fabric_json(f: Fabric) -> str:
    c = f.cables
    doc = {
        "name": f.name,
        "technology": f.technology,
        "zones": list(f.zones),
        "planes": f.planes,
        "racks": list(f.racks),
        "switches": [asdict(s) for s in f.switches],
        "nodes": [asdict(n) for n in f.nodes],
        "ports": [asdict(p) for p in f.ports],
        "cable_kinds": list(CABLE_KINDS),
        "cable_columns": list(CABLE_COLUMNS),
        "cables": [list(row) for row in zip(*(getattr(c, k).tolist() for k in CABLE_COLUMNS))],
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")) + "\n"
