"""Physical placement: which rack and rack unit (RU) every switch and node occupies.

The rule (documented for the cabling sheets):
- node racks hold nodes ordered by where their first NIC port is cabled by the placement policy
  (plane, leaf, port; a pinned node keeps the rack its policy port gives it, so pinning
  re-cables a node without moving any node), stacked from RU 1 upwards; a rack is closed when the next node would reach into the
  top `leaf_units_per_node_rack` units, which are kept for leaves;
- a leaf goes to the top of the node rack that holds its first node, while that rack has leaf
  units left; other leaves, spines and cores go to network racks, `switches_per_network_rack`
  each, from the top unit down;
- racks are numbered network racks first, then node racks; `racks_per_row` racks make a row,
  rows are lettered A, B, ..., Z, AA, ... and racks are named by `layout.rack_name`.

With a lock file (`place_locked`), locked devices keep their rack and RU and the rack list is the
lock's; a new node goes to the lowest free units (below the leaf units) of the node rack nearest
(in rack order) to the rack holding its first leaf, else of a new rack added at the end; a new
leaf to the top units of its first node's rack, else like spines and cores to the highest free
slot of the first network rack (a rack holding no node) with room, else of a new rack.  A new
leaf whose first node is new too (a new node group) places that node first: in the last rack
holding nodes when it has room for the node and the leaf, else in a new rack, so the leaf sits
on top of its nodes and not in the spine rack.  The units of devices the change removes stay
taken until `loom lock` rewrites the file.

A group with `racks: [H01, H02]` puts its nodes (those the lock does not place) into those racks,
in the order given, lowest free units first; racks the floor does not have yet are added up to
them.  Its new leaves then go on top of their first node's rack like any new leaf.  Without a
lock the same pass places such groups after everything else (`_place_new`).
"""

from __future__ import annotations

import numpy as np

from loom.model.racks import rack_name, rack_seq

from loom.model.errors import ModelError, Problem

from .fabric import HOST
from .lockfile import lock_error


def _first_ports(d) -> dict[int, tuple]:
    """node → (plane, switch index, port) of its first NIC port as the placement policy cabled it."""
    first_port: dict[int, tuple] = {}
    for a_kind, a_dev, _, _, b_dev, b_port, *_ in d.cables:
        if a_kind == HOST:
            hp = d.ports[a_dev]
            b_dev, b_port = d.policy_port.get(a_dev, (b_dev, b_port))
            sw = d.switches[b_dev]
            first_port.setdefault(hp["node"], (sw["plane"], sw["index"], b_port))
    return first_port


