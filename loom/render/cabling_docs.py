"""The cabling plan as documents: XLSX (a sheet per row of racks, bill of materials, per-rack
bill of materials; numbers as numbers, autofilter, widths, print titles) and printable HTML (a
table of contents, a picture of the fabric with a legend, then per rack its elevation, its bill
of materials and every cable end in it, in walking order)."""

from __future__ import annotations

import io
from collections import defaultdict
from html import escape

from loom.expand import Fabric

from .cabling import COLUMNS, Cable, RackMap, bill_of_materials
from .elevation import KIND_COLOURS, elevation_svg, group_colour, legend_items, rack_devices
from .templates import render

NUMERIC = {"a_ru", "b_ru", "length_m", "run_m", "plane"}


def _cell(key: str, value: str):
    """Numbers as numbers (so a spreadsheet sums and sorts them), the rest as text."""
    if key in NUMERIC or (key in ("a_port", "b_port") and value.isdigit()):
        try:
            return int(value) if value.isdigit() else float(value)
        except ValueError:
            return value
    return value


def _sheet(ws, header: list[str], rows: list[list]) -> None:
    """Bold frozen header, autofilter, widths from the content, header repeated on every page."""
    from openpyxl.styles import Font
    from openpyxl.utils import get_column_letter

    ws.append(header)
    for r in rows:
        ws.append(r)
    for cell in ws[1]:
        cell.font = Font(bold=True)
    ws.freeze_panes = "A2"
    ws.auto_filter.ref = ws.dimensions
    ws.print_title_rows = "1:1"
    ws.page_setup.orientation = "landscape"
    ws.page_setup.fitToWidth = 1
    for i, col in enumerate(header, start=1):
        longest = max([len(str(col))] + [len(str(r[i - 1])) for r in rows[:2000]])
        ws.column_dimensions[get_column_letter(i)].width = min(60, longest + 2)


def rack_bom(fabric: Fabric, plan: list[Cable]) -> list[dict]:
    """Per rack (walking order): the parts pulled from it (cables counted at their end A)."""
    per: dict[str, list[Cable]] = defaultdict(list)
    for cable in plan:
        per[cable.a.rack].append(cable)
    return [{"rack": r, "items": bill_of_materials(per[r])} for r in fabric.racks if per[r]]


#: Row colours of a change: new cables, re-pulled ones (the same in HTML and XLSX).
CHANGE_FILLS = {"add": "d9f2d9", "move": "fff3bf", "remove": "f8d7da"}


def to_xlsx(fabric: Fabric, plan: list[Cable], change: dict | None = None) -> bytes:
    """The sheet; with `change` (`change_marks`) a first column `change` (add / move, coloured)
    on every row, only the changed cables when it says so, and a sheet `Removed`."""
    from openpyxl import Workbook
    from openpyxl.styles import PatternFill

    wb = Workbook()
    wb.remove(wb.active)
    marks = change["marks"] if change else {}
    plan = [c for c in plan if c.cable_id in marks] if change and change["only"] else plan
    header = ["change", *COLUMNS] if change else list(COLUMNS)
    by_row: dict[str, list[Cable]] = defaultdict(list)
    for cable in plan:
        by_row[cable.a.row].append(cable)
    for row in sorted(by_row, key=lambda r: (len(r), r)):
        rows = []
        for cable in by_row[row]:
            d = cable.row()
            rows.append(([marks.get(cable.cable_id, "")] if change else []) + [_cell(k, str(d[k])) for k in COLUMNS])
        ws = wb.create_sheet(f"Row {row}")
        _sheet(ws, header, rows)
        for r, line in enumerate(rows, start=2):
            if change and line[0]:
                for cell in ws[r]:
                    cell.fill = PatternFill("solid", fgColor=CHANGE_FILLS[line[0]])
    if change:
        from .cabling_diff import COLUMNS as DIFF_COLUMNS

        removed = [[l[k] for k in DIFF_COLUMNS] for l in change["lines"] if l["action"] == "remove"]
        _sheet(wb.create_sheet("Removed"), list(DIFF_COLUMNS), removed)
    bom_cols = ["item", "media", "speed", "length_m", "part_number", "count"]
    _sheet(wb.create_sheet("BOM"), bom_cols,
           [[_cell(k, str(r[k])) if k == "length_m" and r[k] != "" else r[k] for k in bom_cols]
            for r in bill_of_materials(plan)])
    _sheet(wb.create_sheet("Rack BOM"), ["rack", *bom_cols],
           [[b["rack"], *[_cell(k, str(r[k])) if k == "length_m" and r[k] != "" else r[k] for k in bom_cols]]
            for b in rack_bom(fabric, plan) for r in b["items"]])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def rack_pages(fabric: Fabric, plan: list[Cable], marks: dict[str, str] | None = None) -> list[dict]:
    """Per rack (in rack order) every cable end in it, by RU then device then port; with `marks`
    (cable ID → add / move) each line says its change."""
    racks = RackMap(fabric)
    lines: dict[str, list[dict]] = defaultdict(list)
    for cable in plan:
        for near, far in ((cable.a, cable.b), (cable.b, cable.a)):
            lines[near.rack].append({
                "ru": near.ru, "device": near.device, "port": near.port, "cable_id": cable.cable_id,
                "media": cable.media, "length": f"{cable.length_m:g}",
                "other": f"{far.rack} U{far.ru} {far.device} {far.port}",
                "change": (marks or {}).get(cable.cable_id, ""),
            })
    return [{"name": r, "row": racks.row(r),
             "lines": sorted(lines[r], key=lambda l: (l["ru"], l["device"], _port_key(l["port"])))}
            for r in fabric.racks if lines[r]]


