"""The SONiC lossless configuration: port naming, the complete table set, and the cross-check
of switch tables × host settings × model classes, shown catching a planted disagreement in
every dimension it covers."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.checks.roce_qos import check_fabric, check_roce_qos, lower_part_nics
from loom.cli import app
from loom.expand import load_fabric
from loom.render.roce import RoceConfigs
from loom.render.sonic import config_db_json

TOPO = Path(__file__).parent.parent / "topology"
LAB = Path(__file__).parent / "models" / "roce-lab.yaml"
runner = CliRunner()
ETHERNET = ("c4-dualport", "eflops-bigraph", "hpn-dual-plane", "rail-optimised", "roce-4plane")
QOS = """
qos:
  classes:
    - {name: other, share: 20, default: true}
    - {name: nccl, share: 60, lossless: true, env_tc: [NCCL_IB_TC]}
    - {name: storage, share: 20, lossless: true}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """The 2-spine 3-leaf lab with two lossless classes: (configs, switch config_dbs, host files)."""
    path = tmp_path_factory.mktemp("lab") / "lab.yaml"
    path.write_text(LAB.read_text() + QOS)
    f = load_fabric(path)
    rc = RoceConfigs(f)
    return rc, {s.name: rc.config_db(s) for s in f.switches}, {n.name: rc.host(n.index) for n in f.nodes}


def check(rc, switches, hosts):
    return check_roce_qos(rc.qos, rc.lossless, switches, hosts, lower_part_nics(rc.f))


@pytest.mark.parametrize("name", ETHERNET)
def test_cross_check_passes_on_every_ethernet_model(name):
    r = check_fabric(load_fabric(TOPO / f"{name}.yaml"))
    assert r["ok"], r["problems"][:5]
    assert r["switches"] and r["hosts"]


def test_the_lossless_set_is_complete_and_one_port_naming(lab):
    rc, switches, hosts = lab
    db = switches["lab-leaf0"]
    for table in ("DSCP_TO_TC_MAP", "TC_TO_PRIORITY_GROUP_MAP", "TC_TO_QUEUE_MAP", "MAP_PFC_PRIORITY_TO_QUEUE", "PORT_QOS_MAP",
                  "SCHEDULER", "QUEUE", "WRED_PROFILE", "BUFFER_POOL", "BUFFER_PROFILE", "BUFFER_PG", "BUFFER_QUEUE",
                  "CABLE_LENGTH", "PFC_WD", "PORT", "INTERFACE", "BGP_NEIGHBOR", "LOOPBACK_INTERFACE", "DEVICE_METADATA"):
        assert db[table], table
    assert db["DSCP_TO_TC_MAP"]["AZURE"] == {"0": "0", "26": "3", "34": "4", "48": "6"}
    assert db["PORT"]["Ethernet0"] == {"admin_status": "up", "alias": "etp1", "index": "1", "lanes": "0,1,2,3,4,5,6,7",
                                       "speed": "400000", "mtu": "9100", "fec": "rs", "description": "h0-eth0"}
    files = rc.switch(rc.f.switches[0])
    assert json.loads(files["config_db.json"]) == db
    # the same names in frr.conf as in config_db.json's PORT table
    assert set(re.findall(r"^interface (Ethernet\d+)$", files["frr.conf"], re.M)) == set(db["PORT"])
    assert "neighbor TO-SPINE peer-group" in files["bgpd.conf"] and "neighbor TO-SPINE bfd" in files["bgpd.conf"]
    assert "redistribute connected route-map LOOM-CONNECTED" in files["bgpd.conf"]
    # only the loopback and the host's /31 are originated, never the leaf-spine /31s
    permits = re.findall(r"^ip prefix-list LOOM-(?:LOOPBACK|HOSTS) seq \d+ permit (\S+)$", files["bgpd.conf"], re.M)
    assert permits == [f"{rc.f.switches[0].loopback}/32", "10.0.0.12/31"]
    h0 = hosts["h0"]
    assert "MTUBytes=9000" in h0["10-loom-eth0.network"] and "mtu 9000" in h0["loom-routes.sh"]
    assert "--trust dscp --pfc 0,0,0,1,1,0,0,0" in h0["mlnx_qos.sh"] and "-t 104" in h0["mlnx_qos.sh"]


def test_config_db_json_is_json_with_one_entry_per_line():
    db = {"PORT": {"Ethernet0": {"mtu": "9100", "alias": 'e"1'}}, "EMPTY": {}, "MAP": {"AZURE": {"0": "0"}}}
    text = config_db_json(db)
    assert json.loads(text) == db
    assert '  "Ethernet0": {"alias": "e\\"1", "mtu": "9100"},' in text or '  "Ethernet0": {"alias": "e\\"1", "mtu": "9100"}' in text


