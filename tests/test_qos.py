"""Traffic classes: SL/VL/arbitration plan, QoS checks, per-VL deadlock freedom, push and
read-back on the simulated fabric, drift."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.checks import Walk, check_deadlock, check_tables
from loom.cli import app
from loom.expand import load_fabric
from loom.fabrics.infiniband.daemon import Daemons
from loom.fabrics.infiniband.sim import tools_missing
from loom.qos import plan_qos
from loom.qos.lossless import lossless_plan
from loom.render.opensm_qos import opensm_qos_conf
from loom.render.sonic import SonicPort, qos_tables
from loom.routing import route

from .faults import _port, zone_rows

TOPO = Path(__file__).parent.parent / "topology"
TINY = str(TOPO / "tiny.yaml")
runner = CliRunner()


def test_fire_flyer_classes_sl_vl_and_weights():
    r = runner.invoke(app, ["check", str(TOPO / "fire-flyer-2.yaml"), "--json", "--ebb-samples", "10"])
    assert r.exit_code == 0, r.output
    q = json.loads(r.output)["qos"]
    by = {c["name"]: c for c in q["classes"]}
    assert set(by) == {"hfreduce", "nccl", "storage", "other"}
    assert by["other"]["sl"] == 0  # unmarked traffic
    assert len({c["vl"] for c in q["classes"]}) == 4 and all(c["isolated"] for c in q["classes"])
    assert all(c["vl"] != 15 and c["vl"] < q["max_vls"] for c in q["classes"])
    for c in q["classes"]:
        assert abs(c["weight_share"] - c["share"]) <= q["rounding_bound"]
    assert by["nccl"]["env"] == {"NCCL_IB_SL": str(by["nccl"]["sl"]), "NCCL_IB_TC": str(32 * by["nccl"]["sl"])}
    assert q["sl2vl"][by["storage"]["sl"]] == by["storage"]["vl"]


def test_opensm_and_roce_renderings():
    p = plan_qos(load_fabric(TOPO / "fire-flyer-2.yaml").model)
    conf = opensm_qos_conf("ff2", p)
    assert "qos TRUE" in conf and "qos_swe_sl2vl 0,1,2,3,0" in conf and "qos_ca_vlarb_low 0:85,1:255,2:255,3:255" in conf
    roce = plan_qos(load_fabric(TOPO / "roce-4plane.yaml").model)
    db = qos_tables(roce, lossless_plan(roce), [SonicPort("Ethernet0", 1, 400, 7, "g0000-eth0")])
    # RoCE data on DSCP 26 → priority 3, the second lossless class on 4, CNPs 48 → 6, the rest lossy
    assert db["DSCP_TO_TC_MAP"]["AZURE"] == {"0": "0", "26": "3", "34": "4", "48": "6"}
    assert db["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "3,4"
    assert sum(int(s["weight"]) for s in db["SCHEDULER"].values() if s["type"] == "DWRR") == 100
    assert db["SCHEDULER"]["scheduler.cnp"] == {"type": "STRICT"} and db["QUEUE"]["Ethernet0|6"]["scheduler"] == "scheduler.cnp"
    assert db["CABLE_LENGTH"]["AZURE"] == {"Ethernet0": "7m"}
    assert db["BUFFER_PG"]["Ethernet0|3"] == {"profile": "pg_lossless_400000_7m_profile"}


def plant_two_vl_loop(t, zone: str):
    """A credit loop l0→s0→l1→s1→l0 whose dependencies come half from storage packets, half from
    compute packets: d1 (storage, on l2) turns at l1 and d2 (compute, on l3) turns at l0; d3
    (compute, on l0) goes l1→s1 and d4 (storage, on l1) goes l0→s0.  Storage destinations on
    l0 and compute destinations on l1 are kept off the links the other half needs, so each
    class's VL alone is acyclic while one shared VL is not."""
    sn = t.subnet
    l0, l1, l2, l3 = zone_rows(sn, zone, "leaf")[:4]
    s0, s1 = zone_rows(sn, zone, "spine")[:2]

    def on(leaf, role):
        return [int(l) for l in sn.ca_lids if sn.ca_switch[l] == leaf and sn.lid_role(int(l)) == role]

    d1, d2, d3, d4 = on(l2, "storage")[0], on(l3, "compute")[0], on(l0, "compute")[0], on(l1, "storage")[0]
    ch = {(l0, d1): _port(sn, l0, s0), (s0, d1): _port(sn, s0, l1), (l1, d1): _port(sn, l1, s1), (s1, d1): _port(sn, s1, l2),
          (l1, d2): _port(sn, l1, s1), (s1, d2): _port(sn, s1, l0), (l0, d2): _port(sn, l0, s0), (s0, d2): _port(sn, s0, l3),
          (l1, d3): _port(sn, l1, s1), (l0, d4): _port(sn, l0, s0)}
    for d in on(l0, "storage"):
        ch[(l1, d)] = _port(sn, l1, s0)
    for d in on(l1, "compute"):
        ch[(l0, d)] = _port(sn, l0, s1)
    return t.with_entries(ch)