def _port_key(port: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in port.replace("/", " ").split()) or (0,)


#: How the cabling sheet draws links: leaf-spine thin grey, inter-zone red arcs.
SHEET_LINKS = [("#999", 0.3, "", "leaf-spine link"), ("#c00", 1.5, "", "inter-zone link")]


def fabric_picture(fabric: Fabric, max_lines: int = 4000, link_style=None, link_legend=None) -> str:
    """SVG: per plane and zone, cores and spines above leaves, each switch labelled, leaf-spine
    links as thin lines, inter-zone links as red arcs between the leaves they join, a legend.

    `link_style(cable row)` → (stroke, width, dash, title) draws every link its own way (the
    check report colours each by its load), with `link_legend` [(stroke, width, dash, label)]
    in place of the sheet's two link kinds (`SHEET_LINKS`)."""
    groups = defaultdict(lambda: defaultdict(list))
    for s in fabric.switches:
        groups[(s.plane, s.zone)][s.role].append(s)
    box_w, gap, zone_gap = 10, 4, 40
    level = {"core": 40, "spine": 110, "upper": 110, "leaf": 200, "lower": 200}
    x0, parts, pos = 10, [], {}
    for key, roles in groups.items():
        width = max(len(v) for v in roles.values()) * (box_w + gap)
        fill = group_colour(fabric, key[1], key[0])
        parts.append(f'<rect x="{x0 - 4}" y="{level["core"] - 34}" width="{width + 8}" height="{level["leaf"] + 90 - level["core"]}" '
                     f'fill="{fill}" opacity="0.5"/>')
        for role in ("core", "spine", "leaf", "upper", "lower"):
            members = roles.get(role, [])
            y = level[role]
            step = width / max(len(members), 1)
            for i, s in enumerate(members):
                x = x0 + i * step
                pos[s.index] = (x + box_w / 2, y)
                parts.append(f'<rect x="{x:.1f}" y="{y}" width="{box_w}" height="12" fill="{KIND_COLOURS.get(role, "#7f7f7f")}">'
                             f'<title>{s.name}</title></rect>')
                ty, anchor = (y + 16, "end") if role in ("leaf", "lower") else (y - 3, "start")
                parts.append(f'<text font-size="7" text-anchor="{anchor}" transform="translate({x + box_w - 2:.1f},{ty}) rotate(-90)">'
                             f'{s.name}</text>')
        label = f"plane {key[0]} " if fabric.planes > 1 else ""
        parts.append(f'<text x="{x0}" y="{level["leaf"] + 110}" font-size="12">{label}zone {key[1]}</text>')
        x0 += width + zone_gap
    c = fabric.cables
    links = [(i, int(a), int(b), int(k)) for i, (a, b, k, ak) in enumerate(zip(c.a_dev, c.b_dev, c.kind, c.a_kind)) if ak == 0]
    lines, arcs = [], []
    for i, a, b, k in links:
        (xa, ya), (xb, yb) = pos[a], pos[b]
        names = f"{fabric.switches[a].name} - {fabric.switches[b].name}"
        if link_style is not None:
            stroke, width, dash, title = link_style(i)
        elif k == 4:
            stroke, width, dash, title = SHEET_LINKS[1][:3] + (f"inter-zone {names}",)
        else:
            stroke, width, dash, title = SHEET_LINKS[0][:3] + ("",)
        look = (f'stroke="{stroke}" stroke-width="{width}"' + (f' stroke-dasharray="{dash}"' if dash else "")
                + f' data-cable="{escape(fabric.cable_id(i))}"')
        tip = f"<title>{escape(title)}</title>" if title else ""
        if k == 4:  # inter-zone: leaf to leaf, an arc under the leaf labels
            arcs.append(f'<path d="M{xa:.1f},{ya + 12} Q{(xa + xb) / 2:.1f},{ya + 130} {xb:.1f},{yb + 12}" fill="none" '
                        f'{look}>{tip}</path>')
        elif link_style is not None or len(links) <= max_lines:
            lines.append((width, f'<line x1="{xa:.1f}" y1="{ya}" x2="{xb:.1f}" y2="{yb + 12}" {look}>{tip}</line>'))
    lines = [svg for _, svg in sorted(lines, key=lambda wl: wl[0])]  # the heavier, the later: marked links on top
    legend_y = level["leaf"] + 130
    items = [(KIND_COLOURS.get(r, "#7f7f7f"), r) for r in ("core", "spine", "leaf", "upper", "lower")
             if any(s.role == r for s in fabric.switches)]
    items += [(col, label) for col, label in legend_items(fabric) if label.startswith(("zone", "plane"))]
    legend = ['<g class="legend">']
    for i, (col, label) in enumerate(items):
        lx = 10 + i * 110
        legend.append(f'<rect x="{lx}" y="{legend_y}" width="12" height="12" fill="{col}" stroke="#555"/>'
                      f'<text x="{lx + 16}" y="{legend_y + 10}" font-size="11">{label}</text>')
    lx = 10 + len(items) * 110
    for k, (stroke, width, dash, label) in enumerate(link_legend or SHEET_LINKS):
        x = lx + k * 130
        legend.append(f'<line x1="{x}" y1="{legend_y + 6}" x2="{x + 20}" y2="{legend_y + 6}" stroke="{stroke}" '
                      f'stroke-width="{max(width, 1)}"' + (f' stroke-dasharray="{dash}"' if dash else "") + '/>'
                      f'<text x="{x + 24}" y="{legend_y + 10}" font-size="11">{escape(label)}</text>')
    legend.append("</g>")
    width = max(x0, lx + 130 * len(link_legend or SHEET_LINKS) + 20)
    height = legend_y + 24
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            + "".join(lines + parts + arcs + legend) + "</svg>")


