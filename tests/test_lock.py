"""Stable identities under growth: the lock file, physical churn in `loom diff`, and change sheets
that agree with it (issue 14)."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric, lock_path, read_lock
from loom.expand.lockfile import lock_text
from loom.render.fabric_json import fabric_json

TOPO = Path(__file__).parent.parent / "topology"
FF2 = TOPO / "fire-flyer-2.yaml"
MODELS = sorted(TOPO.glob("*.yaml"))
STORAGE = 'homing: dual, name_pattern: "st{index:03d}"}'
runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args))
    assert "Traceback" not in r.output, r.output
    return r.exit_code, r.output


def floor(tmp_path: Path, name: str, old: str = "", new: str = "", lock: bool = True) -> Path:
    """A copy of Fire-Flyer 2 (with its catalogue, and its lock unless `lock` is False) edited by
    one replacement."""
    d = tmp_path / name
    shutil.copytree(TOPO / "catalogue", d / "catalogue")
    text = FF2.read_text()
    assert old in text
    path = d / "fire-flyer-2.yaml"
    path.write_text(text.replace(old, new, 1))
    if lock:
        shutil.copy(lock_path(FF2), lock_path(path))
    return path


COUNT = ("count: 600, zones: [z0]", "count: 601, zones: [z0]")
GROUP = ("subnet_manager: z0-m00", '  - {name: extra, node_type: a100-pcie, role: compute, count: 1, zones: [z0], '
         'name_pattern: "z0-x{index:03d}"}\n\nsubnet_manager: z0-m00')


@pytest.mark.parametrize("model", MODELS, ids=lambda p: p.stem)
def test_committed_lock_matches_its_model(model):
    """What CI runs: a committed lock that disagrees with its model fails here."""
    code, out = run("lock", str(model), "--check")
    assert code == 0, out


@pytest.mark.parametrize("model", [pytest.param(m, marks=pytest.mark.slow) if m.stem == "roce-4plane" else m
                                   for m in MODELS], ids=lambda p: p.stem)
def test_lock_reproduces_the_policy_layout_byte_for_byte(model):
    assert fabric_json(load_fabric(model)) == fabric_json(load_fabric(model, None))


@pytest.mark.parametrize("edit", [COUNT, GROUP], ids=["count+1", "new group"])
def test_growth_moves_nothing_and_renumbers_no_lid(tmp_path, edit):
    head = floor(tmp_path, "grow", *edit)
    code, out = run("diff", str(FF2), "--base-file", str(FF2), "--head-file", str(head), "--format", "json")
    d = json.loads(out)
    assert code == 0 and d["growth"] and not d["regressions"]
    assert len(d["cables"]["added"]) == 1 and d["cables"]["moved"] == [] and d["cables"]["removed"] == []
    ch = d["churn"]
    assert ch["devices_moved"] == [] and ch["ports_recabled"] == [] and ch["lids_renumbered"] == []
    new_ca = d["routing"]["destinations_added"]
    assert len(new_ca) == 1 and d["routing"]["destinations_rerouted"] == []
    # only the new LID's entries: one per switch
    assert d["routing"]["lft_entries_changed"] == 120 and set(d["routing"]["per_switch"].values()) == {1}
    new = load_fabric(head)
    assert max(p.lid for p in new.ports) == 1585 and [s.lid for s in new.switches] == list(range(4096, 4216))
    # the change sheet says the same: one cable to add, nothing else
    code, out = run("cabling", "diff", str(FF2), str(head), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and [r["action"] for r in rows] == ["add"]
    assert rows[0]["new_a"].endswith(f"{new_ca[0].rsplit('-', 1)[0]} mlx5_0/1") and rows[0]["new_cable"]


def test_pinned_move_repulls_exactly_its_cables_with_new_length_and_part(tmp_path):
    head = floor(tmp_path, "move", STORAGE, STORAGE[:-1] + ", pinned: {st000: [36, 36]}}")
    code, out = run("diff", str(FF2), "--base-file", str(FF2), "--head-file", str(head), "--format", "json")
    d = json.loads(out)
    assert code == 0 and not d["regressions"]
    assert d["churn"]["ports_recabled"] and {p["node"] for p in d["churn"]["ports_recabled"]} == {"st000"}
    assert d["churn"]["devices_moved"] == [] and d["churn"]["lids_renumbered"] == []
    assert len(d["cables"]["moved"]) == 2 and not d["cables"]["added"] and not d["cables"]["removed"]
    code, out = run("cabling", "diff", str(FF2), str(head), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["action"], r["cable_id"]) for r in rows] == [("move", "z0-leaf36/20"), ("move", "z1-leaf36/20")]
    for r in rows:
        assert r["old_a"] == r["new_a"] and "st000" in r["new_a"] and r["old_b"] != r["new_b"]
        assert r["old_a"].split()[:2] == ["A04", "U21"]  # the node stays where it is: rack and RU on both ends
    assert rows[0]["replace"] == "replace 5 m AOC MFS1S00-H005V with 15 m AOC MFS1S00-H015V"
    code, text = run("cabling", "diff", str(FF2), str(head), "--format", "text")
    assert "bring 1 × 15 m AOC MFS1S00-H015V, 1 × 30 m AOC MFS1S00-H030V" in text
    # recorded in the lock: the move is stable, and st000's old ports are free again
    assert run("lock", str(head))[0] == 0 and run("lock", str(head), "--check")[0] == 0
    f = load_fabric(head)
    ends = {(f.switches[int(b)].name, int(p)) for b, p in zip(f.cables.b_dev, f.cables.b_port)}
    assert ("z0-leaf0", 16) not in ends and ("z0-leaf36", 20) in ends


def test_lock_check_catches_a_hand_edit_and_a_stale_lock(tmp_path):
    model = floor(tmp_path, "edit")
    lock = lock_path(model)
    assert run("lock", str(model), "--check")[0] == 0
    text = lock.read_text()
    for edit in ('"port": 1, "lid": 2,', '"port": 1, "lid": 3000,'), ('"z0-c001": {"rack": "A04", "ru": 31', '"z0-c001": {"rack": "A04", "ru": 35'):
        assert edit[0] in text
        lock.write_text(text.replace(*edit, 1))
        code, out = run("lock", str(model), "--check")
        assert code == 1 and "edited by hand" in out and "git checkout" in out and "[red]" not in out, out
    # the model grew but the lock was not rewritten
    shutil.copy(lock_path(FF2), lock)
    model.write_text(model.read_text().replace(*COUNT))
    code, out = run("lock", str(model), "--check")
    assert code == 1 and "node z0-c600 is in the model but not in the lock" in out and "loom lock" in out
    assert "[red]" not in out and f"{lock}: node" in out, out  # the markup styles the line, never shows in it
    assert run("lock", str(model))[0] == 0 and run("lock", str(model), "--check")[0] == 0


def test_self_contradicting_lock_is_a_clear_error(tmp_path):
    model = floor(tmp_path, "dup")
    lk = read_lock(lock_path(model))
    nodes = dict(lk.nodes)
    nodes["z0-c001"] = nodes["z0-c001"].model_copy(update={"ports": nodes["z0-c000"].ports})
    lock_path(model).write_text(lock_text(lk.model_copy(update={"nodes": nodes})))
    code, out = run("validate", str(model))
    assert code == 1 and "fire-flyer-2.lock.json" in out and "nodes.z0-c001.ports.mlx5_0/1" in out
    assert "locked twice" in out and "--relayout" in out
    lock_path(model).write_text("{not json")
    code, out = run("check", str(model))
    assert code == 1 and "not valid JSON" in out and "fire-flyer-2.lock.json:1" in out


@pytest.mark.slow
def test_relayout_churn_is_a_regression_unless_the_model_says_so(tmp_path):
    head = floor(tmp_path, "relaid", *COUNT)
    assert run("lock", str(head), "--relayout")[0] == 0
    code, out = run("diff", str(FF2), "--base-file", str(FF2), "--head-file", str(head), "--format", "json")
    d = json.loads(out)
    assert code == 1 and any("physical churn" in r for r in d["regressions"])
    assert d["churn"]["devices_moved"] and d["churn"]["lids_renumbered"] and d["churn"]["cables_repulled"]
    code, sheet = run("cabling", "diff", str(FF2), str(head), "--format", "csv")
    assert sum(1 for r in csv.DictReader(io.StringIO(sheet)) if r["action"] == "move") == d["churn"]["cables_repulled"]
    head.write_text(head.read_text() + "\nrelayout: true\n")
    code, out = run("diff", str(FF2), "--base-file", str(FF2), "--head-file", str(head), "--format", "json")
    assert code == 0 and json.loads(out)["churn"]["relayout"]


def test_removed_node_frees_its_place_only_after_loom_lock(tmp_path):
    model = floor(tmp_path, "swap", "count: 12, zones: [z1]", "count: 11, zones: [z1]")  # drops z1-m11
    old = load_fabric(FF2)
    gone = old.nodes[old.node_index["z1-m11"]]
    c = old.cables
    gone_port = next((int(c.b_dev[i]), int(c.b_port[i])) for i in range(len(c))
                     if c.a_kind[i] == 1 and old.ports[int(c.a_dev[i])].node == gone.index)

    def grown(count: int):
        """The same change plus `count` new management nodes in z1 (4 ports were free)."""
        path = model.parent / f"grow{count}.yaml"
        path.write_text(model.read_text().replace("subnet_manager: z0-m00", (
            f"  - {{name: extra, node_type: management, role: management, count: {count}, zones: [z1], "
            'name_pattern: "z1-x{index:02d}"}\n\nsubnet_manager: z0-m00'), 1))
        shutil.copy(lock_path(model), lock_path(path))
        return path

    def new_ports(f):
        c = f.cables
        return {(int(c.b_dev[i]), int(c.b_port[i])) for i in range(len(c))
                if c.a_kind[i] == 1 and f.nodes[f.ports[int(c.a_dev[i])].node].name.startswith("z1-x")}

    f = load_fabric(grown(4))
    assert len(new_ports(f)) == 4 and gone_port not in new_ports(f)
    assert (gone.rack, gone.ru) not in {(n.rack, n.ru) for n in f.nodes}
    code, out = run("validate", str(grown(5)))  # the held port is not handed out in the same change
    assert code == 1 and "no free node-facing port" in out and "loom lock" in out
    assert run("lock", str(model))[0] == 0  # the removal is recorded: z1-m11's port is free again
    assert gone_port in new_ports(load_fabric(grown(5)))


def test_ethernet_growth_renumbers_no_address_or_loopback(tmp_path):
    """A group inserted before the others: by policy every later host /31 shifts; locked, none."""
    from loom.expand.churn import churn

    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    gpu = '  - {name: gpu, node_type: gpu8-dual, role: compute, count: 32, zones: [pod], name_pattern: "n{index:03d}"}'
    fewer = gpu.replace("count: 32", "count: 30")
    early = '  - {name: early, node_type: gpu8-dual, role: compute, count: 1, zones: [pod], name_pattern: "x{index:03d}"}'
    base = tmp_path / "c4.yaml"
    base.write_text((TOPO / "c4-dualport.yaml").read_text().replace(gpu, fewer))
    assert run("lock", str(base))[0] == 0
    head = tmp_path / "c4-grown.yaml"
    head.write_text(base.read_text().replace(fewer, early + "\n" + fewer))
    shutil.copy(lock_path(base), lock_path(head))
    old, new = load_fabric(base), load_fabric(head)
    assert len(new.nodes) == len(old.nodes) + 1
    ch = churn(old, new)
    assert ch.addresses_renumbered == [] and ch.ports_recabled == [] and ch.devices_moved == []
    assert [c.action for c in ch.cables] == ["add"] * 16
    assert len({p.address for p in new.ports}) == len(new.ports)
    assert churn(old, load_fabric(head, None)).addresses_renumbered  # what the lock prevents


def test_new_zone_listed_first_moves_and_renumbers_nothing(tmp_path):
    """New switches (a zone put first, which by policy shifts every switch index, GUID and LID)
    take new GUIDs, LIDs from the switch range and free rack units; nothing that exists changes."""
    from loom.expand.churn import churn

    tiny = TOPO / "tiny.yaml"
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    head = tmp_path / "tiny.yaml"
    z0 = "  - {name: z0, kind: fat-tree-2"
    text = tiny.read_text().replace(z0, "  - {name: z2, kind: fat-tree-2, switch_model: SW8, leaves: 2, spines: 1, "
                                    "leaf_down: 4, leaf_up: 4}\n" + z0, 1)
    text = text.replace("node_groups:\n", 'node_groups:\n  - {name: c2-, node_type: compute, role: compute, count: 3, '
                        'zones: [z2], name_pattern: "z2-c{index:02d}"}\n', 1)
    head.write_text(text)
    shutil.copy(lock_path(tiny), lock_path(head))
    old, new = load_fabric(tiny), load_fabric(head)
    ch = churn(old, new)
    assert ch.devices_moved == [] and ch.lids_renumbered == [] and ch.ports_recabled == []
    assert {c.action for c in ch.cables} == {"add"} and len(ch.cables) == 3 + 2 * 4  # 3 nodes, 2 leaves × 4 up-links
    added = [s for s in new.switches if s.zone == "z2"]
    assert min(s.lid for s in added) > max(s.lid for s in old.switches) >= old.switch_lid_base
    assert not {s.guid for s in added} & {s.guid for s in old.switches} and all(s.rack for s in added)
    assert new.racks[:len(old.racks)] == old.racks
    units = [(d.rack, d.ru) for d in (*new.switches, *new.nodes)]
    assert len(units) == len(set(units))


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["switches"]["z0-leaf0"].update(lid=0xFFFF), "switches.z0-leaf0.lid"),
    (lambda d: d["switches"]["z0-leaf0"].update(lid=10**30), "switches.z0-leaf0.lid"),
    (lambda d: d["switches"]["z0-leaf0"].update(guid="0x" + "f" * 40), "switches.z0-leaf0.guid"),
    (lambda d: d["nodes"]["z0-c00"]["ports"]["hca0/1"].update(lid=10**30), "nodes.z0-c00.ports.hca0/1.lid"),
])
def test_identities_out_of_range_are_refused_by_every_reader(tmp_path, edit, field):
    """Issue 35: a switch LID of 0xffff (multicast) or a 160-bit GUID passed `lock --check` and
    reached guid2lid; a LID of 10^30 crashed check and route with OverflowError."""
    topo = Path(__file__).parent.parent / "topology"
    shutil.copy(topo / "tiny.yaml", tmp_path)
    data = json.loads((topo / "tiny.lock.json").read_text())
    edit(data)
    (tmp_path / "tiny.lock.json").write_text(json.dumps(data))
    for cmd in (["check"], ["route", "--out", str(tmp_path / "out")], ["lock", "--check"]):
        r = CliRunner().invoke(app, [cmd[0], str(tmp_path / "tiny.yaml"), *cmd[1:]])
        assert r.exit_code == 1 and field in r.output and "Traceback" not in r.output, (cmd, r.output)
    assert not (tmp_path / "out").exists()


def test_every_reader_refuses_a_hand_edited_lock(tmp_path):
    """Issue 35: `route`, `check`, `status` and `mark` read the lock's identities, so they verify
    its digest as `lock --check` does; nothing is written; `loom lock` accepts the edit."""
    d = tmp_path / "m"
    shutil.copytree(TOPO / "catalogue", d / "catalogue")
    model = d / "tiny.yaml"
    shutil.copy(TOPO / "tiny.yaml", model)
    shutil.copy(lock_path(TOPO / "tiny.yaml"), lock_path(model))
    text = lock_path(model).read_text()
    edit = re.search(r"\"lid\": (\d+)", text)
    lock_path(model).write_text(text.replace(edit.group(0), '"lid": 40000', 1))
    for args in (["route", str(model), "--out", str(tmp_path / "out")], ["check", str(model)], ["status", str(model)],
                 ["mark", "down", str(model), "z0-spine0", "--reason", "x"]):
        code, out = run(*args)
        flat = " ".join(out.split())
        assert code == 1 and f"{lock_path(model)}" in flat and "edited by hand" in flat and "loom lock" in flat, (args, out)
    assert not (tmp_path / "out").exists()
    assert run("lock", str(model))[0] == 0
    assert run("check", str(model))[0] == 0


def test_a_lock_laid_out_differently_but_unchanged_is_accepted(tmp_path):
    """The digest is checked on the file's bytes first (fast) and, for a file another tool
    re-indented, on its content: same identities, same digest, accepted."""
    d = tmp_path / "m"
    shutil.copytree(TOPO / "catalogue", d / "catalogue")
    model = d / "tiny.yaml"
    shutil.copy(TOPO / "tiny.yaml", model)
    lock_path(model).write_text(json.dumps(json.loads(lock_path(TOPO / "tiny.yaml").read_text()), indent=4))
    assert read_lock(lock_path(model)).digest == read_lock(lock_path(TOPO / "tiny.yaml")).digest
    assert run("check", str(model))[0] == 0


def test_lock_names_a_mark_left_on_a_removed_nodes_port(tmp_path):
    """A NIC marked down, then its node removed from the model: the mark stays on the switch port
    and would take the next node cabled there out of service.  `loom lock` says so and how to
    take it back; after `loom mark up` of the name it gives, nothing is said."""
    model = tmp_path / "tiny.yaml"
    for name in ("tiny.yaml", "tiny.lock.json"):
        shutil.copy(TOPO / name, tmp_path / name)
    assert run("mark", "down", str(model), "z0-c08-hca0", "--reason", "dead-nic")[0] == 0
    assert "note: the mark" not in run("lock", str(model))[1]
    model.write_text(model.read_text().replace("count: 9, zones: [z0]", "count: 8, zones: [z0]"))
    code, out = run("lock", str(model))
    assert code == 0 and "note: the mark z0-leaf0/3 (dead-nic) covers no cable" in " ".join(out.split()), out
    assert f"loom mark up {model} z0-leaf0/3" in " ".join(out.split()), out
    assert run("mark", "up", str(model), "z0-leaf0/3")[0] == 0
    assert "note: the mark" not in run("lock", str(model))[1]
