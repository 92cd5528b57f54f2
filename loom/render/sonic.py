"""SONiC's view of a switch: port names and the tables of `config_db.json`.

Port naming — one for every file Loom writes (frr.conf, config_db.json, the namespace lab's
veths): SONiC's `EthernetN`, N the port's first SerDes lane.  An ASIC has 512 lanes (a 51.2T
chip at 100G per lane, or 25.6T at 50G), shared evenly: a 128-port switch gives each port 4
lanes (Ethernet0, Ethernet4, ...), a 64-port switch 8 (Ethernet0, Ethernet8, ...), never more
than 8.  The front-panel alias is `etpK` for port K (1-based), the index K.

QoS: the complete lossless set of SONiC's QoS and buffer tables (DSCP_TO_TC_MAP,
TC_TO_PRIORITY_GROUP_MAP, TC_TO_QUEUE_MAP, MAP_PFC_PRIORITY_TO_QUEUE, PORT_QOS_MAP with
pfc_enable and pfcwd_sw_enable, SCHEDULER, QUEUE, WRED_PROFILE, BUFFER_POOL, BUFFER_PROFILE,
BUFFER_PG, BUFFER_QUEUE, CABLE_LENGTH, PFC_WD) from the model's classes (`loom.qos.plan`) and
the lossless numbers (`loom.qos.lossless`).  Lossless priorities map to a PG of the same number
with headroom for the port's speed and cable length; every other priority shares PG 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _str

from loom.expand import Switch
from loom.qos.lossless import BUFFER_BYTES, ECN, PFCWD, Lossless, dwrr_weights, headroom
from loom.qos.plan import QosPlan

SERDES_LANES = 512
MAP = "AZURE"  # SONiC's conventional name for the one set of QoS maps
LOSSLESS_WRED = "AZURE_LOSSLESS"
CNP_SCHEDULER = "scheduler.cnp"


def lanes_per_port(ports: int) -> int:
    return max(1, min(8, SERDES_LANES // ports))


def port_name(switch: Switch, port: int) -> str:
    """Port `port` (1-based, as cabled) of `switch` as SONiC names it, e.g. `Ethernet4`."""
    return f"Ethernet{(port - 1) * lanes_per_port(switch.ports)}"


@dataclass(frozen=True)
class SonicPort:
    """One cabled port: what the PORT table and the per-port QoS tables need."""

    name: str
    number: int
    speed_gbps: int
    length_m: int
    description: str


def port_entry(switch: Switch, p: SonicPort, mtu: int) -> dict:
    lanes = lanes_per_port(switch.ports)
    first = (p.number - 1) * lanes
    return {"admin_status": "up", "alias": f"etp{p.number}", "index": str(p.number), "lanes": ",".join(str(first + k) for k in range(lanes)),
            "speed": str(p.speed_gbps * 1000), "mtu": str(mtu), "fec": "rs", "description": p.description}


def qos_tables(plan: QosPlan, ll: Lossless, ports: list[SonicPort]) -> dict:
    """The QoS and buffer tables of one switch; O(ports × priorities)."""
    pfc = ",".join(map(str, ll.pfc))
    weights = dwrr_weights(plan)
    rooms = {(p.speed_gbps, p.length_m): headroom(p.speed_gbps, p.length_m, ll.switch_mtu) for p in ports}
    tables: dict[str, dict] = {
        "DSCP_TO_TC_MAP": {MAP: {str(d): str(t) for d, t in sorted(ll.dscp_to_tc.items())}},
        "TC_TO_PRIORITY_GROUP_MAP": {MAP: {str(t): str(t if t in ll.pfc else 0) for t in range(8)}},
        "TC_TO_QUEUE_MAP": {MAP: {str(t): str(t) for t in range(8)}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {MAP: {str(t): str(t) for t in range(8)}},
        "SCHEDULER": {**{name: {"type": "DWRR", "weight": str(weights[t])} for t, name in schedulers(plan).items()},
                      CNP_SCHEDULER: {"type": "STRICT"}},
        "WRED_PROFILE": {LOSSLESS_WRED: {"ecn": "ecn_all", "wred_green_enable": "true", "wred_yellow_enable": "true",
                                         "wred_red_enable": "true", **{f"{colour}_{k}": str(v) for colour in ("green", "yellow", "red")
                                                                       for k, v in (("min_threshold", ECN["min"]), ("max_threshold", ECN["max"]),
                                                                                    ("drop_probability", ECN["probability"]))}}},
        "BUFFER_POOL": {
            "ingress_lossless_pool": {"type": "ingress", "mode": "dynamic", "size": str(BUFFER_BYTES * 2 // 3),
                                      "xoff": str(sum(rooms[(p.speed_gbps, p.length_m)].xoff for p in ports) * len(ll.pfc))},
            "egress_lossless_pool": {"type": "egress", "mode": "dynamic", "size": str(BUFFER_BYTES)},
            "egress_lossy_pool": {"type": "egress", "mode": "dynamic", "size": str(BUFFER_BYTES // 3)},
        },
        "BUFFER_PROFILE": {
            "ingress_lossy_profile": {"pool": "ingress_lossless_pool", "size": "0", "dynamic_th": "3"},
            "egress_lossless_profile": {"pool": "egress_lossless_pool", "size": "0", "dynamic_th": "7"},
            "egress_lossy_profile": {"pool": "egress_lossy_pool", "size": str(ll.switch_mtu), "dynamic_th": "3"},
            **{r.profile: {"pool": "ingress_lossless_pool", "xoff": str(r.xoff), "xon": str(r.xon), "size": str(r.size),
                           "dynamic_th": "0"} for r in rooms.values()},
        },
        "PORT_QOS_MAP": {}, "QUEUE": {}, "BUFFER_PG": {}, "BUFFER_QUEUE": {}, "CABLE_LENGTH": {MAP: {}},
        "PFC_WD": {"GLOBAL": {"POLL_INTERVAL": str(PFCWD["poll_interval"])}},
    }
    sched = {**schedulers(plan), ll.cnp_tc: CNP_SCHEDULER}
    for p in ports:
        n = p.name
        tables["PORT_QOS_MAP"][n] = {"dscp_to_tc_map": MAP, "tc_to_queue_map": MAP, "tc_to_pg_map": MAP,
                                     "pfc_to_queue_map": MAP, "pfc_enable": pfc, "pfcwd_sw_enable": pfc}
        for t in sorted(sched):
            q = {"scheduler": sched[t]}
            if t in ll.pfc:
                q["wred_profile"] = LOSSLESS_WRED
            tables["QUEUE"][f"{n}|{t}"] = q
        tables["BUFFER_PG"][f"{n}|0"] = {"profile": "ingress_lossy_profile"}
        for t in ll.pfc:
            tables["BUFFER_PG"][f"{n}|{t}"] = {"profile": rooms[(p.speed_gbps, p.length_m)].profile}
        for t in range(8):
            tables["BUFFER_QUEUE"][f"{n}|{t}"] = {"profile": "egress_lossless_profile" if t in ll.pfc else "egress_lossy_profile"}
        tables["CABLE_LENGTH"][MAP][n] = f"{p.length_m}m"
        tables["PFC_WD"][n] = {"action": PFCWD["action"], "detection_time": str(PFCWD["detection_time"]),
                               "restoration_time": str(PFCWD["restoration_time"])}
    return tables


def schedulers(plan: QosPlan) -> dict[int, str]:
    """Priority → its DWRR scheduler: the class's, and `.lower` for a BiGraph's lower part."""
    out = {c.tc: f"scheduler.{c.name}" for c in plan.classes}
    out |= {c.part_tc: f"scheduler.{c.name}.lower" for c in plan.classes if c.part_tc is not None}
    return out


def _entry(value) -> str:
    """One table entry (SONiC's are flat string → string maps) on one line; anything else
    through the json module."""
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return "{" + ", ".join(f"{_str(k)}: {_str(v)}" for k, v in sorted(value.items())) + "}"
    return json.dumps(value, sort_keys=True)


def config_db_json(db: dict[str, dict]) -> str:
    """config_db.json with one line per table entry, keys sorted: `config load` reads it like any
    JSON and a reviewer's diff shows the entries that changed.  Written with json's C string
    escaper: the json module's indenting encoder took 50 s at 768 switches."""
    lines = ["{"]
    for ti, table in enumerate(sorted(db)):
        entries = db[table]
        keys = sorted(entries)
        lines.append(f" {_str(table)}: {{")
        lines += [f"  {_str(k)}: {_entry(entries[k])}{',' if i < len(keys) - 1 else ''}" for i, k in enumerate(keys)]
        lines.append(" }" + ("," if ti < len(db) - 1 else ""))
    return "\n".join(lines) + "\n}\n"
