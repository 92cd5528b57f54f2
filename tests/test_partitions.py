"""Partitions (P_Keys): who is a member of what, what OpenSM and the hosts get, and the
isolation matrix checked against the intent, with the faults it is for planted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric
from loom.expand.partitions import memberships
from loom.fabrics.infiniband.pkeys import intent
from loom.model.partitions import NodeRecord, resolve
from loom.model.schema import Partition
from loom.qos import plan_qos
from loom.render.inventory import inventory
from loom.render.opensm_qos import opensm_qos_policy
from loom.render.partitions import parse_partitions_conf, partitions_conf
from loom.routing import subnet
from loom.routing.subnet import TO_CA

MODELS = Path(__file__).parent / "models"
TENANTS = MODELS / "tiny-tenants.yaml"
runner = CliRunner()


def test_a_node_selected_full_and_limited_is_a_full_member():
    nodes = [NodeRecord("a", "g", "compute", ("z0",)), NodeRecord("b", "g", "compute", ("z1",)),
             NodeRecord("s", "st", "storage", ("z0", "z1"))]
    p = Partition.model_validate({"name": "p", "pkey": "0x0101", "members": [
        {"role": "compute", "membership": "limited"}, {"zone": "z0", "role": "compute", "membership": "full"},
        {"nodes": "s", "membership": "full"}]})
    (m,) = resolve([p], nodes)
    assert m.pkey == 0x0101 and m.members == {"a": "full", "b": "limited", "s": "full"}


def test_partitions_conf_names_every_member_port_with_its_membership():
    f = load_fabric(TENANTS)
    conf = parse_partitions_conf(partitions_conf(f))
    assert conf[0x7FFF] == {"all": "limited", "self": "full"}
    by_pkey = {m.pkey: m for m in memberships(f)}
    assert set(conf) == {0x7FFF} | set(by_pkey)
    for pkey, m in by_pkey.items():
        want = {f"0x{p.guid:016x}": m.members[f.nodes[p.node].name] for p in f.ports if f.nodes[p.node].name in m.members}
        assert conf[pkey] == want
    storage = conf[0x0200]
    assert sum(v == "full" for v in storage.values()) == 8  # 4 dual-homed storage servers, 2 ports each
    assert sum(v == "limited" for v in storage.values()) == 18  # every compute port


def test_ipoib_flags_and_the_class_sl_reach_partitions_conf_and_the_qos_policy():
    f = load_fabric(TENANTS)
    text = partitions_conf(f)
    assert "tenant-a=0x0101, ipoib, mtu=5, sl=1 :" in text  # 4096 → 5; class compute is SL 1
    assert "storage=0x0200, ipoib, mtu=4, rate=17, sl=2 :" in text  # 2048 → 4, 200 Gb/s → 17
    assert "tenant-b=0x0102 :" in text  # no IPoIB
    policy = opensm_qos_policy(f, plan_qos(f.model))
    rule = policy.index("pkey: 0x0101")
    assert "qos-level-name: compute" in policy[rule:rule + 80]
    assert policy.index("pkey: 0x0200") < policy.index("qos-class: 0")  # partition rules match first


def test_the_rendered_file_gives_each_port_its_p_keys_default_limited_but_on_the_sm_port():
    """What OpenSM programs from the file (on ibsim: `smpquery pkeys`, tests/test_partitions_sim.py)."""
    f = load_fabric(TENANTS)
    sn = subnet(f, 0)
    t = intent(sn, partitions_conf(f), "mgmt0-hca0")
    assert t["mgmt0-hca0/1"] == [0x8300, 0xFFFF]
    assert t["z0-c00-hca0/1"] == [0x0200, 0x7FFF, 0x8101]
    assert t["st00-hca1/1"] == [0x7FFF, 0x8200]
    leaf = next(f"{sn.name(r)}/{c}" for r in range(sn.n) for c in range(1, sn.max_port + 1)
                if sn.peer_kind[r, c] == TO_CA and f.ports[int(sn.peer_dev[r, c])].ca == "z0-c00-hca0")
    assert t[leaf] == t["z0-c00-hca0/1"]  # the switch port facing it, with partition enforcement
    assert set(map(tuple, intent(sn, None, "mgmt0-hca0").values())) == {(0xFFFF,)}  # no file: OpenSM's default


def test_route_out_and_the_inventory_carry_the_partitions(tmp_path):
    res = runner.invoke(app, ["route", str(TENANTS), "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "partitions.conf").read_text() == partitions_conf(load_fabric(TENANTS))
    files = inventory(load_fabric(TENANTS))
    assert files["files/partitions.conf"] == partitions_conf(load_fabric(TENANTS))
    hv = yaml.safe_load(files["host_vars/z0-c03.yml"])
    assert hv["loom_ib_pkey"] == "0x8101" and hv["loom_ucx_env"] == {"UCX_IB_PKEY": "0x8101"}
    assert {p["name"]: p["entry"] for p in hv["loom_partitions"]} == {"tenant-a": "0x8101", "storage": "0x0200"}
    assert {p["name"]: p.get("ipoib_child") for p in hv["loom_partitions"]} == {"tenant-a": "8101", "storage": "0200"}
    st = yaml.safe_load(files["host_vars/st01.yml"])
    assert st["loom_ib_pkey"] == "0x8200" and [p["membership"] for p in st["loom_partitions"]] == ["full"]
    assert "loom_partitions" not in yaml.safe_load(inventory(load_fabric(Path(__file__).parent.parent / "topology"
                                                                         / "tiny.yaml"))["host_vars/z0-c03.yml"])


# ------------------------------------------------------------------ the isolation matrix


def _variant(tmp_path: Path, old: str, new: str, name: str = "variant.yaml") -> Path:
    text = TENANTS.read_text()
    assert old in text
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return path


STORAGE_LIMITED = "      - {role: compute, membership: limited}\n"


def _check(path: Path) -> tuple[int, dict]:
    res = runner.invoke(app, ["check", str(path), "--format", "json", "--ebb-samples", "0"])
    return res.exit_code, json.loads(res.output)


def test_the_tenants_model_holds_its_intent_and_prints_the_matrix():
    code, report = _check(TENANTS)
    p = report["partitions"]
    assert code == 0 and p["ok"] and p["problems"] == []
    labels = [c["label"] for c in p["classes"]]
    assert labels == ["z0-c[00-08]", "z1-c[00-08]", "st[00-03]", "mgmt0"]
    assert p["matrix"] == [[True, False, True, True], [False, True, True, True], [True, True, True, True],
                           [True, True, True, False]]  # mgmt0, the SM, reaches all through the default partition
    text = runner.invoke(app, ["check", str(TENANTS), "--ebb-samples", "0"]).output
    assert "who can talk to whom" in text and "z0-c[00-08]  compute" in text
    md = runner.invoke(app, ["check", str(TENANTS), "--format", "markdown", "--ebb-samples", "0"]).output
    assert "### Partitions: intent holds yes" in md and "| 1 | z0-c[00-08] | compute | 9 |" in md
    assert "partitions" not in _check(Path(__file__).parent.parent / "topology" / "tiny.yaml")[1]


def test_a_tenant_node_made_full_member_of_storage_is_named_as_a_breach(tmp_path):
    path = _variant(tmp_path, STORAGE_LIMITED, STORAGE_LIMITED + "      - {nodes: z0-c03, membership: full}\n")
    code, report = _check(path)
    p = report["partitions"]
    assert code == 1 and not p["ok"] and not p["tenants_isolated"] and p["storage_reached"]
    assert p["problems"] == ["z0-c03 (tenant-a) can reach z1-c[00-08] (tenant-b) through storage (P_Key 0x0200), "
                             "where z0-c03 is a full member"]


def test_compute_nodes_left_out_of_storage_are_named(tmp_path):
    path = _variant(tmp_path, STORAGE_LIMITED, "      - {nodes: \"z0-c[00-08]\", membership: limited}\n")
    code, report = _check(path)
    p = report["partitions"]
    assert code == 1 and p["tenants_isolated"] and not p["storage_reached"]
    assert p["problems"] == ["z1-c[00-08] cannot reach storage st[00-03]: no partition holds both with one of them full"]


def test_a_compute_node_let_into_management_by_its_own_full_membership_is_named(tmp_path):
    """On Fire-Flyer 2 (tiny's one management node is the SM, which every node reaches anyway)."""
    text = (MODELS / "fire-flyer-2-tenants.yaml").read_text()
    old = "members: [{role: management, membership: full}]"
    assert old in text
    path = tmp_path / "ff2.yaml"
    path.write_text(text.replace(old, "members: [{role: management, membership: limited}, "
                                      "{nodes: z0-m00, membership: full}, {nodes: z1-c007, membership: full}]"))
    code, report = _check(path)
    p = report["partitions"]
    assert code == 1 and not p["management_isolated"] and p["tenants_isolated"] and p["storage_reached"]
    assert p["problems"] == ["z1-c007 can reach management z0-m[01-11],z1-m[00-11] through management (P_Key 0x0c00), "
                             "where z1-c007 is a full member, not one the management nodes are full members of"]


def test_diff_shows_who_can_talk_as_a_verdict_of_its_own(tmp_path):
    breach = _variant(tmp_path, STORAGE_LIMITED, STORAGE_LIMITED + "      - {nodes: z0-c03, membership: full}\n")
    res = runner.invoke(app, ["diff", str(TENANTS), "--base-file", str(TENANTS), "--head-file", str(breach), "--format", "json"])
    d = json.loads(res.output)
    assert res.exit_code == 1 and d["routing"]["lft_entries_changed"] == 0
    t = d["who_can_talk"]
    assert t["changed"] and t["pairs_changed"] == 9 and t["gained"] == ["z0-c03 ↔ z1-c[00-08]"] and t["lost"] == []
    assert t["intent_base"] is True and t["intent_head"] is False
    assert any(r.startswith("partition intent held on base and fails on head: z0-c03") for r in d["regressions"])
    text = runner.invoke(app, ["diff", str(TENANTS), "--base-file", str(TENANTS), "--head-file", str(breach)]).output
    assert "who can talk to whom CHANGED: 9 node pair(s)" in text and "now can talk: z0-c03 ↔ z1-c[00-08]" in text
    same = json.loads(runner.invoke(app, ["diff", str(TENANTS), "--base-file", str(TENANTS), "--head-file", str(TENANTS),
                                          "--format", "json"]).output)
    assert same["who_can_talk"]["changed"] is False and same["regressions"] == [] and same["changed"] is False
    # a fabric that gets partitions: every pair that loses its path is listed, nothing is a regression
    tiny = Path(__file__).parent.parent / "topology" / "tiny.yaml"
    first = json.loads(runner.invoke(app, ["diff", str(TENANTS), "--base-file", str(tiny), "--head-file", str(TENANTS),
                                           "--format", "json"]).output)["who_can_talk"]
    assert first["gained"] == [] and "z0-c[00-08] ↔ z1-c[00-08]" in first["lost"] and first["intent_base"] is None


def test_partition_entries_over_many_nodes_are_refused_before_they_are_resolved(tmp_path):
    """16 partitions of 256 entries over Fire-Flyer 2's 1,404 nodes: refused by the limit, fast."""
    import time

    from loom.model import ModelError, load_model

    text = (MODELS / "fire-flyer-2-tenants.yaml").read_text()
    entries = "".join(f"  - name: p{i}\n    pkey: {i + 1}\n    members:\n"
                      + "      - {nodes: z0-c000, membership: full}\n" * 256 for i in range(16))
    path = tmp_path / "many.yaml"
    path.write_text(text[:text.index("\npartitions:")] + "\npartitions:\n" + entries)
    start = time.monotonic()
    try:
        load_model(path)
    except ModelError as exc:
        assert "4096 partition member entries over 1404 nodes is more than Loom's limit" in str(exc)
    else:
        raise AssertionError("the model was accepted")
    assert time.monotonic() - start < 5


def test_slurm_gets_a_partition_per_tenant_and_a_real_slurmctld_loads_them(tmp_path):
    from . import slurmctld

    res = runner.invoke(app, ["slurm", str(TENANTS), "--out", str(tmp_path / "slurm")])
    assert res.exit_code == 0 and "tenants.conf: 2 tenant partitions" in res.output, res.output
    text = (tmp_path / "slurm" / "tenants.conf").read_text()
    assert "PartitionName=tenant-a Nodes=z0-c[00-08] State=UP" in text
    assert "PartitionName=tenant-b Nodes=z1-c[00-08] State=UP" in text and "storage" not in text
    if slurmctld.missing():
        pytest.fail(f"Slurm missing: {slurmctld.missing()} — run `make setup`")
    nodes = [f"z{z}-c{i:02d}" for z in (0, 1) for i in range(9)]
    with slurmctld.slurmctld(tmp_path / "ctld", nodes, (tmp_path / "slurm" / "topology.conf").read_text(),
                             includes={"tenants.conf": text}) as scontrol:
        shown = scontrol("show", "partition", "tenant-b")
    assert shown.returncode == 0 and "Nodes=z1-c[00-08]" in shown.stdout, shown.stdout + shown.stderr
    assert not (tmp_path / "no-tenants").exists()
    assert runner.invoke(app, ["slurm", str(Path(__file__).parent.parent / "topology" / "tiny.yaml"),
                               "--out", str(tmp_path / "no-tenants")]).exit_code == 0
    assert not (tmp_path / "no-tenants" / "tenants.conf").exists()
