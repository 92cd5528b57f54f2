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
"""

from __future__ import annotations

from string import ascii_uppercase

from .fabric import HOST


def row_letter(n: int) -> str:
    out = ""
    n += 1
    while n:
        n, r = divmod(n - 1, 26)
        out = ascii_uppercase[r] + out
    return out


def place_racks(d) -> None:
    m = d.model
    lay = m.layout
    first_port: dict[int, tuple] = {}
    for a_kind, a_dev, _, _, b_dev, b_port, *_ in d.cables:
        if a_kind == HOST:
            hp = d.ports[a_dev]
            b_dev, b_port = d.policy_port.get(a_dev, (b_dev, b_port))
            sw = d.switches[b_dev]
            first_port.setdefault(hp["node"], (sw["plane"], sw["index"], b_port))
    order = sorted(range(len(d.nodes)), key=lambda n: first_port[n])

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
    in_network = [s for s in d.switches if leaf_rack.get(s["index"]) is None]
    per = lay.switches_per_network_rack
    n_network = -(-len(in_network) // per)

    d.racks = []
    for seq in range(n_network + len(node_racks)):
        row, pos = divmod(seq, lay.racks_per_row)
        d.racks.append(lay.rack_name.format(row=row_letter(row), rack=pos + 1))
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