def place_racks(d) -> None:
    if d.lock is not None:
        place_locked(d)
        return
    m = d.model
    lay = m.layout
    first_port = _first_ports(d)
    held = {g.name for g in m.node_groups if g.racks}  # placed last, into their racks
    order = sorted((n for n in range(len(d.nodes)) if d.nodes[n]["group"] not in held), key=lambda n: first_port[n])

    node_racks: list[list[int]] = []  # rack → node indices
    ru = lay.rack_units + 1  # force a new rack for the first node
    limit = lay.rack_units - lay.leaf_units_per_node_rack
    node_rack_of: dict[int, int] = {}
    for n in order:
        h = m.node_types[d.nodes[n]["node_type"]].height_u
        if ru + h - 1 > limit:
            node_racks.append([])
            ru = 1
        d.nodes[n]["ru"] = ru
        node_rack_of[n] = len(node_racks) - 1
        node_racks[-1].append(n)
        ru += h

    # leaves at the top of the rack holding their first node
    leaf_rack: dict[int, tuple[int, int]] = {}
    top_free = [lay.rack_units] * len(node_racks)
    for n in order:
        sw = d.switches[first_port[n][1]]
        if sw["index"] in leaf_rack:
            continue
        r = node_rack_of[n]
        h = m.switch_models[sw["model"]].height_u
        if top_free[r] - h + 1 > limit:
            leaf_rack[sw["index"]] = (r, top_free[r] - h + 1)
            top_free[r] -= h
        else:
            leaf_rack[sw["index"]] = None  # no room: goes to a network rack
    held_leaves = {first_port[n][1] for n in range(len(d.nodes)) if d.nodes[n]["group"] in held} - set(leaf_rack)
    in_network = [s for s in d.switches if leaf_rack.get(s["index"]) is None and s["index"] not in held_leaves]
    per = lay.switches_per_network_rack
    n_network = -(-len(in_network) // per)

    d.racks = [rack_name(lay, seq) for seq in range(n_network + len(node_racks))]
    for k, s in enumerate(in_network):
        r, slot = divmod(k, per)
        h = m.switch_models[s["model"]].height_u
        s["rack"], s["ru"] = d.racks[r], lay.rack_units - (slot + 1) * h + 1
    for idx, placed in leaf_rack.items():
        if placed is not None:
            r, ru = placed
            d.switches[idx]["rack"], d.switches[idx]["ru"] = d.racks[n_network + r], ru
    for n, r in node_rack_of.items():
        d.nodes[n]["rack"] = d.racks[n_network + r]
    if held:
        racks = _Racks(d, d.racks)
        for dev, h in [(n, m.node_types[n["node_type"]].height_u) for n in d.nodes if "rack" in n] + \
                      [(x, m.switch_models[x["model"]].height_u) for x in d.switches if "rack" in x]:
            racks.put(racks.index[dev["rack"]], dev["ru"], h)
            racks.holds_nodes[racks.index[dev["rack"]]] |= "node_type" in dev
        _place_new(d, racks, [n for n in d.nodes if "rack" not in n],
                   [x for x in d.switches if "rack" not in x], first_port)
        d.racks = racks.names


class _Racks:
    """Unit occupancy of every rack: [rack, RU] taken, RU 1 at the bottom."""

    def __init__(self, d, names: list[str]) -> None:
        self.d, self.lay = d, d.model.layout
        self.names = list(names)
        self.taken = np.zeros((len(self.names), self.lay.rack_units + 1), dtype=bool)
        self.taken[:, 0] = True
        self.holds_nodes = np.zeros(len(self.names), dtype=bool)
        self.index = {n: i for i, n in enumerate(self.names)}

    def occupy(self, rack: str, ru: int, h: int, who: str, path: str) -> bool:
        """Take a locked place; False if the rack is gone or the units do not exist."""
        r = self.index.get(rack)
        if r is None or ru + h - 1 > self.lay.rack_units:
            return False
        if self.taken[r, ru:ru + h].any():
            raise lock_error(self.d.lock_file, path, f"{who} overlaps another device in rack {rack} at U{ru}..U{ru + h - 1}")
        self.taken[r, ru:ru + h] = True
        return True

    def free_slot(self, r: int, h: int, lo: int, hi: int, top_down: bool) -> int | None:
        """Lowest (or highest) RU u in [lo, hi] with units u..u+h-1 free in rack r."""
        starts = range(hi - h + 1, lo - 1, -1) if top_down else range(lo, hi - h + 2)
        return next((u for u in starts if not self.taken[r, u:u + h].any()), None)

    def add_rack(self) -> int:
        self.names.append(rack_name(self.lay, len(self.names)))
        self.taken = np.vstack([self.taken, np.zeros((1, self.lay.rack_units + 1), dtype=bool)])
        self.taken[-1, 0] = True
        self.holds_nodes = np.append(self.holds_nodes, False)
        self.index[self.names[-1]] = len(self.names) - 1
        return len(self.names) - 1

    def put(self, r: int, u: int, h: int) -> tuple[str, int]:
        self.taken[r, u:u + h] = True
        return self.names[r], u


def place_locked(d) -> None:
    """Locked devices where the lock has them; new ones in free units (see the module doc)."""
    m, lock = d.model, d.lock
    racks = _Racks(d, lock.racks)
    present = {n["name"] for n in d.nodes} | {s["name"] for s in d.switches}
    node_h = {n["index"]: m.node_types[n["node_type"]].height_u for n in d.nodes}
    sw_h = {s["index"]: m.switch_models[s["model"]].height_u for s in d.switches}
    new_nodes, new_switches = [], []
    for n in d.nodes:
        ln = lock.nodes.get(n["name"])
        if ln and racks.occupy(ln.rack, ln.ru, node_h[n["index"]], n["name"], f"nodes.{n['name']}"):
            n["rack"], n["ru"] = ln.rack, ln.ru
            racks.holds_nodes[racks.index[ln.rack]] = True
        else:
            new_nodes.append(n)
    for s in d.switches:
        ls = lock.switches.get(s["name"])
        if ls and racks.occupy(ls.rack, ls.ru, sw_h[s["index"]], s["name"], f"switches.{s['name']}"):
            s["rack"], s["ru"] = ls.rack, ls.ru
        else:
            new_switches.append(s)
    held = [(n, x) for n, x in (*lock.nodes.items(), *lock.switches.items()) if n not in present]
    for name, x in held:  # removed in this change: its first unit stays taken (the lock has no heights)
        racks.occupy(x.rack, x.ru, 1, name, name)
    _place_new(d, racks, new_nodes, new_switches, _first_ports(d))
    d.racks = racks.names


def _place_new(d, racks: _Racks, new_nodes: list[dict], new_switches: list[dict], first_port: dict) -> None:
    """Place what has no place yet (see the module doc): nodes of groups with `racks:`, then
    switches (a new leaf on top of its first node, placing that node first when it is new too),
    then the other nodes near their leaf."""
    m, lay = d.model, d.model.layout
    limit = lay.rack_units - lay.leaf_units_per_node_rack
    node_h = {n["index"]: m.node_types[n["node_type"]].height_u for n in d.nodes}
    in_racks = _group_racks(d, racks)
    for n in new_nodes:
        if n["group"] in in_racks:
            _into_group_racks(d, racks, n, node_h[n["index"]], *in_racks[n["group"]])
    for s in new_switches:
        h = m.switch_models[s["model"]].height_u
        first = next((n for n, fp in first_port.items() if fp[1] == s["index"]), None)
        slot = None
        if s["edge"] is not None and first is not None:
            if "rack" not in d.nodes[first]:
                _with_new_leaf(racks, d.nodes[first], node_h[first], h, limit)
            r = racks.index[d.nodes[first]["rack"]]
            u = racks.free_slot(r, h, limit + 1, lay.rack_units, top_down=True)
            slot = (r, u) if u is not None else None
        if slot is None:
            slot = _network_slot(racks, h)
        s["rack"], s["ru"] = racks.put(*slot, h)
    for n in new_nodes:
        if "rack" in n:
            continue
        h = node_h[n["index"]]
        near = racks.index[d.switches[first_port[n["index"]][1]]["rack"]]
        candidates = sorted((r for r in range(len(racks.names)) if racks.holds_nodes[r]), key=lambda r: (abs(r - near), r))
        slot = next(((r, u) for r in candidates for u in [racks.free_slot(r, h, 1, limit, top_down=False)]
                     if u is not None), None)
        if slot is None:
            slot = (racks.add_rack(), 1)
            racks.holds_nodes[slot[0]] = True
        n["rack"], n["ru"] = racks.put(*slot, h)


def _group_racks(d, racks: _Racks) -> dict[str, tuple[int, list[int]]]:
    """group → (its index in the model, the rack rows its `racks:` names), adding the racks the
    floor does not have yet (the names were checked by `loom.model.racks.group_racks`)."""
    out = {}
    for i, g in enumerate(d.model.node_groups):
        if not g.racks:
            continue
        rows = []
        for name in g.racks:
            while name not in racks.index and len(racks.names) <= rack_seq(racks.lay, name):
                racks.add_rack()
            rows.append(racks.index[name])
        out[g.name] = (i, rows)
    return out


def _into_group_racks(d, racks: _Racks, n: dict, h: int, group: int, rows: list[int]) -> None:
    limit = racks.lay.rack_units - racks.lay.leaf_units_per_node_rack
    slot = next(((r, u) for r in rows for u in [racks.free_slot(r, h, 1, limit, top_down=False)] if u is not None), None)
    if slot is None:
        names = d.model.node_groups[group].racks
        raise ModelError("", [Problem(f"node_groups[{group}].racks", f"racks {', '.join(names)} have no {h} free units "
                                      f"below the leaf units left for node {n['name']}",
                                      "list more racks for the group (or racks with room)", loc=("node_groups", group, "racks"))])
    racks.holds_nodes[slot[0]] = True
    n["rack"], n["ru"] = racks.put(*slot, h)


def _with_new_leaf(racks: _Racks, n: dict, h: int, leaf_h: int, limit: int) -> None:
    """A new node whose leaf is new too: into the last rack holding nodes if it has room for the
    node below the leaf units and for the leaf above them, else into a new rack."""
    units = racks.lay.rack_units
    last = max((r for r in range(len(racks.names)) if racks.holds_nodes[r]), default=None)
    u = None
    if last is not None and racks.free_slot(last, leaf_h, limit + 1, units, top_down=True) is not None:
        u = racks.free_slot(last, h, 1, limit, top_down=False)
    r = last if u is not None else racks.add_rack()
    racks.holds_nodes[r] = True
    n["rack"], n["ru"] = racks.put(r, u if u is not None else 1, h)


def _network_slot(racks: _Racks, h: int) -> tuple[int, int]:
    """Highest free units of the first rack holding no node, else of a new rack."""
    for r in range(len(racks.names)):
        if not racks.holds_nodes[r]:
            u = racks.free_slot(r, h, 1, racks.lay.rack_units, top_down=True)
            if u is not None:
                return r, u
    r = racks.add_rack()
    return r, racks.free_slot(r, h, 1, racks.lay.rack_units, top_down=True)
