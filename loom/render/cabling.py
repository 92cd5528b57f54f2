"""Cabling sheets: every cable of the expanded fabric as a line a technician can follow.

Per cable: a stable ID (the switch port it plugs into: `z0-leaf5/16` for a node cable, the
lower switch's port for a switch cable, so IDs survive unrelated changes), label text, both
ends (site, row, rack, RU, device, port, lane), media and length chosen from the catalogue,
part numbers, plane and zone.  Length: the measured run plus slack, rounded up to the next
length sold for the first medium (in catalogue order) that reaches that far; a run longer than
every medium allows is refused.

Measured run: inside one rack, the vertical distance between the two devices; between racks,
up from each device to the overhead tray (`tray_rise_m` above the rack top) plus the
horizontal distance: `rack_width_m` per rack along a row, `row_pitch_m` per row.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from dataclasses import asdict, dataclass

from loom.expand import CABLE_KINDS, HOST, Fabric
from loom.model.racks import row_letter
from loom.model.catalogue import Catalogue, Medium
from loom.model.errors import ModelError, Problem
from loom.model.schema import SPEEDS_GBPS

COLUMNS = ("cable_id", "label", "a_site", "a_row", "a_rack", "a_ru", "a_device", "a_port", "a_lane",
           "b_site", "b_row", "b_rack", "b_ru", "b_device", "b_port", "b_lane", "kind", "speed", "media",
           "length_m", "part_number", "transceiver", "fiber", "plane", "zone", "run_m")

#: What each CSV column holds (docs/cabling.md is generated from this).
COLUMN_DOC = {
    "cable_id": "stable ID: the switch port the cable plugs into (node cables) or the lower switch's port",
    "label": "text for the label printer: both ends",
    "a_site": "end A (the lower layer: node, or leaf for switch cables): site",
    "a_row": "end A row letter", "a_rack": "end A rack name", "a_ru": "end A rack unit (bottom of the device)",
    "a_device": "end A device name", "a_port": "end A port (NIC/port for nodes, port number for switches)",
    "a_lane": "end A breakout lane (empty when not a breakout)",
    "b_site": "end B (the upper layer) site", "b_row": "end B row letter", "b_rack": "end B rack name",
    "b_ru": "end B rack unit", "b_device": "end B device name", "b_port": "end B port number",
    "b_lane": "end B breakout lane", "kind": "host, leaf-spine, spine-core, bigraph or inter-zone",
    "speed": "link speed name", "media": "DAC, AOC or fiber", "length_m": "sold length to order",
    "part_number": "cable (or fibre) part number", "transceiver": "transceiver part, two per cable (fibre only)",
    "fiber": "fibre type (fibre only)", "plane": "plane number", "zone": "zone of end B", "run_m": "measured run incl. slack",
}


@dataclass(frozen=True)
class End:
    site: str
    row: str
    rack: str
    ru: int
    device: str
    port: str
    lane: str = ""


@dataclass(frozen=True)
class Cable:
    cable_id: str
    label: str
    a: End
    b: End
    kind: str
    speed: str
    media: str
    length_m: float
    part_number: str
    transceiver: str
    fiber: str
    plane: int
    zone: str
    run_m: float
    index: int = -1  # row in the fabric's cable table

    def row(self) -> dict:
        d = {"cable_id": self.cable_id, "label": self.label}
        for side in ("a", "b"):
            for k, v in asdict(getattr(self, side)).items():
                d[f"{side}_{k}"] = v
        d.update(kind=self.kind, speed=self.speed, media=self.media, length_m=_fmt(self.length_m),
                 part_number=self.part_number, transceiver=self.transceiver, fiber=self.fiber,
                 plane=self.plane, zone=self.zone, run_m=f"{self.run_m:.2f}")
        return d


def _fmt(x: float) -> str:
    return f"{x:g}"


class RackMap:
    """Rack name → (row index, position in row), from the fabric's rack order."""

    def __init__(self, fabric: Fabric) -> None:
        per = fabric.model.layout.racks_per_row
        self.pos = {name: divmod(i, per) for i, name in enumerate(fabric.racks)}
        self.order = {name: i for i, name in enumerate(fabric.racks)}

    def row(self, rack: str) -> str:
        return row_letter(self.pos[rack][0])


def run_length(fabric: Fabric, racks: RackMap, a: tuple[str, int, int], b: tuple[str, int, int]) -> float:
    """Measured run between two devices (rack, RU, height), without slack."""
    lay = fabric.model.layout
    (ra, ua, ha), (rb, ub, hb) = a, b
    if ra == rb:
        return abs(ua - ub) * lay.ru_height_m
    top = lay.rack_units * lay.ru_height_m + lay.tray_rise_m
    up_a = top - (ua + ha - 1) * lay.ru_height_m
    up_b = top - (ub + hb - 1) * lay.ru_height_m
    (row_a, pos_a), (row_b, pos_b) = racks.pos[ra], racks.pos[rb]
    return up_a + up_b + abs(pos_a - pos_b) * lay.rack_width_m + abs(row_a - row_b) * lay.row_pitch_m


