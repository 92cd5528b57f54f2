"""Intent against NetBox's state: what to create, change and delete, by kind (Terraform's plan).

- create: a key the intent has and NetBox does not.  A new device's interfaces are listed too,
  marked `from the device type` (NetBox makes them from the type's templates);
- change: an object Loom owns (tagged `loom`) whose managed fields differ, with old → new per
  field: drift (edited by hand in NetBox) or a change of the model, either way apply sets it back
  to the model.  Status is set at creation only: technicians own it afterwards (they mark cables
  `connected`); tags other than Loom's are left alone (a device's partition tags are Loom's:
  `loom.netbox.partitions`);
- delete: an object Loom owns that the intent no longer has (site-scoped kinds in the fabric's
  site and IPAM objects of this fabric; shared kinds such as device types are never deleted);
- conflict: an object Loom does not own under a key Loom wants (a hand-made device of the same
  name, a cable on a port Loom cables).  It is named and never touched; apply refuses to start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .client import Client
from .intent import KINDS, Ref, site_slug
from .partitions import tag_changes
from .state import KIND_INFO, State, natural_key, owned, read_state

#: Fields set when an object is created and never compared afterwards.
CREATE_ONLY = {"status", "tags", "a_terminations", "b_terminations"}
#: Kinds a plan never deletes (shared by every fabric in the NetBox).
SHARED = {"tags", "sites", "manufacturers", "device_types", "interface_templates", "roles", "rirs"}


@dataclass
class Change:
    kind: str
    key: str
    action: str  # create | update | delete
    want: dict = field(default_factory=dict)  # create: the fields; update: field → (have, want)
    id: int | None = None
    from_template: bool = False  # an interface NetBox makes from its device type


@dataclass
class Plan:
    url: str
    site: str
    changes: list[Change]
    conflicts: list[str]
    state: State

    def of(self, action: str, kind: str | None = None) -> list[Change]:
        return [c for c in self.changes if c.action == action and (kind is None or c.kind == kind)]

    def counts(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for c in self.changes:
            out.setdefault(c.kind, {"create": 0, "update": 0, "delete": 0})[c.action] += 1
        return {k: out[k] for k in KINDS if k in out}

    @property
    def empty(self) -> bool:
        return not self.changes

    def as_json(self) -> dict:
        return {"netbox": self.url, "site": self.site, "counts": self.counts(), "conflicts": self.conflicts,
                "changes": [{"kind": c.kind, "key": c.key, "action": c.action,
                             **({"fields": {f: plain(v) for f, v in c.want.items()}} if c.action != "delete" else {}),
                             **({"from_template": True} if c.from_template else {})} for c in self.changes]}


def plain(v):
    if isinstance(v, Ref):
        return v.key
    if isinstance(v, tuple):
        return [plain(x) for x in v]
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def value(kind: str, f: str, have) -> object:
    """A NetBox field value in the intent's terms: a nested object as its natural key, a choice
    as its value, a number as float, a colour lower-case."""
    if isinstance(have, dict):
        if "value" in have and "label" in have:
            return have["value"]
        ref = _REF_KIND.get((kind, f))
        return natural_key(ref, have) if ref else have.get("id")
    if isinstance(have, (int, float)) and not isinstance(have, bool) and f in ("position", "length"):
        return float(have)
    if f == "color" and isinstance(have, str):
        return have.lower()
    return have


_REF_KIND = {("locations", "site"): "sites", ("racks", "site"): "sites", ("racks", "location"): "locations",
             ("device_types", "manufacturer"): "manufacturers", ("interface_templates", "device_type"): "device_types",
             ("devices", "device_type"): "device_types", ("devices", "role"): "roles", ("devices", "site"): "sites",
             ("devices", "location"): "locations", ("devices", "rack"): "racks", ("interfaces", "device"): "devices",
             ("asns", "rir"): "rirs", ("ip_addresses", "assigned_object"): "interfaces"}


def _want(f: str, v) -> object:
    if isinstance(v, Ref):
        return v.key
    if f in ("position", "length") and v is not None:
        return float(v)
    return v


def differences(kind: str, want: dict, have: dict) -> dict:
    """Managed field → (NetBox's value in the intent's terms, the intent's value as it is, a
    `Ref` unresolved) where they differ."""
    out = {}
    for f, v in want.items():
        if f in CREATE_ONLY:
            continue
        if f == "assigned_object_id":
            h, w = value(kind, "assigned_object", have.get("assigned_object")), v.key
        else:
            h, w = value(kind, f, have.get(f)), _want(f, v)
        if h != w and not (h in (None, "") and w in (None, "")):
            out[f] = (h, v)
    return out


def compare(intent: dict[str, dict[str, dict]], state: State, fabric_name: str) -> tuple[list[Change], list[str]]:
    changes, conflicts = [], []
    new_devices = set()
    owned_devices = {k for k, r in state.objects.get("devices", {}).items() if owned(r)}
    owned_types = {k for k, r in state.objects.get("device_types", {}).items() if owned(r)}
    for kind in KINDS:
        have_all = state.objects.get(kind, {})
        for key, want in intent[kind].items():
            have = have_all.get(key)
            if have is None:
                template = kind == "interfaces" and key.split("|")[0] in new_devices
                changes.append(Change(kind, key, "create", want, from_template=template))
                if kind == "devices":
                    new_devices.add(key)
            elif not _ours(kind, key, have, owned_devices, owned_types):
                if kind in ("interfaces", "interface_templates"):
                    continue  # its device (type) is the conflict, named once
                conflicts.append(f"{_what(kind)} {key} (id {have['id']}) exists in NetBox but is not Loom's (no "
                                 f"`loom` tag); fix: delete or rename it in NetBox, or tag it `loom` to hand it to Loom")
            else:
                diff = differences(kind, want, have) | tag_changes(kind, want, have)
                if diff:
                    changes.append(Change(kind, key, "update", diff, id=have["id"]))
        if kind in SHARED:
            continue
        for key, have in have_all.items():
            if key in intent[kind] or not _ours(kind, key, have, owned_devices, owned_types):
                continue
            if kind in ("asns", "prefixes", "ip_addresses") and not str(have.get("description", "")).startswith(
                    f"{fabric_name}:"):
                continue  # another fabric's
            if kind == "interfaces" and key.split("|")[0] not in intent["devices"]:
                continue  # goes with its device
            changes.append(Change(kind, key, "delete", id=have["id"]))
    return changes, conflicts


def _ours(kind: str, key: str, have: dict, owned_devices: set[str], owned_types: set[str]) -> bool:
    """Loom's: tagged `loom`; an interface (template) is Loom's when its device (type) is; the
    tag `loom` itself is Loom's."""
    if kind == "tags":
        return True
    if kind == "interfaces":
        return key.split("|")[0] in owned_devices
    if kind == "interface_templates":
        return key.split("|")[0] in owned_types
    return owned(have)


def _what(kind: str) -> str:
    return {"ip_addresses": "IP address", "device_types": "device type", "interface_templates": "interface template",
            "asns": "ASN", "rirs": "RIR"}.get(kind, kind.rstrip("s").replace("_", " ").replace("prefixe", "prefix"))


def make_plan(client: Client, fabric, intent: dict[str, dict[str, dict]]) -> Plan:
    kinds = [k for k in KINDS if intent[k] or KIND_INFO[k].site_scoped]
    state = read_state(client, site_slug(fabric), kinds)
    changes, conflicts = compare(intent, state, fabric.name)
    return Plan(client.url, site_slug(fabric), changes, conflicts, state)
