"""Expansion of the reference fabrics: the counts the issue names, identities, determinism."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import CABLE_KINDS, HOST, SWITCH, expand
from loom.model import load_model
from loom.render.fabric_json import fabric_json

TOPO = Path(__file__).parent.parent / "topology"
runner = CliRunner()


def show_json(name: str) -> dict:
    result = runner.invoke(app, ["show", str(TOPO / f"{name}.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_fire_flyer_show_json():
    s = show_json("fire-flyer-2")
    assert s["switches"] == 120
    for z in ("z0", "z1"):
        zone = s["zones"][z]
        assert zone["switches"] == 60
        assert zone["switches_by_role"] == {"leaf": 40, "spine": 20}
        assert zone["leaf_down_ports"] == 800
        assert zone["nodes_by_role"]["compute"] == 600
        assert zone["nodes_by_role"]["storage"] == 180
    st = s["dual_homed"]["storage"]
    assert st["nodes"] == 180 and st["nodes_with_port_in_every_zone"] == 180
    assert st["ports_per_zone"] == {"z0": 180, "z1": 180}
    assert s["gpus"] == 1200 * 8


def test_roce_4plane_gives_32768_gpus():
    s = show_json("roce-4plane")
    assert s["gpus"] == 32768
    assert s["nic_ports"] == 32768
    for p in map(str, range(4)):
        assert s["planes"][p]["nic_ports"] == 8192  # 128²/2 per plane
        assert s["planes"][p]["switches_by_role"] == {"leaf": 128, "spine": 64}
    assert s["capacity"]["free"] == 0


def test_every_node_has_two_nics_per_plane_on_different_leaves():
    f = expand(load_model(TOPO / "roce-4plane.yaml"))
    c = f.cables
    host = np.flatnonzero(c.kind == CABLE_KINDS.index("host"))
    leaf_of_port = dict(zip(c.a_dev[host].tolist(), c.b_dev[host].tolist()))
    per = Counter()
    for p in f.ports[:800]:
        per[(p.node, p.plane)] += 1
    assert set(per.values()) == {2}
    for node in range(100):
        ports = [p for p in f.ports if p.node == node]
        for plane in range(4):
            leaves = {leaf_of_port[p.index] for p in ports if p.plane == plane}
            assert len(leaves) == 2


def test_c4_dual_port_nics_reach_two_leaves_left_on_even():
    f = expand(load_model(TOPO / "c4-dualport.yaml"))
    c = f.cables
    sw_of = {int(a): int(b) for a, b, k in zip(c.a_dev, c.b_dev, c.a_kind) if k == HOST}
    by_nic = {}
    for p in f.ports:
        by_nic.setdefault((p.node, p.nic), {})[p.port] = f.switches[sw_of[p.index]].position
    for leaves in by_nic.values():
        assert leaves[1] != leaves[2]
        assert leaves[1] % 2 == 0 and leaves[2] % 2 == 1


def test_bigraph_complete_bipartite():
    f = expand(load_model(TOPO / "eflops-bigraph.yaml"))
    c = f.cables
    bg = c.kind == CABLE_KINDS.index("bigraph")
    pairs = {(int(a), int(b)) for a, b in zip(c.a_dev[bg], c.b_dev[bg])}
    assert len(pairs) == 8 * 8 == np.count_nonzero(bg)
    for a, b in pairs:
        assert f.switches[a].role == "lower" and f.switches[b].role == "upper"


def test_spread_placement_balances_each_role_over_leaves():
    f = expand(load_model(TOPO / "fire-flyer-2.yaml"))
    c = f.cables
    host = np.flatnonzero(c.kind == CABLE_KINDS.index("host"))
    per_leaf = Counter()
    for i in host:
        p = f.ports[c.a_dev[i]]
        per_leaf[(p.zone, f.nodes[p.node].role, int(c.b_dev[i]))] += 1
    border = {f.switch_index[f"{z}-leaf39"] for z in ("z0", "z1")}  # 4 of its ports go to inter-zone links
    for zone in ("z0", "z1"):
        for role, expect in (("compute", {15}), ("storage", {4, 5})):
            counts = {v for (z, r, leaf), v in per_leaf.items() if z == zone and r == role and leaf not in border}
            assert counts == expect, (zone, role, counts)


@pytest.mark.parametrize("name", ["tiny", "fire-flyer-2", "eflops-bigraph", "fat-tree-3", "c4-dualport"])
def test_same_model_byte_identical_expansion(name, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for out in (a, b):
        assert runner.invoke(app, ["expand", str(TOPO / f"{name}.yaml"), "--out", str(out)]).exit_code == 0
    assert a.read_bytes() == b.read_bytes()


def test_infiniband_identities_unique_and_sequential():
    f = expand(load_model(TOPO / "fire-flyer-2.yaml"))
    # one subnet: CA ports 1..n, switches from their own range (room for the CA ports to double)
    assert [p.lid for p in f.ports] == list(range(1, len(f.ports) + 1))
    assert f.switch_lid_base == 4096 >= 2 * len(f.ports)
    assert [s.lid for s in f.switches] == list(range(4096, 4096 + len(f.switches)))
    guids = [p.guid for p in f.ports] + [s.guid for s in f.switches]
    assert len(set(guids)) == len(guids)


def test_ethernet_addressing_unique():
    f = expand(load_model(TOPO / "c4-dualport.yaml"))
    assert len(set(f.cables.subnet.tolist())) == len(f.cables)
    assert all(s.loopback and s.asn for s in f.switches)
    spines = {s.asn for s in f.switches if s.role == "spine"}
    leaves = [s.asn for s in f.switches if s.role == "leaf"]
    assert len(spines) == 1 and len(set(leaves)) == len(leaves)


def test_every_device_has_a_rack_and_no_two_share_units():
    f = expand(load_model(TOPO / "fire-flyer-2.yaml"))
    m = f.model
    used = set()
    for dev, h in [(s, m.switch_models[s.model].height_u) for s in f.switches] + \
                  [(n, m.node_types[n.node_type].height_u) for n in f.nodes]:
        assert dev.rack in f.racks
        for u in range(dev.ru, dev.ru + h):
            assert 1 <= u <= m.layout.rack_units
            assert (dev.rack, u) not in used
            used.add((dev.rack, u))


def test_fabric_json_is_canonical():
    f = expand(load_model(TOPO / "tiny.yaml"))
    doc = json.loads(fabric_json(f))
    assert len(doc["cables"]) == len(f.cables)
    assert doc["cable_columns"][0] == "a_kind" and SWITCH == 0


def move_storage_node(tmp_path, name: str, leaves: list[int]) -> Path:
    """fire-flyer-2 with one storage node pinned to other leaves (one per HCA)."""
    text = (TOPO / "fire-flyer-2.yaml").read_text()
    old = 'homing: dual, name_pattern: "st{index:03d}"}'
    assert old in text
    path = tmp_path / "moved.yaml"
    path.write_text(text.replace(old, old[:-1] + f", pinned: {{{name}: {leaves}}}}}"))
    return path


def host_cable_ends(f) -> dict[str, tuple[str, int]]:
    c = f.cables
    out = {}
    for i in np.flatnonzero(c.kind == CABLE_KINDS.index("host")):
        out[f.ports[int(c.a_dev[i])].ca] = (f.switches[int(c.b_dev[i])].name, int(c.b_port[i]))
    return out


def test_pinning_one_node_moves_exactly_its_cables(tmp_path):
    before = host_cable_ends(expand(load_model(TOPO / "fire-flyer-2.yaml")))
    after = host_cable_ends(expand(load_model(move_storage_node(tmp_path, "st000", [36, 36]))))
    moved = {ca for ca in before if before[ca] != after[ca]}
    assert moved == {"st000-mlx5_0", "st000-mlx5_1"}
    assert after["st000-mlx5_0"] == ("z0-leaf36", 20) and after["st000-mlx5_1"] == ("z1-leaf36", 20)


def test_model_reference_is_up_to_date():
    from loom.render.model_doc import model_reference

    committed = (Path(__file__).parent.parent / "docs" / "model.md").read_text()
    assert committed == model_reference(), "docs/model.md is stale: run `.venv/bin/loom docs`"


def test_every_schema_type_is_in_the_model_reference():
    import inspect

    from pydantic import BaseModel

    from loom.model import schema
    from loom.render.model_doc import SECTIONS

    types = {c for _, c in inspect.getmembers(schema, inspect.isclass)
             if issubclass(c, BaseModel) and c.__module__ == schema.__name__ and c.__name__ != "Strict"}
    assert types - {c for c, _ in SECTIONS} == set()


def test_numbers_past_a_full_range_follow_every_used_one():
    """`_Numbers.take` keeps the highest used number instead of scanning for it (the switch LIDs
    at the LID limit are thousands of takes past a full range); numbers added to `used` directly
    (locked ones) between takes must still be counted."""
    import random

    from loom.expand.build import _Numbers

    rng = random.Random(3)
    for _ in range(2000):
        pool = _Numbers()
        for _ in range(rng.randint(0, 30)):
            if rng.random() < 0.3:
                pool.used.add(rng.randint(0, 200))
                continue
            lo, step = rng.randint(0, 100), rng.choice([1, 2])
            hi = lo + rng.randint(0, 20)
            x = pool.cursor.get(lo, lo)
            while x in pool.used:
                x += step
            want = max(pool.used, default=0) + step if x >= hi else x
            assert pool.take(lo, hi, step) == want