def _plant(db, table, key, field, value):
    db = copy.deepcopy(db)
    entry = db[table][key]
    if field is None:
        del db[table][key]
    else:
        entry[field] = value
    return db


@pytest.mark.parametrize("table, key, field, value, expect", [
    ("DSCP_TO_TC_MAP", "AZURE", "26", "2", "DSCP 26 to priority 2"),  # DSCP
    ("DSCP_TO_TC_MAP", "AZURE", "48", "3", "DSCP 48 to priority 3"),  # CNP
    ("PORT_QOS_MAP", "Ethernet0", "pfc_enable", "3", "pfc_enable is '3'"),  # priorities
    ("PORT_QOS_MAP", "Ethernet0", "pfcwd_sw_enable", "", "pfcwd_sw_enable"),
    ("PFC_WD", "Ethernet0", None, None, "no PFC watchdog"),
    ("TC_TO_PRIORITY_GROUP_MAP", "AZURE", "4", "3", "priority 3 has no PG of its own"),  # PGs
    ("BUFFER_PROFILE", "pg_lossless_400000_2m_profile", "xoff", "1000", "XOFF headroom"),
    ("CABLE_LENGTH", "AZURE", "Ethernet0", "300m", "needed at 400G over 300m"),
    ("MAP_PFC_PRIORITY_TO_QUEUE", "AZURE", "3", "5", "PFC pauses queue 5"),  # queues
    ("QUEUE", "Ethernet0|4", "wred_profile", "", "no ECN marking"),
    ("BUFFER_QUEUE", "Ethernet0|3", "profile", "egress_lossy_profile", "no lossless buffer"),
    ("SCHEDULER", "scheduler.nccl", "weight", "30", "DWRR weight 30"),
    ("PORT", "Ethernet0", "mtu", "1500", "MTU 1500 cannot carry"),  # MTU
])
def test_cross_check_catches_a_planted_switch_mismatch(lab, table, key, field, value, expect):
    rc, switches, hosts = lab
    assert check(rc, switches, hosts)["ok"]
    bad = dict(switches, **{"lab-leaf0": _plant(switches["lab-leaf0"], table, key, field, value)})
    r = check(rc, bad, hosts)
    assert not r["ok"] and any(expect in p and p.startswith("lab-leaf0") for p in r["problems"]), r["problems"]


@pytest.mark.parametrize("file, old, new, expect", [
    ("mlnx_qos.sh", "--pfc 0,0,0,1,1,0,0,0", "--pfc 0,0,0,1,0,0,0,0", "PFC on 0,0,0,1,0,0,0,0"),  # priorities
    ("mlnx_qos.sh", "--trust dscp", "--trust pcp", "trusts pcp"),  # DSCP
    ("mlnx_qos.sh", "echo 48 >", "echo 46 >", "CNPs with DSCP 46"),
    ("mlnx_qos.sh", "-t 104", "-t 96", "ToS 96"),
    ("mlnx_qos.sh", "--tcbw 20,0,0,60,20", "--tcbw 40,0,0,40,20", "ETS weights"),  # queues' weights
    ("10-loom-eth0.network", "MTUBytes=9000", "MTUBytes=1500", "MTU 1500 cannot carry a 4096-byte RoCE payload"),  # MTU
])
def test_cross_check_catches_a_planted_host_mismatch(lab, file, old, new, expect):
    rc, switches, hosts = lab
    assert old in hosts["h1"][file]
    bad = dict(hosts, h1={**hosts["h1"], file: hosts["h1"][file].replace(old, new)})
    r = check(rc, switches, bad)
    assert not r["ok"] and any(expect in p for p in r["problems"]), r["problems"]


def test_hosts_disagreeing_on_the_mtu_are_caught(lab):
    rc, switches, hosts = lab
    bad = dict(hosts, h1={**hosts["h1"], "10-loom-eth0.network": hosts["h1"]["10-loom-eth0.network"].replace("9000", "8000")})
    assert "hosts disagree on the MTU: [8000, 9000]" in check(rc, switches, bad)["problems"]