def test_cycle_broken_by_separate_vls_is_free_only_with_the_vl_aware_check():
    f = load_fabric(TINY)
    t = plant_two_vl_loop(route(f)[0], "z0")
    # unmarked traffic only to management nodes and switches; compute and storage on their own VLs
    q = f.model.qos
    split = f.model.model_copy(update={"qos": q.model_copy(update={"classes": [
        c.model_copy(update={"destinations": ["management", "switch"]}) if c.default else c for c in q.classes]})})
    assert not check_deadlock(Walk(t)).deadlock_free  # one VL: a credit loop
    r = check_tables(t, ebb_samples=0, qos=plan_qos(split))
    assert r["reachable"] and not r["deadlock_free_single_vl"]
    assert r["deadlock_free"] and r["cycle"] is None, r["qos"]["per_vl"]
    # the same routing with compute and storage sharing a VL is not deadlock-free
    shared = split.model_copy(update={"qos": split.qos.model_copy(update={"classes": [
        c.model_copy(update={"isolated": c.default}) for c in split.qos.classes]})})
    r1 = check_tables(t, ebb_samples=0, qos=plan_qos(shared))
    assert not r1["deadlock_free"] and r1["cycle"]


@pytest.fixture
def tiny_sim(tmp_path, monkeypatch):
    """The tiny fabric up in the simulator (with its QoS), torn down afterwards."""
    if tools_missing():
        pytest.fail(f"simulator tools missing: {tools_missing()} — run `make setup`")
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    assert runner.invoke(app, ["sim", "up", TINY]).exit_code == 0
    yield Daemons.of("tiny")
    runner.invoke(app, ["sim", "down", TINY])


@pytest.mark.sim
def test_wrong_sl2vl_on_the_fabric_is_drift(tiny_sim):
    assert runner.invoke(app, ["plan", TINY]).exit_code == 2
    r = runner.invoke(app, ["apply", "--model", TINY])
    assert r.exit_code == 0 and "QoS verified on" in r.output, r.output
    d = tiny_sim
    conf = d.conf_file.read_text()
    d.conf_file.write_text(conf.replace("qos_ca_sl2vl 0,1,2,0", "qos_ca_sl2vl 0,2,1,0"))  # someone swaps two VLs
    assert d.reload() == "file"
    r = runner.invoke(app, ["plan", TINY])
    assert r.exit_code == 2 and "drift" in r.output and "SL2VL [0, 2, 1" in r.output, r.output
    r = runner.invoke(app, ["apply", "--model", TINY])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["plan", TINY])
    assert r.exit_code == 0 and "No changes" in r.output


@pytest.mark.sim
def test_a_read_back_split_between_readers_answers_as_one_reader(tiny_sim, monkeypatch):
    """A large fabric's read-back goes to two reader processes; their answers, joined, are the
    one reader's, in the jobs' order, and the progress counts every port once."""
    from loom.fabrics.infiniband import qos_readback
    from loom.progress import listening
    from loom.routing import subnet

    from .test_plan_apply import Recorder

    sn = subnet(load_fabric(TINY), 0)
    jobs = qos_readback.qos_jobs(sn, tiny_sim.sm_host)
    one = qos_readback.madqueries(tiny_sim, jobs)
    runs = []
    reader = qos_readback._madquery
    monkeypatch.setattr(qos_readback, "_madquery", lambda d, part, *a: runs.append(len(part)) or reader(d, part, *a))
    monkeypatch.setattr(qos_readback, "SPLIT_FROM", 2)
    seen = Recorder()
    with listening(seen):
        two = qos_readback.read_qos(tiny_sim, sn)
    assert runs == [60, 60] and seen.steps == len(jobs) == 120
    assert two == {a["key"]: {"sl2vl": a["sl2vl"], "vlarb": a["vlarb"]} for a in one}
    assert qos_readback.madqueries(tiny_sim, jobs) == one  # the order of the jobs, not of the readers


@pytest.mark.sim
def test_fast_qos_reader_equals_smpquery(tiny_sim):
    """The one-process MAD reader returns exactly what `smpquery` returns, port by port."""
    from loom.fabrics.infiniband.qos_readback import read_qos, read_qos_smpquery
    from loom.routing import subnet

    sn = subnet(load_fabric(TINY), 0)
    fast, slow = read_qos(tiny_sim, sn), read_qos_smpquery(tiny_sim, sn)
    assert len(fast) == 120 and fast == slow


@pytest.mark.sim
def test_the_models_opensm_options_reach_the_running_opensm(tiny_up, tmp_path):
    """`opensm: {max_wire_smps: N}` is written into OpenSM's options file beside QoS: plan shows
    the change, apply restarts OpenSM on it (which loads it), the next plan says No changes, and
    routing is not touched (the option is not part of the routing key)."""
    from loom.fabrics.infiniband.plan import routing_key

    from .simfabric import loom

    d = tiny_up
    assert loom("plan", TINY)[0] == 2 and loom("apply", "--model", TINY)[0] == 0
    tuned = tmp_path / "tiny.yaml"
    tuned.write_text(Path(TINY).read_text() + "\nopensm:\n  max_wire_smps: 16\n")
    assert routing_key(load_fabric(tuned)) == routing_key(load_fabric(TINY))
    out_before = (d.dir / "opensm.out").read_text()
    code, out = loom("plan", str(tuned), "--format", "json")
    plan = json.loads(out)
    assert code == 2 and plan["qos"]["conf_changes"] and plan["changes"]["entries_changed"] == 0, out
    code, out = loom("apply", "--model", str(tuned))
    assert code == 0 and "applied and verified" in out, out
    assert "max_wire_smps 16\n" in d.conf_file.read_text()
    assert "max_wire_smps = 16" in (d.dir / "opensm.out").read_text()[len(out_before):]  # the restarted OpenSM took it
    code, out = loom("plan", str(tuned))
    assert code == 0 and "No changes" in out, out
    code, out = loom("plan", TINY)  # the option dropped from the model: a change back
    assert code == 2, out
