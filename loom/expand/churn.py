"""Physical churn between two expansions: what the floor and the subnet manager must redo.

The one source of `loom diff`'s cabling and churn sections and of `loom cabling diff`'s change
sheet, so the two always agree.  Everything is matched by name, never by index:
- devices (switches, nodes) by name: *moved* when their rack or RU differs;
- NIC ports by (node, `nic/port`): *re-cabled* when their switch port differs;
- cables: a node cable by its NIC end, a switch cable by its two switch ends.  Added, removed,
  or *re-pulled*: same cable, but an end is on another switch port or its device moved (the run,
  so perhaps the length and part, changes);
- LIDs (InfiniBand) and addresses (Ethernet: host /31 address, switch loopback) by their owner's
  name (NIC port, switch): *renumbered* when they differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .fabric import HOST, Fabric


@dataclass(frozen=True)
class CableChange:
    action: str  # add | remove | move
    old: int | None  # cable row in the old fabric
    new: int | None  # cable row in the new fabric
    text: str  # one line for `loom diff`
    node: str | None  # the node a node cable belongs to


@dataclass
class Churn:
    cables: list[CableChange] = field(default_factory=list)
    devices_moved: list[dict] = field(default_factory=list)  # {device, from: "A04 U31", to}
    ports_recabled: list[dict] = field(default_factory=list)  # {node, ca, port, from: "z0-leaf1/1", to}
    lids_renumbered: list[dict] = field(default_factory=list)  # {name, device, old, new}
    addresses_renumbered: list[dict] = field(default_factory=list)  # {name, device, old, new}

    def counts(self) -> dict:
        by = {a: sum(1 for c in self.cables if c.action == a) for a in ("add", "remove", "move")}
        return {"cables_added": by["add"], "cables_removed": by["remove"], "cables_repulled": by["move"],
                "devices_moved": len(self.devices_moved), "ports_recabled": len(self.ports_recabled),
                "lids_renumbered": len(self.lids_renumbered), "addresses_renumbered": len(self.addresses_renumbered)}

    def outside(self, intended: set[str]) -> dict:
        """Counts of the churn that touches something other than the `intended` nodes."""
        return {"devices_moved": sum(1 for x in self.devices_moved if x["device"] not in intended),
                "ports_recabled": sum(1 for x in self.ports_recabled if x["node"] not in intended),
                "cables_repulled": sum(1 for c in self.cables if c.action == "move" and c.node not in intended),
                "lids_renumbered": sum(1 for x in self.lids_renumbered if x["device"] not in intended),
                "addresses_renumbered": sum(1 for x in self.addresses_renumbered if x["device"] not in intended)}

    @property
    def recabled_cas(self) -> set[str]:
        return {x["ca"] for x in self.ports_recabled}


def _cables(f: Fabric) -> dict[tuple, tuple[int, tuple, tuple, str | None]]:
    """key → (row, end A (device, port), end B (device, port), node name)."""
    c = f.cables
    out = {}
    for i in range(len(c)):
        b = (f.switches[int(c.b_dev[i])].name, str(int(c.b_port[i])))
        if c.a_kind[i] == HOST:
            hp = f.ports[int(c.a_dev[i])]
            node = f.nodes[hp.node].name
            out[("host", node, f"{hp.nic}/{hp.port}")] = (i, (node, f"{hp.nic}/{hp.port}"), b, node)
        else:
            a = (f.switches[int(c.a_dev[i])].name, str(int(c.a_port[i])))
            out[("link",) + tuple(sorted([a, b]))] = (i, a, b, None)
    return out


def _places(f: Fabric) -> dict[str, tuple[str, int]]:
    return {d.name: (d.rack, d.ru) for d in (*f.switches, *f.nodes)}


def _text(key: tuple, a: tuple, b: tuple) -> str:
    if key[0] == "host":
        return f"{a[0]}-{a[1].split('/')[0]}/{a[1].split('/')[1]} -> {b[0]}/{b[1]}"
    (x, px), (y, py) = sorted([a, b])
    return f"{x}/{px} <-> {y}/{py}"


def churn(old: Fabric, new: Fabric) -> Churn:
    """What changes physically from `old` to `new` (see the module doc)."""
    out = Churn()
    po, pn = _places(old), _places(new)
    moved = set()
    for name in sorted(po.keys() & pn.keys()):
        if po[name] != pn[name]:
            out.devices_moved.append({"device": name, "from": f"{po[name][0]} U{po[name][1]}",
                                      "to": f"{pn[name][0]} U{pn[name][1]}"})
            moved.add(name)
    co, cn = _cables(old), _cables(new)
    for key in sorted(co.keys() - cn.keys()):
        i, a, b, node = co[key]
        out.cables.append(CableChange("remove", i, None, _text(key, a, b), node))
    for key in sorted(cn.keys() - co.keys()):
        i, a, b, node = cn[key]
        out.cables.append(CableChange("add", None, i, _text(key, a, b), node))
    for key in sorted(co.keys() & cn.keys()):
        (i, a0, b0, node), (j, a1, b1, _) = co[key], cn[key]
        if (a0, b0) != (a1, b1):
            ca = f"{node}-{a1[1].split('/')[0]}"
            out.ports_recabled.append({"node": node, "ca": ca, "port": a1[1],
                                       "from": f"{b0[0]}/{b0[1]}", "to": f"{b1[0]}/{b1[1]}"})
            out.cables.append(CableChange("move", i, j, f"{ca}/{a1[1].split('/')[1]}: {b0[0]}/{b0[1]} -> {b1[0]}/{b1[1]}", node))
        elif {a1[0], b1[0]} & moved:
            why = ", ".join(f"{x['device']} {x['from']} -> {x['to']}" for x in out.devices_moved if x["device"] in (a1[0], b1[0]))
            out.cables.append(CableChange("move", i, j, f"{_text(key, a1, b1)}: re-pulled ({why})", node))
    for kind, address in (("ports", "address"), ("switches", "loopback")):
        lo = {_id_key(x): x for x in getattr(old, kind)}
        ln = {_id_key(x): x for x in getattr(new, kind)}
        for k in sorted(lo.keys() & ln.keys()):
            device = new.nodes[ln[k].node].name if kind == "ports" else k
            for attr, into in (("lid", out.lids_renumbered), (address, out.addresses_renumbered)):
                a, b = getattr(lo[k], attr), getattr(ln[k], attr)
                if a != b:
                    into.append({"name": k, "device": device, "old": a, "new": b})
    return out


def _id_key(x) -> str:
    """A CA port by `ca/port`, a switch by name."""
    return f"{x.ca}/{x.port}" if hasattr(x, "ca") else x.name
