"""The as-built direction: what NetBox says is on the floor, in the lock file's terms.

- A leaf up-link cable whose NetBox status is not `connected` (or that NetBox lacks) becomes a
  `missing_links` entry of its zone; a switch whose device status is not `active` a
  `missing_switches` entry.  `loom check` and `loom route` then route around them (the lock's
  `as_built` joins the model's own entries when the fabric loads).
- What those fields cannot express is listed, not dropped silently: node cables, spine-core
  and inter-zone cables not connected, nodes not active.
- Serials, asset tags and MACs recorded on Loom's devices become the lock's `assets`; a port
  GUID recorded on a node's interface (NetBox's `wwn` field, EUI-64) replaces the lock's GUID
  for that port.  They reach the Ansible inventory (`loom inventory`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loom.expand import CABLE_KINDS, HOST, Fabric
from loom.expand.lockfile import Asset, Lock, LockedNode, ZoneAsBuilt
from loom.model.schema import MissingLink, MissingSwitch

from .client import Client
from .intent import cable_key, site_slug
from .state import read_kind, read_state


@dataclass
class AsBuilt:
    as_built: dict[str, ZoneAsBuilt]
    assets: dict[str, Asset]
    guids: dict[tuple[str, str], int]  # (node, nic/port) → port GUID recorded in NetBox
    not_expressed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # the missing links/switches, in words

    def lock(self, old: Lock) -> Lock:
        """`old` with this as-built state: `as_built` and `assets` replaced, GUIDs updated."""
        nodes = {}
        for name, n in old.nodes.items():
            ports = {k: p.model_copy(update={"guid": self.guids[(name, k)]}) if (name, k) in self.guids else p
                     for k, p in n.ports.items()}
            nodes[name] = LockedNode(rack=n.rack, ru=n.ru, ports=ports)
        return old.model_copy(update={"nodes": nodes, "as_built": self.as_built, "assets": self.assets})

    def differences(self, old: Lock) -> list[str]:
        """What writing this would change in the lock, in words."""
        out = []
        for zone in sorted(set(old.as_built) | set(self.as_built)):
            a, b = old.as_built.get(zone, ZoneAsBuilt()), self.as_built.get(zone, ZoneAsBuilt())
            for what, x, y in (("missing link", a.missing_links, b.missing_links),
                               ("missing switch", a.missing_switches, b.missing_switches)):
                out += [f"zone {zone}: + {what} {m.model_dump()}" for m in y if m not in x]
                out += [f"zone {zone}: - {what} {m.model_dump()} (back)" for m in x if m not in y]
        for dev in sorted(set(old.assets) | set(self.assets)):
            a, b = old.assets.get(dev), self.assets.get(dev)
            if a != b:
                out.append(f"{dev}: assets {a.model_dump(exclude_defaults=True) if a else {}} → "
                           f"{b.model_dump(exclude_defaults=True) if b else {}}")
        for (node, port), guid in sorted(self.guids.items()):
            lp = old.nodes.get(node).ports.get(port) if node in old.nodes else None
            if lp is not None and lp.guid != guid:
                out.append(f"{node} {port}: GUID {lp.guid:#018x} → {guid:#018x}")
        return out


def read_as_built(client: Client, fabric: Fabric) -> AsBuilt:
    """NetBox's view of `fabric` (its site): statuses, serials, asset tags, GUIDs, MACs."""
    state = read_state(client, site_slug(fabric), ["sites"])
    devices = read_kind(client, "devices", state.site_id)
    ifaces = read_kind(client, "interfaces", state.site_id)
    cables = read_kind(client, "cables", state.site_id)
    out = AsBuilt({}, {}, {})
    _cables(fabric, cables, out)
    _switches(fabric, devices, out)
    nodes = {n.name for n in fabric.nodes}
    for n in fabric.nodes:
        d = devices.get(n.name)
        if d is not None and (d.get("status") or {}).get("value", "active") != "active":
            out.not_expressed.append(f"node {n.name} is {d['status']['value']} in NetBox (routing keeps its LIDs)")
    for name, d in devices.items():
        if name not in nodes and name not in fabric.switch_index:
            continue
        macs = {}
        for key, i in ifaces.items():
            dev, port = key.split("|", 1)
            if dev != name:
                continue
            mac = i.get("mac_address")
            if mac:
                macs[port] = str(mac).lower()
            if i.get("wwn") and name in nodes:
                out.guids[(name, port)] = int(str(i["wwn"]).replace(":", "").replace("-", ""), 16)
        a = Asset(serial=d.get("serial") or None, asset_tag=d.get("asset_tag") or None, macs=macs)
        if a != Asset():
            out.assets[name] = a
    return out


def _cables(fabric: Fabric, cables: dict[str, dict], out: AsBuilt) -> None:
    c = fabric.cables
    zones = {z.name: z for z in fabric.model.zones}
    links: dict[str, list[MissingLink]] = {}
    for i in range(len(c)):
        sb = fabric.switches[int(c.b_dev[i])]
        if c.a_kind[i] == HOST:
            hp = fabric.ports[int(c.a_dev[i])]
            a = f"{fabric.nodes[hp.node].name}|{hp.nic}/{hp.port}"
        else:
            a = f"{fabric.switches[int(c.a_dev[i])].name}|{int(c.a_port[i])}"
        b = f"{sb.name}|{int(c.b_port[i])}"
        have = cables.get(cable_key(a, b))
        status = (have.get("status") or {}).get("value") if have else "not in NetBox"
        if status == "connected":
            continue
        kind = CABLE_KINDS[int(c.kind[i])]
        what = f"{a.replace('|', ' ')} <> {b.replace('|', ' ')} ({status})"
        if kind != "leaf-spine":
            out.not_expressed.append(f"{kind} cable {what} (routing still counts it)")
            continue
        sa = fabric.switches[int(c.a_dev[i])]
        zone = zones[sa.zone]
        links.setdefault(sa.zone, []).append(MissingLink(leaf=sa.edge, up_port=int(c.a_port[i]) - zone.leaf_down - 1))
        out.missing.append(f"zone {sa.zone}: missing link leaf {sa.edge} up-link "
                           f"{int(c.a_port[i]) - zone.leaf_down - 1}: {what}")
    for zone, ms in links.items():
        out.as_built[zone] = ZoneAsBuilt(missing_links=sorted(ms, key=lambda m: (m.leaf, m.up_port)))


def _switches(fabric: Fabric, devices: dict[str, dict], out: AsBuilt) -> None:
    for s in fabric.switches:
        d = devices.get(s.name)
        status = (d.get("status") or {}).get("value") if d else "not in NetBox"
        if status == "active":
            continue
        if s.role not in ("leaf", "spine", "core"):
            out.not_expressed.append(f"switch {s.name} is {status} (a {s.role} switch cannot be left out)")
            continue
        entry = MissingSwitch(role=s.role, index=s.position, plane=s.plane)
        zb = out.as_built.get(s.zone, ZoneAsBuilt())
        out.as_built[s.zone] = zb.model_copy(update={"missing_switches": [*zb.missing_switches, entry]})
        out.missing.append(f"zone {s.zone}: missing switch {s.role} {s.position} plane {s.plane}: {s.name} ({status})")
