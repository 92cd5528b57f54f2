"""The fattree engine and the checks, on the reference fabrics; every check is shown to catch
a fault planted for it (tests/faults.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.checks import Walk, check_balance, check_deadlock, check_reachability, check_tables
from loom.cli import app
from loom.expand import expand
from loom.model import load_model
from loom.model.rules import zone_layers
from loom.qos import plan_qos
from loom.render.opensm import DumpMismatch, guid2lid, lfts_dump, parse_lfts_dump
from loom.routing import route

from .faults import plant_credit_loop, plant_detour, plant_drop, plant_forwarding_loop, plant_imbalance, zone_rows

TOPO = Path(__file__).parent.parent / "topology"
runner = CliRunner()


@pytest.fixture(scope="module")
def ff2():
    return route(expand(load_model(TOPO / "fire-flyer-2.yaml")))[0]


@pytest.fixture(scope="module")
def tiny():
    return route(expand(load_model(TOPO / "tiny.yaml")))[0]


def test_fire_flyer_check_passes_at_the_lower_bound():
    result = runner.invoke(app, ["check", str(TOPO / "fire-flyer-2.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    r = json.loads(result.output)
    assert r["reachable"] and r["deadlock_free"] and r["cycle"] is None
    b = r["balance"]
    assert b["max_dest_per_up_port"] == b["lower_bound"]
    assert b["per_role"]["storage"]["max_dest_per_up_port"] == b["per_role"]["storage"]["lower_bound"]
    assert b["inter_zone"]["max_dest_per_link"] == b["inter_zone"]["lower_bound"]
    assert r["ebb"] > 0.78  # OpenSM's engines reach 0.74-0.81 here (REFERENCE.md)


@pytest.mark.parametrize("name", ["tiny", "fat-tree-3"])
def test_other_ib_fabrics_check_clean(name):
    result = runner.invoke(app, ["check", str(TOPO / f"{name}.yaml"), "--json", "--ebb-samples", "20"])
    assert result.exit_code == 0, result.output


def test_dual_homed_storage_reached_in_each_zone(ff2):
    sn = ff2.subnet
    walk = Walk(ff2)
    end, hops = walk.outcome
    f = sn.fabric
    for node in [n for n in f.nodes if n.role == "storage"][:10]:
        for p in [p for p in f.ports if p.node == node.index]:
            leaf = int(sn.ca_switch[p.lid])
            assert sn.switch(leaf).zone == p.zone
            # from every leaf of the port's own zone: delivered within the zone (≤ 2 hops)
            rows = [i for i in range(sn.n) if sn.switch(i).zone == p.zone and sn.switch(i).role == "leaf"]
            assert (end[rows, p.lid] == -1).all() and hops[rows, p.lid].max() <= 2


def test_cross_zone_traffic_uses_only_inter_zone_links(ff2):
    sn = ff2.subnet
    lft = ff2.lft
    for row in range(sn.n):
        for lid in sn.ca_lids[:200]:
            port = int(lft[row, lid])
            if sn.peer_kind[row, port] == 1:
                peer = int(sn.peer_dev[row, port])
                if sn.switch(peer).zone != sn.switch(row).zone:
                    assert sn.switch(row).role == "leaf" and sn.switch(row).position == 39


def test_planted_credit_loop_is_found_with_the_cycle(tiny):
    bad, changes = plant_credit_loop(tiny, "z0")
    walk = Walk(bad)
    assert check_reachability(walk).reachable  # still delivers everything: only a credit loop
    d = check_deadlock(walk)
    assert not d.deadlock_free
    assert d.cycle and all("->" in hop for hop in d.cycle)
    assert not check_deadlock(walk, "ca").deadlock_free  # a CA-traffic loop, ibdmchk's scope
    assert check_deadlock(Walk(tiny)).deadlock_free


def test_planted_credit_loop_on_fire_flyer(ff2):
    bad, _ = plant_credit_loop(ff2, "z1")
    d = check_deadlock(Walk(bad))
    assert not d.deadlock_free and any("z1-spine" in hop for hop in d.cycle)


def test_inter_zone_links_on_several_leaves_need_a_vl_per_direction(tmp_path):
    text = (TOPO / "fire-flyer-2.yaml").read_text()
    spread = text.replace("a: {zone: z0, leaves: [39, 39, 39, 39]}", "a: {zone: z0, leaves: [36, 37, 38, 39]}") \
                 .replace("b: {zone: z1, leaves: [39, 39, 39, 39]}", "b: {zone: z1, leaves: [36, 37, 38, 39]}")
    assert spread != text
    (tmp_path / "spread.yaml").write_text(spread)
    model = load_model(tmp_path / "spread.yaml")
    t = route(expand(model))[0]
    d = check_deadlock(Walk(t))  # on one VL: a cycle through both zones
    assert not d.deadlock_free
    assert any("z0-leaf3" in h and "z1-leaf3" in h for h in d.cycle)  # the cycle crosses the zones
    assert check_deadlock(Walk(t), layers=zone_layers(model)).deadlock_free  # one VL set per direction: none
    r = check_tables(t, ebb_samples=0, qos=plan_qos(model))
    assert r["deadlock_free"] and r["cross_zone_vls"] and r["qos"]["ok"] and len(r["qos"]["per_vl"]) == 8


def test_not_enough_vls_for_the_direction_split_is_refused(tmp_path):
    text = (TOPO / "fire-flyer-2.yaml").read_text().replace("leaves: [39, 39, 39, 39]", "leaves: [36, 37, 38, 39]")
    text = text.replace("limits: {data_vls: 8}", "limits: {data_vls: 4}")
    (tmp_path / "spread.yaml").write_text(text)
    result = runner.invoke(app, ["validate", str(tmp_path / "spread.yaml")])
    assert result.exit_code == 1 and "needs VLs of its own" in result.output and "8 VLs" in result.output


def test_dropped_entry_is_unreachable(tiny):
    bad, lid = plant_drop(tiny, "z0")
    r = check_reachability(Walk(bad))
    assert not r.reachable and r.unreachable_pairs > 0
    assert any("dropped at z0-leaf0" in e for e in r.examples)


def test_detour_is_delivered_but_not_minimal(tiny):
    """The minimal-hops count (against the zone's BFS distances, `UpDown.hops`) catches a path
    that arrives the long way; the intact tables have none."""
    assert check_reachability(Walk(tiny)).nonminimal_pairs == 0
    bad, lid = plant_detour(tiny, "z0")
    r = check_reachability(Walk(bad))
    on_l0 = int(Walk(bad).cas_on_switch[zone_rows(bad.subnet, "z0", "leaf")[0]])
    assert r.reachable and r.max_hops >= 4 and r.nonminimal_pairs >= on_l0 > 0


def test_checks_share_one_up_down_per_subnet(tiny):
    """Engine, checks and push path ask one UpDown per subnet (its BFS is ~2 s at the LID limit)."""
    from loom.routing.updown import UpDown

    assert UpDown.of(tiny.subnet) is UpDown.of(tiny.subnet)
    other = route(expand(load_model(TOPO / "tiny.yaml")))[0].subnet
    assert UpDown.of(other) is not UpDown.of(tiny.subnet)


def test_forwarding_loop_is_found(tiny):
    bad, lid = plant_forwarding_loop(tiny, "z0")
    r = check_reachability(Walk(bad))
    assert not r.reachable and r.loop_pairs > 0
    assert any("loops" in e for e in r.examples)


def test_imbalance_is_found(ff2):
    assert check_balance(Walk(ff2)).within_bound
    bad = plant_imbalance(ff2, "z0", moves=6)
    b = check_balance(Walk(bad))
    assert not b.within_bound and b.max_dest_per_up_port > b.lower_bound


def test_check_json_contract(tiny):
    r = check_tables(tiny, ebb_samples=10)
    for key in ("reachable", "deadlock_free", "cycle", "balance", "ebb"):
        assert key in r
    for key in ("max_dest_per_up_port", "lower_bound", "per_role"):
        assert key in r["balance"]


def test_check_exits_1_on_unroutable_fabric():
    result = runner.invoke(app, ["check", str(TOPO / "eflops-bigraph.yaml"), "--engine", "fattree"])
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_route_writes_files(tmp_path, tiny):
    result = runner.invoke(app, ["route", str(TOPO / "tiny.yaml"), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "lfts.dump").read_text() == lfts_dump(tiny)
    assert (tmp_path / "guid2lid").read_text() == guid2lid(tiny)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["planes"][0]["switches"] == 12
    parsed = parse_lfts_dump(lfts_dump(tiny))
    sn = tiny.subnet
    for row in range(sn.n):
        s = sn.switch(row)
        assert parsed[s.guid][s.lid] == 0


def test_a_dump_is_parsed_once_and_read_only(tiny):
    """An apply meets the same dump text several times (check, digest, tables, verify, journal):
    it is parsed once, and what one caller got no other can change; its tables and digest are
    the same as those of the tables it was written from."""
    from loom.push.packing import digest_live, digest_tables
    from loom.render.opensm import _parsed, tables_from_dump

    text = lfts_dump(tiny)
    _parsed.cache_clear()
    first = parse_lfts_dump(text)
    assert parse_lfts_dump("".join(text)) is first and _parsed.cache_info().misses == 1  # an equal text, not only the same object
    guid = next(iter(first))
    with pytest.raises(TypeError):
        first[guid][1] = 7  # type: ignore[index]
    with pytest.raises(TypeError):
        first[guid] = {}  # type: ignore[index]
    assert (tables_from_dump(tiny.subnet, text, "again").lft == tiny.lft).all()
    assert digest_live(text) == digest_tables(tiny)
    with pytest.raises(DumpMismatch, match="port 300"):  # a port beyond uint8 is refused, not wrapped into the table
        tables_from_dump(tiny.subnet, text.replace(" 001 #", " 300 #", 1), "bad")


def test_route_counts_the_tables_it_writes(tmp_path):
    """Issue 33: a leaf with every up-link missing is cut off; route said "12 switches" while the
    dump held fewer tables."""
    import shutil

    model = tmp_path / "tiny.yaml"
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    model.write_text((TOPO / "tiny.yaml").read_text().replace(
        "{name: z0, kind: fat-tree-2, switch_model: SW8, leaves: 4, spines: 2, leaf_down: 4, leaf_up: 4}",
        "{name: z0, kind: fat-tree-2, switch_model: SW8, leaves: 4, spines: 2, leaf_down: 4, leaf_up: 4, "
        "missing_links: [{leaf: 1, up_port: 0}, {leaf: 1, up_port: 1}, {leaf: 1, up_port: 2}, {leaf: 1, up_port: 3}]}"))
    result = runner.invoke(app, ["route", str(model), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    tables = (tmp_path / "out" / "lfts.dump").read_text().count("Unicast lids")
    plane = json.loads((tmp_path / "out" / "summary.json").read_text())["planes"][0]
    assert plane["tables"] == tables < plane["switches"] == 12
    assert f"on {tables} switches ({12 - tables} down or cut off: no table)" in " ".join(result.output.split())


def test_routing_is_deterministic():
    a = lfts_dump(route(expand(load_model(TOPO / "fire-flyer-2.yaml")))[0])
    b = lfts_dump(route(expand(load_model(TOPO / "fire-flyer-2.yaml")))[0])
    assert a == b


def test_loom_check_on_a_planted_table_file_prints_the_cycle(tmp_path, tiny):
    bad, _ = plant_credit_loop(tiny, "z0")
    (tmp_path / "planted.dump").write_text(lfts_dump(bad))
    r = runner.invoke(app, ["check", str(TOPO / "tiny.yaml"), "--lfts", str(tmp_path / "planted.dump"), "--ebb-samples", "5"])
    assert r.exit_code == 1
    assert "credit loop:" in r.output and "z0-spine0/" in r.output and "z0-leaf1/" in r.output
    r = runner.invoke(app, ["check", str(TOPO / "tiny.yaml"), "--lfts", str(tmp_path / "planted.dump"), "--format", "markdown"])
    assert r.exit_code == 1 and "## loom check: tiny — **FAIL**" in r.output
    assert "| 0 | file planted.dump | yes (0 unreachable, 0 looping) | **NO** |" in r.output, r.output
    (tmp_path / "clean.dump").write_text(lfts_dump(tiny))
    r = runner.invoke(app, ["check", str(TOPO / "tiny.yaml"), "--lfts", str(tmp_path / "clean.dump"), "--ebb-samples", "5"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["check", str(TOPO / "tiny.yaml"), "--lfts", str(tmp_path / "clean.dump"), "--format", "markdown"])
    assert r.exit_code == 0 and "## loom check: tiny — pass" in r.output and "| leaf_up |" in r.output


def test_check_refuses_a_table_file_that_is_not_the_fabrics(tmp_path, ff2):
    (tmp_path / "empty.dump").write_text("nothing to see\n")
    (tmp_path / "other.dump").write_text(lfts_dump(ff2))
    for name, why in (("empty.dump", "holds no forwarding tables"), ("other.dump", "has LID")):
        r = runner.invoke(app, ["check", str(TOPO / "tiny.yaml"), "--lfts", str(tmp_path / name)])
        assert r.exit_code == 1 and why in r.output and "Traceback" not in r.output, r.output
    foreign = lfts_dump(ff2).replace("0x0002c9020000", "0x0009c9020000", 1)
    (tmp_path / "foreign.dump").write_text(foreign)
    r = runner.invoke(app, ["check", str(TOPO / "fire-flyer-2.yaml"), "--lfts", str(tmp_path / "foreign.dump")])
    assert r.exit_code == 1 and "is not a switch of this model" in r.output, r.output


@pytest.mark.parametrize("plant", ["none", "credit loop", "drop", "forwarding loop", "imbalance"])
def test_chunked_passes_see_the_same_whatever_the_chunk(monkeypatch, ff2, plant):
    """The [switch × LID] passes run a chunk of LIDs at a time (`lid_chunks`); a chunk boundary
    must change no figure and hide no fault: the same report with chunks of a few LIDs."""
    import loom.routing.base as base

    bad = {"none": lambda: ff2, "credit loop": lambda: plant_credit_loop(ff2, "z1")[0], "drop": lambda: plant_drop(ff2, "z0")[0],
           "forwarding loop": lambda: plant_forwarding_loop(ff2, "z0")[0],
           "imbalance": lambda: plant_imbalance(ff2, "z0", moves=6)}[plant]()
    whole = check_tables(bad, ebb_samples=5)
    monkeypatch.setattr(base, "CHUNK_CELLS", 7 * bad.subnet.n)  # 7 LIDs per chunk
    assert check_tables(bad, ebb_samples=5) == whole
    caught = {"none": whole["reachable"] and whole["deadlock_free"] and whole["balance"]["within_bound"],
              "credit loop": not whole["deadlock_free"], "drop": not whole["reachable"],
              "forwarding loop": not whole["reachable"], "imbalance": not whole["balance"]["within_bound"]}
    assert caught[plant]


def test_top_switches_counted_at_once_until_an_entry_is_off_its_one_legal_port(ff2):
    """A top switch whose ports each lead to the one child below it that reaches what it carries
    (a two-layer tree's spine, a core with one link per pod) has its figures counted per port at
    once (`_single_port_figures`); an entry moved to another child's port makes it hand the switch
    to the general pass, which sees the change."""
    import numpy as np

    from loom.checks.balance import _single_port_figures, group_figures
    from loom.routing.loads import carried
    from loom.routing.updown import UpDown

    sn = ff2.subnet
    ud = UpDown(sn)
    top = int(np.flatnonzero(ud.layer == 1)[0])
    lids = np.flatnonzero(ud.live_lids)
    roles = np.zeros(sn.max_lid + 1, np.int64)
    used = lids[carried(sn, ff2.lft, lids)[top]]
    target = ud.targets(ff2.lft)[ud.zone[top]]
    assert _single_port_figures(ud, ff2.lft, top, target, used, roles, ["any"]) is not None
    lid = int(used[0])
    other = next(p for p in np.flatnonzero(sn.peer_kind[top] != 0) if p != ff2.lft[top, lid])
    bad = ff2.with_entries({(top, lid): int(other)})
    assert _single_port_figures(ud, bad.lft, top, target, used, roles, ["any"]) is None
    assert [g.loads.tolist() for g in group_figures(Walk(bad)) if g.row == top] != \
        [g.loads.tolist() for g in group_figures(Walk(ff2)) if g.row == top]
