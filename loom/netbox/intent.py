"""What NetBox should hold for a fabric: every object Loom owns, by kind and natural key.

A pure function of the expanded fabric and its cable plan (no network): `intent(fabric, plan)`
gives, for each kind in `KINDS` order (the order objects depend on each other), a mapping from
the object's natural key to the fields Loom sets.  A field naming another object holds a
`Ref(kind, key)`; `plan.py` resolves it to the NetBox id once that object exists.

Natural keys (what identifies an object in NetBox whatever its id): slug for sites, locations,
manufacturers, device types, roles, tags and RIRs; name for racks and devices; `device|name` for
interfaces, `device type|name` for interface templates; both ends for cables
(`cable_key`, order-free); the address for prefixes and IP addresses; the number for ASNs.

Names follow the cabling sheet (`loom cabling`): a switch port is its number (`16`), a NIC port
`nic/port` (`mlx5_0/1`); a cable's label is the sheet's cable ID and its two ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.expand import HOST, Fabric
from loom.model.racks import row_letter
from loom.model.schema import SPEEDS_GBPS
from loom.render.cabling import Cable

#: Kinds in dependency order: what a kind refers to comes before it.
KINDS = ("tags", "sites", "locations", "racks", "manufacturers", "device_types", "interface_templates", "roles",
         "devices", "interfaces", "cables", "rirs", "asns", "prefixes", "ip_addresses")

TAG = "loom"
#: NetBox interface types per Loom speed name.
INTERFACE_TYPES = {"EDR": "infiniband-edr", "HDR": "infiniband-hdr", "NDR": "infiniband-ndr", "XDR": "infiniband-xdr",
                   "100GbE": "100gbase-x-qsfp28", "200GbE": "200gbase-x-qsfp56", "400GbE": "400gbase-x-osfp",
                   "800GbE": "800gbase-x-osfp"}
#: NetBox cable types per catalogue medium (fibre by its type).
CABLE_TYPES = {"DAC": "dac-passive", "AOC": "aoc"}
FIBRE_TYPES = {"OM3": "mmf-om3", "OM4": "mmf-om4", "OM5": "mmf-om5", "OS1": "smf-os1", "OS2": "smf-os2"}
#: Cable colours, one per zone (InfiniBand) or plane (multi-plane Ethernet), in model order.
PALETTE = ("2f6eba", "e08a1e", "3c9d4e", "8e44ad", "c0392b", "16a085", "d4ac0d", "7f8c8d",
           "1abc9c", "e74c3c", "34495e", "f39c12", "27ae60", "9b59b6", "2980b9", "d35400")
ROLE_COLOURS = {"leaf": "2f6eba", "spine": "8e44ad", "core": "c0392b", "upper": "8e44ad", "lower": "2f6eba",
                "compute": "3c9d4e", "storage": "e08a1e", "management": "7f8c8d", "other": "95a5a6"}


@dataclass(frozen=True)
class Ref:
    """A reference to another object of the intent (or already in NetBox) by kind and natural key."""

    kind: str
    key: str


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", text.lower()).strip("-") or "x"


def cable_key(a: str, b: str) -> str:
    """A cable's natural key from its two ends (`device|interface`), whichever is A."""
    return " <> ".join(sorted((a, b)))


def site_slug(fabric: Fabric) -> str:
    m = fabric.model
    return slug(m.cabling.site if m.cabling else m.name)


