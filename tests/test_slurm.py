"""`loom slurm`: the tree loaded by a real slurmctld (Debian 12's 22.05), the block/YAML forms
(newer Slurm than Debian ships) against the checker written from Slurm's documented format."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from loom.checks.slurm import check_block_sizes, check_topology_yaml
from loom.cli import app
from loom.expand import load_fabric, lock_path
from loom.model.hostlist import expand
from loom.render.slurm import slurm_topology, topology_conf, topology_yaml

from . import slurmctld

TOPO = Path(__file__).parent.parent / "topology"
FF2 = TOPO / "fire-flyer-2.yaml"
runner = CliRunner()


def variant(tmp_path: Path, old: str, new: str, model: Path = FF2) -> Path:
    text = model.read_text()
    assert old in text
    path = tmp_path / model.name
    path.write_text(text.replace(old, new, 1))
    if lock_path(model).exists():
        shutil.copy(lock_path(model), lock_path(path))
    return path


@pytest.fixture(scope="module")
def ff2():
    return slurm_topology(load_fabric(FF2))


def _scontrol_switches(text: str) -> dict[str, dict[str, str]]:
    out = {}
    for line in text.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if "SwitchName" in fields:
            out[fields["SwitchName"]] = fields
    return out


def test_real_slurmctld_loads_the_tree_with_every_leaf_and_node(ff2, tmp_path):
    if slurmctld.missing():
        pytest.fail(f"Slurm missing: {slurmctld.missing()} — run `make setup`")
    nodes = [n for s in ff2.switches for n in s.nodes]
    with slurmctld.slurmctld(tmp_path, nodes, topology_conf(ff2)) as scontrol:
        shown = scontrol("show", "topology")
    assert shown.returncode == 0, shown.stderr
    got = _scontrol_switches(shown.stdout)
    leaves = {s.name: s for s in ff2.switches if s.nodes}
    assert len(leaves) == 80 and set(leaves) == {f"z{z}-leaf{i}" for z in (0, 1) for i in range(40)}
    for name, s in leaves.items():
        assert got[name]["Level"] == "0" and sorted(expand(got[name]["Nodes"])) == sorted(s.nodes)
    assert sum(len(s.nodes) for s in leaves.values()) == 1200  # compute nodes; storage and management left out
    assert got["z0"]["Level"] == "1" and sorted(expand(got["z0"]["Switches"])) == sorted(f"z0-leaf{i}" for i in range(40))
    assert got["fire-flyer-2"]["Level"] == "2" and sorted(expand(got["fire-flyer-2"]["Switches"])) == ["z0", "z1"]


def test_cli_writes_both_files_and_they_pass_the_format_check(tmp_path):
    r = runner.invoke(app, ["slurm", str(FF2), "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "80 with nodes" in r.output and "1200 nodes" in r.output
    text = (tmp_path / "topology.yaml").read_text()
    assert check_topology_yaml(text) == []
    doc = yaml.safe_load(text)
    assert [t["topology"] for t in doc] == ["tree", "block"]
    block = doc[1]["block"]
    assert block["block_sizes"] == [15, 30, 60, 120, 240, 480, 960] and len(block["blocks"]) == 80
    assert {b["block"] for b in block["blocks"]} == {f"z{z}-leaf{i}" for z in (0, 1) for i in range(40)}


def test_planted_invalid_block_size_is_caught(ff2):
    doc = yaml.safe_load(topology_yaml(ff2))
    doc[1]["block"]["block_sizes"] = [15, 45]  # 3× the base: not a power of two
    problems = check_topology_yaml(yaml.safe_dump(doc, sort_keys=False))
    assert problems and "45 after 15 is not a power of two" in problems[0]
    doc[1]["block"]["block_sizes"] = [16, 32]  # base bigger than every leaf's 15 nodes
    assert any("fewer than the base block size 16" in p for p in check_topology_yaml(yaml.safe_dump(doc, sort_keys=False)))


@pytest.mark.parametrize("edit, message", [
    (lambda d: d[0]["tree"]["switches"][-1].update(children="z[0-2]"), "child switch z2, which is not defined"),
    (lambda d: d[0]["tree"]["switches"][0].update(children="fire-flyer-2"), "cycle"),
    (lambda d: d[0]["tree"]["switches"].append(dict(d[0]["tree"]["switches"][0])), "defined twice"),
    (lambda d: d[1]["block"]["blocks"][1].update(nodes=d[1]["block"]["blocks"][0]["nodes"]), "is in blocks"),
    (lambda d: d[0].update(block={"blocks": []}), "exactly one of block, flat, tree"),
    (lambda d: d.insert(0, {"cluster_default": True, "topology": "x", "flat": True}), "first attribute is `topology`"),
])
def test_format_checker_catches_planted_faults(ff2, edit, message):
    doc = yaml.safe_load(topology_yaml(ff2))
    edit(doc)
    assert any(message in p for p in check_topology_yaml(yaml.safe_dump(doc, sort_keys=False))), message


def test_block_sizes_rule():
    assert check_block_sizes([18, 36, 144]) == []
    assert check_block_sizes([18, 27]) and check_block_sizes([0]) and check_block_sizes([16, 16])


def test_bad_block_sizes_in_the_model_are_refused(tmp_path):
    m = variant(tmp_path, "subnet_manager: z0-m00", "subnet_manager: z0-m00\nslurm: {block_sizes: [15, 40]}")
    r = runner.invoke(app, ["validate", str(m)])
    assert r.exit_code == 1 and "slurm.block_sizes" in r.output and "40 after 15" in r.output
    m = variant(tmp_path, "subnet_manager: z0-m00", "subnet_manager: z0-m00\nslurm: {block_sizes: [16, 32]}")
    r = runner.invoke(app, ["slurm", str(m), "--out", str(tmp_path / "out")])
    assert r.exit_code == 1 and "fewer than the base block size 16" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "out").exists()  # nothing written


def test_storage_and_management_in_their_own_switches(tmp_path):
    m = variant(tmp_path, "subnet_manager: z0-m00", "subnet_manager: z0-m00\nslurm: {own_switch: [storage, management]}")
    t = slurm_topology(load_fabric(m))
    own = {s.name: s for s in t.switches}
    assert len(own["fire-flyer-2-storage"].nodes) == 180 and len(own["fire-flyer-2-management"].nodes) == 24
    assert "fire-flyer-2-storage" in own["fire-flyer-2"].switches and t.left_out == ()
    assert check_topology_yaml(topology_yaml(t)) == []


def test_names_stay_put_when_the_fabric_grows(ff2, tmp_path):
    m = variant(tmp_path, 'count: 600, zones: [z0]', 'count: 602, zones: [z0]')
    grown = {s.name: set(s.nodes) for s in slurm_topology(load_fabric(m)).switches}
    for s in ff2.switches:
        assert set(s.nodes) <= grown[s.name]
    assert sum(len(v) for k, v in grown.items()) == sum(len(s.nodes) for s in ff2.switches) + 2


def test_nvlink_domains_become_blocks(tmp_path):
    m = variant(tmp_path, 'name_pattern: "z0-c{index:03d}"}', 'name_pattern: "z0-c{index:03d}", nvlink_domain: 20}')
    t = slurm_topology(load_fabric(m))
    blocks = dict(t.blocks)
    assert len([b for b in blocks if b.startswith("compute-z0-nvl")]) == 30
    assert blocks["compute-z0-nvl0"] == tuple(f"z0-c{i:03d}" for i in range(20))
    assert t.block_sizes[0] == 15 and check_topology_yaml(topology_yaml(t)) == []


def test_no_schedulable_node_is_refused_cleanly(tmp_path):
    m = variant(tmp_path, "subnet_manager: z0-m00", "subnet_manager: z0-m00\nslurm: {roles: [other]}")
    r = runner.invoke(app, ["slurm", str(m), "--out", str(tmp_path / "out")])
    assert r.exit_code == 1 and "no node has a role Slurm schedules" in r.output and "Traceback" not in r.output