def _where(fabric: Fabric, kind: int, dev: int) -> tuple[str, int, int]:
    """(rack, RU, height) of a cable end: a switch, or the node of a NIC port."""
    m = fabric.model
    if kind == HOST:
        node = fabric.nodes[fabric.ports[dev].node]
        return node.rack, node.ru, m.node_types[node.node_type].height_u
    s = fabric.switches[dev]
    return s.rack, s.ru, m.switch_models[s.model].height_u


def _slack(fabric: Fabric) -> float:
    return fabric.model.cabling.slack_m if fabric.model.cabling else 0.0


def cable_lengths(fabric: Fabric, rows=None) -> list[int]:
    """The measured run plus slack of every cable (or of the cables `rows`), in whole metres
    rounded up: the length SONiC's CABLE_LENGTH wants (PFC headroom grows with it), with or
    without a catalogue; O(cables)."""
    racks = RackMap(fabric)
    slack = _slack(fabric)
    c = fabric.cables
    rows = slice(None) if rows is None else rows
    a = [_where(fabric, k, d) for k, d in zip(c.a_kind[rows].tolist(), c.a_dev[rows].tolist())]
    b = [_where(fabric, k, d) for k, d in zip(c.b_kind[rows].tolist(), c.b_dev[rows].tolist())]
    return [math.ceil(run_length(fabric, racks, x, y) + slack) for x, y in zip(a, b)]


def pick_medium(catalogue: Catalogue, speed: str, run: float) -> tuple[Medium, float, str] | None:
    for m in catalogue.media:
        if speed in m.speeds and run <= m.max_m:
            for length, part in m.lengths.items():
                if length >= run:
                    return m, length, part
    return None


def cable_plan(fabric: Fabric, catalogue: Catalogue) -> list[Cable]:
    """Every cable, in walking order (rack, RU, device, port of end A)."""
    m = fabric.model
    site = m.cabling.site if m.cabling else ""
    slack = _slack(fabric)
    racks = RackMap(fabric)
    ethernet = fabric.technology == "ethernet"
    speed_name = {v: k for k, v in SPEEDS_GBPS.items() if k.endswith("GbE") == ethernet}
    c = fabric.cables
    out, refused = [], []
    for i in range(len(c)):
        sb = fabric.switches[int(c.b_dev[i])]
        b = End(site, racks.row(sb.rack), sb.rack, sb.ru, sb.name, str(int(c.b_port[i])))
        if c.a_kind[i] == HOST:
            hp = fabric.ports[int(c.a_dev[i])]
            node = fabric.nodes[hp.node]
            a = End(site, racks.row(node.rack), node.rack, node.ru, node.name, f"{hp.nic}/{hp.port}")
        else:
            sa = fabric.switches[int(c.a_dev[i])]
            a = End(site, racks.row(sa.rack), sa.rack, sa.ru, sa.name, str(int(c.a_port[i])))
        cid = fabric.cable_id(i)
        run = run_length(fabric, racks, _where(fabric, int(c.a_kind[i]), int(c.a_dev[i])),
                         _where(fabric, int(c.b_kind[i]), int(c.b_dev[i]))) + slack
        speed = speed_name[int(c.speed_gbps[i])]
        pick = pick_medium(catalogue, speed, run)
        if pick is None:
            refused.append(f"{cid} ({a.rack} U{a.ru} → {b.rack} U{b.ru}): {run:.1f} m of {speed}")
            continue
        medium, length, part = pick
        label = f"{cid} | {a.device} {a.port} ({a.rack} U{a.ru}) <-> {b.device} {b.port} ({b.rack} U{b.ru})"
        out.append(Cable(cid, label, a, b, CABLE_KINDS[int(c.kind[i])], speed, medium.kind, length, part,
                         medium.transceiver or "", medium.fiber or "", int(c.plane[i]), sb.zone, run, i))
    if refused:
        raise ModelError("", [Problem("layout", f"{len(refused)} cable run(s) are longer than any catalogue medium allows, "
                                      f"e.g. {refused[0]}", "place the racks closer (layout) or add a longer medium to the catalogue",
                                      loc=("layout",))])
    out.sort(key=lambda x: walk_key(racks, x))
    return out


def walk_key(racks: RackMap, cable: Cable) -> tuple:
    return (racks.order[cable.a.rack], cable.a.ru, cable.a.device, cable.a.port, cable.cable_id)


def to_csv(plan: list[Cable]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for cable in plan:
        w.writerow(cable.row())
    return buf.getvalue()


def bill_of_materials(plan: list[Cable]) -> list[dict]:
    """Counts per cable type and length, then transceivers (two per fibre run)."""
    cables = Counter((x.media, x.speed, x.length_m, x.part_number) for x in plan)
    rows = [{"item": "cable", "media": k[0], "speed": k[1], "length_m": _fmt(k[2]), "part_number": k[3], "count": n}
            for k, n in sorted(cables.items())]
    optics = Counter(x.transceiver for x in plan if x.transceiver)
    rows += [{"item": "transceiver", "media": "optic", "speed": "", "length_m": "", "part_number": t, "count": 2 * n}
             for t, n in sorted(optics.items())]
    return rows
