"""Partitions (P_Keys): who is a member of what, what OpenSM and the hosts get, and the
isolation matrix checked against the intent, with the faults it is for planted."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric
from loom.expand.partitions import memberships, pkey_tables
from loom.model.partitions import NodeRecord, resolve
from loom.model.schema import Partition
from loom.qos import plan_qos
from loom.render.inventory import inventory
from loom.render.opensm_qos import opensm_qos_policy
from loom.render.partitions import parse_partitions_conf, partitions_conf

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


def test_pkey_tables_hold_the_default_limited_but_on_the_sm_port():
    f = load_fabric(TENANTS)
    t = pkey_tables(f, 0, "mgmt0-hca0")
    assert t["mgmt0-hca0/1"] == [0x8300, 0xFFFF]
    assert t["z0-c00-hca0/1"] == [0x0200, 0x7FFF, 0x8101]
    assert t["st00-hca1/1"] == [0x7FFF, 0x8200]
    assert pkey_tables(load_fabric(Path(__file__).parent.parent / "topology" / "tiny.yaml"), 0, "mgmt0-hca0") == {}


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
