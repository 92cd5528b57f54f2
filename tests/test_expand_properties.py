"""Property tests: random valid fat-tree models expand to sound fabrics.

Invariants: every cable has two ends on existing ports; no port is used twice; switch, port
and cable counts match the closed-form formulas of the model; placement spreads each group
over leaves within one node of even.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from loom.expand import CABLE_KINDS, HOST, SWITCH, expand
from loom.model.rules import check_rules
from loom.model.schema import Model


@st.composite
def fat_tree_models(draw):
    ports = draw(st.integers(4, 24))
    spines = draw(st.integers(1, min(4, ports - 1)))
    links = draw(st.integers(1, min(3, (ports - 1) // spines)))
    leaf_up = spines * links
    leaf_down = draw(st.integers(1, ports - leaf_up))
    leaves = draw(st.integers(1, max(1, ports // links)))
    planes = draw(st.sampled_from([1, 1, 2, 3]))
    two_zones = planes == 1 and draw(st.booleans())
    zones = [{"name": f"z{i}", "kind": "fat-tree-2", "switch_model": "S", "leaves": leaves, "spines": spines,
              "leaf_down": leaf_down, "leaf_up": leaf_up} for i in range(2 if two_zones else 1)]
    capacity = leaves * leaf_down
    nics_per_plane = draw(st.integers(1, 2))
    nics = [{"name": f"n{i}", "root_complex": "rc0", "speed": "HDR"} for i in range(planes * nics_per_plane)]
    per_node = nics_per_plane if planes > 1 else len(nics)
    groups, used = [], 0
    for g in range(draw(st.integers(1, 3))):
        room = (capacity - used) // per_node
        if room < 1:
            break
        count = draw(st.integers(1, room))
        used += count * per_node
        groups.append({"name": f"g{g}", "node_type": "t", "role": draw(st.sampled_from(["compute", "storage"])),
                       "count": count, "zones": ["z0"], "placement": draw(st.sampled_from(["spread", "contiguous"])),
                       "name_pattern": f"g{g}-{{index}}"})
    assume(groups)
    if two_zones and groups and per_node % 2 == 0:
        groups[0]["zones"], groups[0]["homing"] = ["z0", "z1"], "dual"
    data = {
        "name": "prop", "technology": "infiniband",
        "switch_models": {"S": {"ports": ports, "speed": "HDR", "technology": "infiniband"}},
        "node_types": {"t": {"sockets": 1, "cores_per_numa": 4, "root_complexes": [{"name": "rc0", "numa": 0}], "nics": nics}},
        "zones": zones,
        "node_groups": groups,
    }
    if planes > 1:
        data["planes"] = {"count": planes}
    return Model.model_validate(data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fat_tree_models())
def test_expansion_invariants(model: Model):
    assert check_rules(model) == [], check_rules(model)
    f = expand(model)
    c = f.cables
    z0 = model.zones[0]
    P = model.plane_count
    nzones = len(model.zones)
    # counts match the formulas
    assert len(f.switches) == P * nzones * (z0.leaves + z0.spines)
    nic_ports = sum(g.count * model.node_types[g.node_type].nic_ports for g in model.node_groups)
    assert len(f.ports) == nic_ports
    assert len(c) == P * nzones * z0.leaves * z0.leaf_up + nic_ports
    assert Counter(c.kind.tolist())[CABLE_KINDS.index("host")] == nic_ports
    # both ends exist, no port used twice
    seen = set()
    for end in ("a", "b"):
        kinds, devs, ports = (getattr(c, f"{end}_{x}") for x in ("kind", "dev", "port"))
        for k, d, p in zip(kinds.tolist(), devs.tolist(), ports.tolist()):
            if k == SWITCH:
                assert 0 <= d < len(f.switches) and 1 <= p <= f.switches[d].ports
            else:
                assert k == HOST and 0 <= d < len(f.ports) and f.ports[d].port == p
            assert (k, d, p) not in seen
            seen.add((k, d, p))
    # every host port is cabled exactly once, to its own plane and zone
    host = c.kind == CABLE_KINDS.index("host")
    assert sorted(c.a_dev[host].tolist()) == list(range(len(f.ports)))
    for hp, sw in zip(c.a_dev[host].tolist(), c.b_dev[host].tolist()):
        assert f.switches[sw].plane == f.ports[hp].plane and f.switches[sw].zone == f.ports[hp].zone
        assert f.switches[sw].role == "leaf"
    # spread groups are even over leaves (±1) within each plane and zone
    for g in model.node_groups:
        if g.placement != "spread":
            continue
        members = {n.index for n in f.nodes if n.group == g.name}
        per_leaf = Counter(sw for hp, sw in zip(c.a_dev[host].tolist(), c.b_dev[host].tolist())
                           if f.ports[hp].node in members)
        for plane in range(P):
            for zone in g.zones:
                leaves = [s.index for s in f.switches if s.plane == plane and s.zone == zone and s.role == "leaf"]
                counts = [per_leaf.get(s, 0) for s in leaves]
                if g is model.node_groups[0]:  # the first group starts on empty leaves
                    assert max(counts) - min(counts) <= 1, counts
