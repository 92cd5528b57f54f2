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
        key = natural_key(kind, r)
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
