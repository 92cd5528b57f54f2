"""Rack elevations (SVG, one per rack) and the colours the cabling documents share.

A rack is drawn front view, U1 at the bottom, every device at its RUs with its name; the fill
says where the device belongs (its zone, or plane on multi-plane fabrics: `group_colour`) and a
strip on the left what it is (`KIND_COLOURS`: leaf, spine, core, compute, storage, ...), so a
technician finds the leaf at the top of a node rack and the storage servers among the compute.
"""

from __future__ import annotations

from html import escape

from loom.expand import Fabric

#: Kind of device → colour of the strip on its left (switch roles, then node roles).
KIND_COLOURS = {
    "leaf": "#1f77b4", "spine": "#ff7f0e", "core": "#9467bd", "upper": "#17becf", "lower": "#bcbd22",
    "compute": "#2ca02c", "storage": "#d62728", "management": "#8c564b", "other": "#7f7f7f",
}
_GROUP_FILLS = ("#dbe9f6", "#fde2cc", "#d9f0d3", "#f2d7e8", "#e5e0f2", "#fff3bf", "#d6f0f0", "#eeeeee")
U_PX, WIDTH, LEFT = 11, 230, 28
NEW_MARK = ' <tspan fill="#2a9d2a" font-weight="bold">NEW</tspan>'


def group_colour(fabric: Fabric, zone: str, plane: int) -> str:
    """Fill for a zone (one plane) or a plane (several planes): the same in every drawing."""
    i = plane if fabric.planes > 1 else fabric.zones.index(zone)
    return _GROUP_FILLS[i % len(_GROUP_FILLS)]


def rack_devices(fabric: Fabric) -> dict[str, list[dict]]:
    """rack → devices in it: name, RU, height, kind, group (zone or plane), fill."""
    m = fabric.model
    out: dict[str, list[dict]] = {r: [] for r in fabric.racks}
    for s in fabric.switches:
        out[s.rack].append({"name": s.name, "ru": s.ru, "height": m.switch_models[s.model].height_u, "kind": s.role,
                            "group": f"plane {s.plane}" if fabric.planes > 1 else f"zone {s.zone}",
                            "fill": group_colour(fabric, s.zone, s.plane)})
    for n in fabric.nodes:
        zone, plane = n.zones[0], 0
        out[n.rack].append({"name": n.name, "ru": n.ru, "height": m.node_types[n.node_type].height_u, "kind": n.role,
                            "group": "all planes" if fabric.planes > 1 else "zone " + "+".join(n.zones),
                            "fill": "#ffffff" if len(n.zones) > 1 or fabric.planes > 1 else group_colour(fabric, zone, plane)})
    return out


def elevation_svg(fabric: Fabric, rack: str, devices: list[dict]) -> str:
    """Front view of one rack: RU numbers on the left, each device a box at its units (outlined
    green and marked NEW when its entry says `new`: what a change sheet installs)."""
    units = fabric.model.layout.rack_units
    height = units * U_PX + 30
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="elevation" width="{WIDTH + LEFT + 4}" height="{height}" '
             f'viewBox="0 0 {WIDTH + LEFT + 4} {height}" role="img" aria-label="rack {escape(rack)} elevation">',
             f'<text x="{LEFT}" y="12" font-size="11" font-weight="bold">Rack {escape(rack)}</text>',
             f'<rect x="{LEFT}" y="18" width="{WIDTH}" height="{units * U_PX}" fill="#fafafa" stroke="#333"/>']

    def top(ru: int, h: int) -> float:
        return 18 + (units - (ru + h - 1)) * U_PX

    for u in range(1, units + 1):
        parts.append(f'<text x="{LEFT - 3}" y="{top(u, 1) + U_PX - 2}" font-size="8" text-anchor="end" fill="#666">{u}</text>')
    for d in sorted(devices, key=lambda d: -d["ru"]):
        y, h = top(d["ru"], d["height"]), d["height"] * U_PX
        kind = KIND_COLOURS.get(d["kind"], "#7f7f7f")
        edge = 'stroke="#2a9d2a" stroke-width="2" class="new"' if d.get("new") else 'stroke="#555" stroke-width="0.5"'
        parts.append(f'<g class="device" data-ru="{d["ru"]}"><title>{escape(d["name"])}: U{d["ru"]}'
                     f'{"-U" + str(d["ru"] + d["height"] - 1) if d["height"] > 1 else ""}, {d["kind"]}, {escape(d["group"])}</title>'
                     f'<rect x="{LEFT + 1}" y="{y + 0.5:.1f}" width="{WIDTH - 2}" height="{h - 1}" fill="{d["fill"]}" {edge}/>'
                     f'<rect x="{LEFT + 1}" y="{y + 0.5:.1f}" width="8" height="{h - 1}" fill="{kind}"/>'
                     f'<text x="{LEFT + 13}" y="{y + min(h, 2 * U_PX) / 2 + 3:.1f}" font-size="9">{escape(d["name"])} '
                     f'<tspan fill="#666">{d["kind"]}</tspan>{NEW_MARK if d.get("new") else ""}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def legend_items(fabric: Fabric) -> list[tuple[str, str]]:
    """(colour, label) for the groups and kinds present in the fabric."""
    if fabric.planes > 1:
        groups = [(group_colour(fabric, fabric.zones[0], p), f"plane {p}") for p in range(fabric.planes)]
    else:
        groups = [(group_colour(fabric, z, 0), f"zone {z}") for z in fabric.zones]
    kinds = {s.role for s in fabric.switches} | {n.role for n in fabric.nodes}
    return groups + [(c, k) for k, c in KIND_COLOURS.items() if k in kinds]