def test_loom_check_speaks_roce_on_ethernet_and_fails_on_a_bad_config(tmp_path, monkeypatch):
    r = runner.invoke(app, ["check", str(LAB)])
    assert r.exit_code == 0, r.output
    for word in ("NIC-to-NIC", "ECMP", "routes", "priority 3", "PFC", "lossless configuration: yes"):
        assert word in r.output, word
    for word in (" CA", "SL", "VL", "LFT"):
        assert word not in r.output, word
    # a renderer that drifts from the model fails `loom check`
    import loom.render.sonic as sonic

    real = sonic.qos_tables

    def drifted(*a, **k):
        t = real(*a, **k)
        t["DSCP_TO_TC_MAP"]["AZURE"]["26"] = "1"
        return t

    monkeypatch.setattr("loom.render.roce.qos_tables", drifted)
    r = runner.invoke(app, ["check", str(LAB), "--json"])
    assert r.exit_code == 1 and not json.loads(r.output)["roce_qos"]["ok"]


def test_a_class_dscp_and_the_cnp_dscp_reach_switches_and_hosts(tmp_path):
    path = tmp_path / "lab.yaml"
    path.write_text(LAB.read_text() + QOS.replace("lossless: true, env_tc", "lossless: true, dscp: 24, env_tc") + "  cnp_dscp: 46\n")
    f = load_fabric(path)
    rc = RoceConfigs(f)
    assert rc.config_db(f.switches[0])["DSCP_TO_TC_MAP"]["AZURE"] == {"0": "0", "24": "3", "34": "4", "46": "6"}
    script = rc.host(0)["mlnx_qos.sh"]
    assert "echo 46 >" in script and "-t 96" in script
    assert check_fabric(f)["ok"]


def test_configs_into_a_file_is_a_clean_error(tmp_path):
    (tmp_path / "taken").write_text("x")
    r = runner.invoke(app, ["configs", str(LAB), "--out", str(tmp_path / "taken")])
    assert r.exit_code == 1 and "cannot write under" in r.output and "Traceback" not in r.output
    r = runner.invoke(app, ["configs", str(LAB), "--out", str(tmp_path / "out"), "--only", "lab-leaf*"])
    assert r.exit_code == 0 and "3 devices (15 files)" in r.output
    assert sorted(p.name for p in (tmp_path / "out" / "switches").iterdir()) == ["lab-leaf0", "lab-leaf1", "lab-leaf2"]
    assert not list((tmp_path / "out").rglob(".loom-tmp*"))


@pytest.fixture(scope="module")
def bigraph():
    """EFLOPS's BiGraph: a priority per part for each lossless class."""
    f = load_fabric(TOPO / "eflops-bigraph.yaml")
    rc = RoceConfigs(f)
    return rc, {s.name: rc.config_db(s) for s in f.switches}, {n.name: rc.host(n.index) for n in f.nodes}, lower_part_nics(f)


def test_a_bigraph_gets_a_lossless_priority_per_part_and_the_pfc_verdict_is_for_them(bigraph):
    rc, switches, hosts, lower = bigraph
    r = check_roce_qos(rc.qos, rc.lossless, switches, hosts, lower)
    assert r["ok"], r["problems"]
    assert {p["name"]: (p["priority"], p["dscp"]) for p in r["priorities"]}["roce/lower"] == (4, 34) and r["pfc"] == [3, 4]
    assert len(lower) == 8 and all("-t 136" in hosts[h]["mlnx_qos.sh"] for h in lower)  # ToS = DSCP 34 << 2
    upper = next(h for h in hosts if h not in lower)
    assert "-t 104" in hosts[upper]["mlnx_qos.sh"] and "-t 136" not in hosts[upper]["mlnx_qos.sh"]
    out = runner.invoke(app, ["check", str(TOPO / "eflops-bigraph.yaml"), "--format", "json"])
    per = json.loads(out.stdout)["qos"]["per_vl"]  # one plane: its verdict at the top level
    assert set(per) == {"3", "4"} and all(v["deadlock_free"] for v in per.values()), per


@pytest.mark.parametrize("plant, expect", [
    ("host", "needs 136 (DSCP 34) on the BiGraph's lower part"),  # a lower-part NIC marks like the upper part
    ("switch", "DSCP_TO_TC_MAP sends DSCP 34 to priority 3"),  # the switch folds the parts back onto one priority
])
def test_the_per_part_priority_mismatch_is_caught(bigraph, plant, expect):
    rc, switches, hosts, lower = bigraph
    if plant == "host":
        h = sorted(lower)[0]
        hosts = dict(hosts, **{h: {**hosts[h], "mlnx_qos.sh": hosts[h]["mlnx_qos.sh"].replace("-t 136", "-t 104")}})
    else:
        s = sorted(switches)[0]
        db = copy.deepcopy(switches[s])
        db["DSCP_TO_TC_MAP"]["AZURE"]["34"] = "3"
        switches = dict(switches, **{s: db})
    r = check_roce_qos(rc.qos, rc.lossless, switches, hosts, lower)
    assert not r["ok"] and any(expect in p for p in r["problems"]), r["problems"]