def intent(fabric: Fabric, plan: list[Cable] | None, *, installed: bool = False) -> dict[str, dict[str, dict]]:
    """Every object Loom owns for `fabric`, by kind then natural key.  `plan` is the cable plan
    (label, media, length); without one (no `cabling:` section) cables carry only their ends.
    New devices are `active`, new cables `planned` (a technician marks them `connected`), or
    `connected` when `installed` (the fabric is on the floor already: a first sync)."""
    m = fabric.model
    out: dict[str, dict[str, dict]] = {k: {} for k in KINDS}
    tag = [Ref("tags", TAG)]
    out["tags"][TAG] = {"name": TAG, "slug": TAG, "color": "2f6eba",
                        "description": "owned by Loom: changed and deleted only by `loom netbox apply`"}
    site = site_slug(fabric)
    out["sites"][site] = {"name": m.cabling.site if m.cabling else m.name, "slug": site, "status": "active", "tags": tag}
    per_row = m.layout.racks_per_row
    rack_row = {}
    for i, rack in enumerate(fabric.racks):
        row = row_letter(i // per_row)
        loc = f"{site}-row-{slug(row)}"
        rack_row[rack] = loc
        out["locations"].setdefault(loc, {"name": f"Row {row}", "slug": loc, "site": Ref("sites", site), "tags": tag})
        out["racks"][rack] = {"name": rack, "site": Ref("sites", site), "location": Ref("locations", loc),
                              "u_height": m.layout.rack_units, "status": "active", "tags": tag}
    maker = "loom-generic"
    out["manufacturers"][maker] = {"name": "Generic (Loom)", "slug": maker, "tags": tag}
    _device_types(fabric, out, maker, tag)
    for s in fabric.switches:
        _device(out, s.name, slug(s.model), s.role, site, rack_row[s.rack], s.rack, s.ru, tag)
    for n in fabric.nodes:
        _device(out, n.name, slug(n.node_type), n.role, site, rack_row[n.rack], n.rack, n.ru, tag)
    for role in sorted({s.role for s in fabric.switches} | {n.role for n in fabric.nodes}):
        out["roles"][role] = {"name": role, "slug": role, "color": ROLE_COLOURS.get(role, "95a5a6"), "tags": tag}
    _cables(fabric, plan, out, installed, tag)
    if fabric.model.partitions:
        from .partitions import partition_tags

        tags, held = partition_tags(fabric)
        out["tags"] |= tags
        for node, slugs in held.items():
            out["devices"][node]["tags"] = tag + [Ref("tags", s) for s in slugs]
    if fabric.technology == "ethernet":
        _ipam(fabric, out, tag)
    return out


def _device_types(fabric: Fabric, out: dict, maker: str, tag: list) -> None:
    """One device type per switch model (ports 1..n) and per node type (one interface per NIC
    port); NetBox creates a device's interfaces from its type's templates."""
    m = fabric.model
    types: dict[str, tuple[str, int, list[tuple[str, str]]]] = {}
    for name, sm in m.switch_models.items():
        types[slug(name)] = (name, sm.height_u, [(str(p), INTERFACE_TYPES[sm.speed]) for p in range(1, sm.ports + 1)])
    for name, nt in m.node_types.items():
        ifaces = [(f"{nic.name}/{p}", INTERFACE_TYPES[nic.speed]) for nic in nt.nics for p in range(1, nic.ports + 1)]
        types[slug(name)] = (name, nt.height_u, ifaces)
    used = {slug(s.model) for s in fabric.switches} | {slug(n.node_type) for n in fabric.nodes}
    for dt, (model, height, ifaces) in types.items():
        if dt not in used:
            continue
        out["device_types"][dt] = {"manufacturer": Ref("manufacturers", maker), "model": model, "slug": dt,
                                   "u_height": height, "tags": tag}
        for name, kind in ifaces:
            out["interface_templates"][f"{dt}|{name}"] = {"device_type": Ref("device_types", dt), "name": name,
                                                          "type": kind}


def _device(out: dict, name: str, dt: str, role: str, site: str, loc: str, rack: str, ru: int, tag: list) -> None:
    out["devices"][name] = {"name": name, "device_type": Ref("device_types", dt), "role": Ref("roles", role),
                            "site": Ref("sites", site), "location": Ref("locations", loc), "rack": Ref("racks", rack),
                            "position": ru, "face": "front", "status": "active", "tags": tag}


def _interfaces(out: dict) -> None:
    """Fill `out["interfaces"]`: every device gets its type's templates (what NetBox creates)."""
    by_type: dict[str, list[dict]] = {}
    for t in out["interface_templates"].values():
        by_type.setdefault(t["device_type"].key, []).append(t)
    for name, d in out["devices"].items():
        for t in by_type.get(d["device_type"].key, []):
            out["interfaces"][f"{name}|{t['name']}"] = {"device": Ref("devices", name), "name": t["name"],
                                                        "type": t["type"]}


def _cables(fabric: Fabric, plan: list[Cable] | None, out: dict, installed: bool, tag: list) -> None:
    _interfaces(out)
    status = "connected" if installed else "planned"
    colour_by = "plane" if fabric.planes > 1 else "zone"
    colour = {z: PALETTE[i % len(PALETTE)] for i, z in enumerate(fabric.zones)} if colour_by == "zone" \
        else {p: PALETTE[p % len(PALETTE)] for p in range(fabric.planes)}
    rows = plan if plan is not None else _bare_plan(fabric)
    for c in rows:
        a, b = f"{c.a.device}|{c.a.port}", f"{c.b.device}|{c.b.port}"
        obj = {"a_terminations": [Ref("interfaces", a)], "b_terminations": [Ref("interfaces", b)],
               "label": c.cable_id, "color": colour[c.zone if colour_by == "zone" else c.plane],
               "status": status, "tags": tag}
        if c.media:
            obj |= {"type": CABLE_TYPES.get(c.media) or FIBRE_TYPES.get(c.fiber[:3].upper(), "mmf"),
                    "length": float(c.length_m), "length_unit": "m"}
        out["cables"][cable_key(a, b)] = obj


def _bare_plan(fabric: Fabric) -> list[Cable]:
    """Cables with ends only, for a model without a `cabling:` section (no catalogue)."""
    from loom.render.cabling import End

    c, out = fabric.cables, []
    ethernet = fabric.technology == "ethernet"
    speed = {v: k for k, v in SPEEDS_GBPS.items() if k.endswith("GbE") == ethernet}
    for i in range(len(c)):
        sb = fabric.switches[int(c.b_dev[i])]
        b = End("", "", sb.rack, sb.ru, sb.name, str(int(c.b_port[i])))
        if c.a_kind[i] == HOST:
            hp = fabric.ports[int(c.a_dev[i])]
            a = End("", "", "", 0, fabric.nodes[hp.node].name, f"{hp.nic}/{hp.port}")
            cid = f"{sb.name}/{int(c.b_port[i])}"
        else:
            sa = fabric.switches[int(c.a_dev[i])]
            a = End("", "", sa.rack, sa.ru, sa.name, str(int(c.a_port[i])))
            cid = f"{sa.name}/{int(c.a_port[i])}"
        out.append(Cable(cid, cid, a, b, "", speed[int(c.speed_gbps[i])], "", 0.0, "", "", "", int(c.plane[i]),
                         sb.zone, 0.0, i))
    return out


def _ipam(fabric: Fabric, out: dict, tag: list) -> None:
    """RoCE addressing: a private RIR, the fabric's ASNs, every /31 as a prefix and both its
    addresses on their interfaces, every loopback as a /32."""
    rir = "loom-private"
    out["rirs"][rir] = {"name": "Private (Loom)", "slug": rir, "is_private": True, "tags": tag}
    who = f"{fabric.name}:"
    for s in fabric.switches:
        if s.asn is not None:
            out["asns"].setdefault(str(s.asn), {"asn": s.asn, "rir": Ref("rirs", rir), "tags": tag,
                                                "description": f"{who} {s.role} ASN"})
        if s.loopback:
            addr = s.loopback if "/" in s.loopback else f"{s.loopback}/32"
            out["ip_addresses"][addr] = {"address": addr, "status": "active", "description": f"{who} loopback of {s.name}",
                                         "tags": tag}
    c = fabric.cables
    for cable in _bare_plan(fabric):
        i = cable.index
        if not int(c.subnet[i]):
            continue
        base = c.address(i, "b")
        out["prefixes"][f"{base}/31"] = {"prefix": f"{base}/31", "status": "active", "tags": tag,
                                         "description": f"{who} {cable.cable_id}"}
        for end, e in (("a", cable.a), ("b", cable.b)):
            addr = f"{c.address(i, end)}/31"
            out["ip_addresses"][addr] = {"address": addr, "status": "active", "description": f"{who} {e.device} {e.port}",
                                         "assigned_object_type": "dcim.interface",
                                         "assigned_object_id": Ref("interfaces", f"{e.device}|{e.port}"), "tags": tag}
