"""The cabling plan as documents: XLSX (a sheet per row of racks + bill of materials),
printable HTML (a page per rack, in walking order, with a picture of the fabric)."""

from __future__ import annotations

import io
from collections import defaultdict

from loom.expand import Fabric

from .cabling import COLUMNS, Cable, RackMap, bill_of_materials
from .templates import render


def to_xlsx(fabric: Fabric, plan: list[Cable]) -> bytes:
    from openpyxl import Workbook
    from openpyxl.styles import Font

    wb = Workbook()
    wb.remove(wb.active)
    by_row: dict[str, list[Cable]] = defaultdict(list)
    for cable in plan:
        by_row[cable.a.row].append(cable)
    for row in sorted(by_row, key=lambda r: (len(r), r)):
        ws = wb.create_sheet(f"Row {row}")
        ws.append(list(COLUMNS))
        for cable in by_row[row]:
            d = cable.row()
            ws.append([d[k] for k in COLUMNS])
        for cell in ws[1]:
            cell.font = Font(bold=True)
        ws.freeze_panes = "A2"
    bom = wb.create_sheet("BOM")
    bom.append(["item", "media", "speed", "length_m", "part_number", "count"])
    for r in bill_of_materials(plan):
        bom.append([r["item"], r["media"], r["speed"], r["length_m"], r["part_number"], r["count"]])
    for cell in bom[1]:
        cell.font = Font(bold=True)
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def rack_pages(fabric: Fabric, plan: list[Cable]) -> list[dict]:
    """Per rack (in rack order) every cable end in it, by RU then device then port."""
    racks = RackMap(fabric)
    lines: dict[str, list[dict]] = defaultdict(list)
    for cable in plan:
        for near, far in ((cable.a, cable.b), (cable.b, cable.a)):
            lines[near.rack].append({
                "ru": near.ru, "device": near.device, "port": near.port, "cable_id": cable.cable_id,
                "media": cable.media, "length": f"{cable.length_m:g}",
                "other": f"{far.rack} U{far.ru} {far.device} {far.port}",
            })
    return [{"name": r, "row": racks.row(r),
             "lines": sorted(lines[r], key=lambda l: (l["ru"], l["device"], _port_key(l["port"])))}
            for r in fabric.racks if lines[r]]


def _port_key(port: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in port.replace("/", " ").split()) or (0,)


def fabric_picture(fabric: Fabric, max_lines: int = 4000) -> str:
    """SVG: per plane and zone, spines (and cores) above leaves, leaf-spine links as lines."""
    groups = defaultdict(lambda: defaultdict(list))
    for s in fabric.switches:
        groups[(s.plane, s.zone)][s.role].append(s)
    box_w, gap, zone_gap = 10, 4, 40
    x0, parts, pos = 10, [], {}
    widths = []
    for key, roles in groups.items():
        width = max(len(v) for v in roles.values()) * (box_w + gap)
        widths.append((key, x0, width))
        for level, role in enumerate(("core", "spine", "leaf", "upper", "lower")):
            members = roles.get(role, [])
            if not members:
                continue
            y = {"core": 20, "spine": 80, "upper": 80, "leaf": 160, "lower": 160}[role]
            step = width / max(len(members), 1)
            for i, s in enumerate(members):
                x = x0 + i * step
                pos[s.index] = (x + box_w / 2, y)
                colour = {"leaf": "#4a90d9", "spine": "#d98c4a", "core": "#8c4ad9"}.get(role, "#4ad98c")
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{box_w}" height="12" fill="{colour}"><title>{s.name}</title></rect>')
        label = f"plane {key[0]} " if fabric.planes > 1 else ""
        parts.append(f'<text x="{x0}" y="200" font-size="12">{label}zone {key[1]}</text>')
        x0 += width + zone_gap
    c = fabric.cables
    links = [(int(a), int(b), int(k)) for a, b, k, ak in zip(c.a_dev, c.b_dev, c.kind, c.a_kind) if ak == 0]
    if len(links) <= max_lines:
        for a, b, k in links:
            (xa, ya), (xb, yb) = pos[a], pos[b]
            colour, w = ("#c00", 2) if k == 4 else ("#999", 0.3)
            parts.insert(0, f'<line x1="{xa:.1f}" y1="{ya}" x2="{xb:.1f}" y2="{yb + 12}" stroke="{colour}" stroke-width="{w}"/>')
    height = 210
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{x0}" height="{height}" viewBox="0 0 {x0} {height}">'
            + "".join(parts) + "</svg>")


def to_html(fabric: Fabric, plan: list[Cable]) -> str:
    site = fabric.model.cabling.site if fabric.model.cabling else ""
    return render("cabling/sheet.html.j2",
        fabric=fabric.name, total=len(plan), site=site, racks=rack_pages(fabric, plan), picture=fabric_picture(fabric))