def change_marks(old: Fabric, lines: list[dict], only: bool) -> dict:
    """What the sheets need of a change sheet (`cabling_diff.change_sheet`) from `old`: cable ID →
    add or move for the new cables and re-pulls, the lines themselves (removals are listed apart),
    the devices `old` does not have (to install), and whether to show the changed cables only."""
    have = {s.name for s in old.switches} | {n.name for n in old.nodes}
    return {"marks": {l["cable_id"]: l["action"] for l in lines if l["action"] != "remove"}, "lines": lines, "only": only,
            "have": have}


def to_html(fabric: Fabric, plan: list[Cable], change: dict | None = None) -> str:
    """The sheet; with `change` (`change_marks`) changed lines are marked (new, re-pulled), the
    removals listed, and with `only` just the racks and lines the change touches (and the bill
    of materials of what is pulled new)."""
    site = fabric.model.cabling.site if fabric.model.cabling else ""
    devices = rack_devices(fabric)
    for d in (x for rack in devices.values() for x in rack) if change else ():
        d["new"] = d["name"] not in change["have"]
    marks = change["marks"] if change else None
    if change and change["only"]:
        plan = [c for c in plan if c.cable_id in marks]
    boms = {b["rack"]: b["items"] for b in rack_bom(fabric, plan)}
    racks = [{**page, "elevation": elevation_svg(fabric, page["name"], devices[page["name"]]),
              "bom": boms.get(page["name"], []), "devices": len(devices[page["name"]])}
             for page in rack_pages(fabric, plan, marks)]
    counts = {a: sum(1 for l in change["lines"] if l["action"] == a) for a in CHANGE_FILLS} if change else {}
    return render("cabling/sheet.html.j2", fabric=fabric.name, total=len(plan), site=site, racks=racks,
                  picture=fabric_picture(fabric), legend=legend_items(fabric), change=change, counts=counts,
                  fills=CHANGE_FILLS, removed=[l for l in change["lines"] if l["action"] == "remove"] if change else [])
