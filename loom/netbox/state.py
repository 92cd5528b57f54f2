"""What NetBox holds now, read kind by kind with only the fields Loom compares (`?fields=`),
keyed by the same natural keys as the intent (`intent.py`).

Reads are scoped: global kinds (tags, manufacturers, device types and their templates, roles,
RIRs) and IPAM objects are read whole; site-scoped kinds (locations, racks, devices,
interfaces, cables) only in the fabric's site.  Every object read is kept, Loom's or not: an
object that is not Loom's but has the key of one Loom wants is a conflict (`plan.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .client import Client
from .intent import TAG

PAGE = 1000  # NetBox's default MAX_PAGE_SIZE


@dataclass(frozen=True)
class KindInfo:
    endpoint: str  # app.endpoint in pynetbox terms
    fields: str  # what to read (`?fields=`)
    site_scoped: bool = False


def _iface_fields(extra: str = "") -> str:
    return "id,device,name,type,tags" + extra


KIND_INFO = {
    "tags": KindInfo("extras.tags", "id,name,slug,color,description"),
    "sites": KindInfo("dcim.sites", "id,name,slug,status,tags"),
    "locations": KindInfo("dcim.locations", "id,name,slug,site,tags", True),
    "racks": KindInfo("dcim.racks", "id,name,site,location,u_height,status,tags", True),
    "manufacturers": KindInfo("dcim.manufacturers", "id,name,slug,tags"),
    "device_types": KindInfo("dcim.device_types", "id,manufacturer,model,slug,u_height,tags"),
    "interface_templates": KindInfo("dcim.interface_templates", "id,device_type,name,type"),
    "roles": KindInfo("dcim.device_roles", "id,name,slug,color,tags"),
    "devices": KindInfo("dcim.devices", "id,name,device_type,role,site,location,rack,position,face,status,serial,"
                        "asset_tag,tags", True),
    "interfaces": KindInfo("dcim.interfaces", "id,device,name,type,wwn,mac_address,tags", True),
    "cables": KindInfo("dcim.cables", "id,a_terminations,b_terminations,label,type,length,length_unit,color,status,tags",
                       True),
    "rirs": KindInfo("ipam.rirs", "id,name,slug,is_private,tags"),
    "asns": KindInfo("ipam.asns", "id,asn,rir,description,tags"),
    "prefixes": KindInfo("ipam.prefixes", "id,prefix,status,description,tags"),
    "ip_addresses": KindInfo("ipam.ip_addresses", "id,address,status,description,assigned_object_type,"
                             "assigned_object_id,assigned_object,tags"),
}


# ------------------------------------------------------------------------ the shape of a record
#: How each field Loom reads may look in NetBox's answer (null allowed everywhere but `id`): a
#: record that differs comes from something that is not NetBox, and is refused here rather than
#: met half-way through a plan as a KeyError.
_TEXT = ("name", "slug", "model", "color", "description", "label", "serial", "asset_tag", "wwn", "mac_address",
         "prefix", "address", "assigned_object_type", "display")
_NUMBER = ("u_height", "position", "length", "asn", "assigned_object_id")
_REF = ("device", "device_type", "role", "site", "location", "rack", "manufacturer", "rir", "assigned_object")
_CHOICE = ("status", "type", "face", "length_unit")  # {"value": ..., "label": ...}, or the value alone
_LISTS = ("tags", "a_terminations", "b_terminations")


def _is_ref(v) -> bool:
    return isinstance(v, dict) and isinstance(v.get("id"), int) and not isinstance(v.get("id"), bool) and all(
        isinstance(v.get(k), (str, type(None))) for k in ("name", "slug", "model") if k in v) and _is_ref_or_none(v.get("device"))


def _is_ref_or_none(v) -> bool:
    return v is None or (isinstance(v, dict) and all(isinstance(v.get(k), (str, int, type(None))) for k in ("id", "name")))


def _field_ok(name: str, v) -> bool:
    if v is None:
        return name != "id"
    if name == "id":
        return isinstance(v, int) and not isinstance(v, bool) and v > 0
    if name in _TEXT:
        return isinstance(v, str) and len(v) <= 4096
    if name in _NUMBER:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 2**63
    if name in _REF:
        return _is_ref(v)
    if name in _CHOICE:  # a choice is {"value", "label"} on most objects, a plain string on some (a cable's type)
        return isinstance(v, str) or isinstance(v, dict) and isinstance(v.get("value"), (str, int, float, type(None)))
    if name == "tags":
        return isinstance(v, list) and all(isinstance(x, dict) and isinstance(x.get("slug", ""), str) for x in v)
    if name in _LISTS:
        return isinstance(v, list) and all(isinstance(x, dict) and _is_ref_or_none(x.get("object")) for x in v)
    if name == "is_private":
        return isinstance(v, bool)
    return True


def check_record(client: Client, kind: str, r) -> dict:
    """`r` if it looks like a NetBox record of `kind` (the fields Loom reads, each of its type),
    else a NetBoxError naming the server, the kind, the record and the field."""
    from .client import NetBoxError

    needs = ("id", *[f for f in KIND_INFO[kind].fields.split(",") if f in ("name", "slug", "asn", "prefix", "address")])
    bad = "the record is not a mapping" if not isinstance(r, dict) else next(
        (f"{f}" for f in needs if not isinstance(r.get(f), (int, str)) or isinstance(r.get(f), bool)), None) or next(
        (f"{f}" for f in r if not _field_ok(f, r[f])), None)
    if bad is None:
        return r
    rid = r.get("id") if isinstance(r, dict) and isinstance(r.get("id"), int) else "?"
    raise NetBoxError(f"NetBox at {client.url} answered a {kind.replace('_', ' ')} record (id {rid}) that is not "
                      f"NetBox's: field {bad[:60]!r} is missing or of the wrong type; fix: check NETBOX_URL points at "
                      "NetBox 4.2 or newer itself (not a proxy or another service)")


def _end(t: dict) -> str:
    o = t.get("object") or {}
    return f"{(o.get('device') or {}).get('name')}|{o.get('name')}"


def natural_key(kind: str, r: dict) -> str:
    """The natural key of a NetBox record (a dict) of `kind`, as `intent.py` builds them."""
    if kind in ("racks", "devices"):
        return str(r["name"])
    if kind == "interface_templates":
        return f"{(r.get('device_type') or {}).get('slug')}|{r['name']}"
    if kind == "interfaces":
        return f"{(r.get('device') or {}).get('name')}|{r['name']}"
    if kind == "cables":
        from .intent import cable_key

        ends = [_end(t) for t in r.get("a_terminations") or []] + [_end(t) for t in r.get("b_terminations") or []]
        return cable_key(*ends) if len(ends) == 2 else f"cable #{r['id']} ({', '.join(ends)})"
    if kind == "asns":
        return str(r["asn"])
    if kind == "prefixes":
        return str(r["prefix"])
    if kind == "ip_addresses":
        return str(r["address"])
    return str(r["slug"])


def owned(r: dict) -> bool:
    return any((t or {}).get("slug") == TAG for t in r.get("tags") or [])


@dataclass
class State:
    """NetBox's objects by kind and natural key, and the fabric's site id (None: not there yet)."""

    objects: dict[str, dict[str, dict]] = field(default_factory=dict)
    site_id: int | None = None

    def id_of(self, kind: str, key: str) -> int | None:
        r = self.objects.get(kind, {}).get(key)
        return r["id"] if r else None


def endpoint(client: Client, kind: str):
    app, name = KIND_INFO[kind].endpoint.split(".")
    return getattr(getattr(client.api, app), name)


def read_kind(client: Client, kind: str, site_id: int | None, **filters) -> dict[str, dict]:
    info = KIND_INFO[kind]
    if info.site_scoped:
        if site_id is None:
            return {}
        filters["site_id"] = site_id
    records = client.call(lambda: [dict(r) for r in endpoint(client, kind).filter(limit=PAGE, fields=info.fields,
                                                                                   **filters)],
                          what=f"read {kind.replace('_', ' ')}")
    out: dict[str, dict] = {}
    for r in records:
        key = natural_key(kind, check_record(client, kind, r))
        if key in out and owned(out[key]) and not owned(r):
            continue  # two objects under one key: keep Loom's; the other is not ours to touch
        out[key] = r
    return out


def read_state(client: Client, site_slug: str, kinds) -> State:
    """Every kind of `kinds` as NetBox holds it (scoped to the site `site_slug`)."""
    st = State()
    for kind in kinds:
        st.objects[kind] = read_kind(client, kind, st.site_id)
        if kind == "sites":
            st.site_id = st.id_of("sites", site_slug)
    return st
