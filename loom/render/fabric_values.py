"""The expanded fabric as flat, named records: what `loom fabric --format json` prints and the
Terraform data source `loom_fabric` exposes, so other tools (and other Terraform providers) can
use Loom's model without knowing its index-based canonical form (`fabric_json.py`).

Every record names its devices (no indices), GUIDs are hex strings, and each record kind has a
fixed set of keys (absent values are null), because Terraform needs one object type per list.
Cables carry their label, medium and length when the model has a `cabling:` section (the
cabling sheet's plan); without it those keys are null.
"""

from __future__ import annotations

from loom.expand import CABLE_KINDS, Fabric
from loom.expand.fabric import HOST
from loom.render.cabling import Cable

VALUES_VERSION = 1


def _guid(x: int) -> str | None:
    return f"0x{x:016x}" if x else None


def fabric_values(f: Fabric, plan: list[Cable] | None = None) -> dict:
    """{"version", "name", "technology", "racks", "switches", "nodes", "ports", "cables"}."""
    by_index = {c.index: c for c in plan or []}
    attached = _attached(f)
    return {
        "version": VALUES_VERSION,
        "name": f.name,
        "technology": f.technology,
        "racks": list(f.racks),
        "switches": [{"name": s.name, "role": s.role, "zone": s.zone, "plane": s.plane, "model": s.model,
                      "ports": s.ports, "speed_gbps": s.speed_gbps, "rack": s.rack, "ru": s.ru, "guid": _guid(s.guid),
                      "lid": s.lid or None, "asn": s.asn, "loopback": s.loopback} for s in f.switches],
        "nodes": [{"name": n.name, "role": n.role, "node_type": n.node_type, "rack": n.rack, "ru": n.ru,
                   "zones": list(n.zones)} for n in f.nodes],
        "ports": [{"ca": p.ca, "node": f.nodes[p.node].name, "nic": p.nic, "port": p.port, "plane": p.plane,
                   "zone": p.zone, "speed_gbps": p.speed_gbps, "guid": _guid(p.guid), "lid": p.lid or None,
                   "address": p.address, "switch": attached[p.index][0], "switch_port": attached[p.index][1]}
                  for p in f.ports],
        "cables": [_cable(f, i, by_index.get(i)) for i in range(len(f.cables))],
    }


def _attached(f: Fabric) -> dict[int, tuple[str | None, int | None]]:
    """NIC port index → (switch, switch port) it is cabled to; (None, None) if uncabled."""
    c = f.cables
    got: dict[int, tuple[str | None, int | None]] = {p.index: (None, None) for p in f.ports}
    for i in range(len(c)):
        if c.a_kind[i] == HOST:
            got[int(c.a_dev[i])] = (f.switches[int(c.b_dev[i])].name, int(c.b_port[i]))
    return got


def _end(f: Fabric, kind: int, dev: int, port: int) -> tuple[str, str]:
    if kind == HOST:
        p = f.ports[dev]
        return f.nodes[p.node].name, f"{p.nic}/{p.port}"
    return f.switches[dev].name, str(port)


def _cable(f: Fabric, i: int, planned: Cable | None) -> dict:
    c = f.cables
    a = _end(f, int(c.a_kind[i]), int(c.a_dev[i]), int(c.a_port[i]))
    b = _end(f, int(c.b_kind[i]), int(c.b_dev[i]), int(c.b_port[i]))
    return {"id": f.cable_id(i), "a_device": a[0], "a_port": a[1], "b_device": b[0], "b_port": b[1],
            "kind": CABLE_KINDS[int(c.kind[i])], "plane": int(c.plane[i]), "speed_gbps": int(c.speed_gbps[i]),
            "label": planned.label if planned else None, "media": planned.media if planned else None,
            "length_m": planned.length_m if planned else None,
            "part_number": planned.part_number if planned else None}
