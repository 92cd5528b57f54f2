"""Partitions pushed to the simulated fabric and read back: OpenSM started on loom's
partitions.conf programs every CA port (and the switch port facing it), `loom plan` reads every
P_Key table back, drift made behind OpenSM's back is repaired by `loom apply`, and the SA's path
records answer as the partitions say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from loom.expand import load_fabric
from loom.fabrics.infiniband.apply import apply_plan
from loom.fabrics.infiniband.daemon import Daemons, alive, client_dir
from loom.fabrics.infiniband.pkeys import NO_PARTITIONS, intent, read_pkeys
from loom.fabrics.infiniband.qos_readback import directed_routes
from loom.fabrics.infiniband.sim import tools_missing
from loom.fabrics.infiniband.target import SimTarget
from loom.push.planfile import read_plan
from loom.routing import subnet

from .simfabric import loom, opensm_dies_in_first_sweep_wait, procs_using

pytestmark = pytest.mark.sim
HERE = Path(__file__).parent
TENANTS = str(HERE / "models" / "tiny-tenants.yaml")
FF2 = str(HERE / "models" / "fire-flyer-2-tenants.yaml")


def _up(model: str, tmp_path: Path, monkeypatch):
    if tools_missing():
        pytest.fail(f"simulator tools missing: {tools_missing()} — run `make setup`")
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    code, out = loom("sim", "up", model)
    assert code == 0, out
    return Daemons.of(load_fabric(model).name)


@pytest.fixture
def tenants_up(tmp_path, monkeypatch):
    d = _up(TENANTS, tmp_path, monkeypatch)
    yield d
    loom("sim", "down", "--force", TENANTS)
    assert procs_using(d.dir) == []


def path_record(d: Daemons, src_ca: str, src_lid: int, dst_lid: int) -> list[str]:
    """The SA's answer to a node asking for a path to another (saquery PathRecord from the
    source's own port): the `pkey` lines of the records it returns, none when it refuses."""
    with client_dir() as cwd:
        res = subprocess.run(["saquery", "PR", "--slid", str(src_lid), "--dlid", str(dst_lid)],
                             env={**d.env(), "SIM_HOST": src_ca}, cwd=cwd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return [line.split(".")[-1] for line in res.stdout.splitlines() if line.strip().startswith("pkey")]


def _lid(fabric, ca: str) -> int:
    return next(p.lid for p in fabric.ports if p.ca == ca)


def _apply(model: str, tmp_path: Path, name: str = "p.json") -> dict:
    code, out = loom("plan", model, "--out", str(tmp_path / name))
    assert code == 2, out
    plan = read_plan(tmp_path / name)
    code, out = loom("apply", str(tmp_path / name))
    assert code == 0 and "applied and verified" in out and "P_Keys verified on 54 ports" in out, out
    return plan


def test_partitions_pushed_read_back_and_answered_by_the_sa(tenants_up, tmp_path):
    d = tenants_up
    f = load_fabric(TENANTS)
    sn = subnet(f, 0)
    assert read_pkeys(SimTarget(d), sn)["z0-c00-hca0/1"] == NO_PARTITIONS  # OpenSM's default before the apply
    plan = _apply(TENANTS, tmp_path)
    p = plan["partitions"]
    assert p["conf_changes"] and p["ports_differing"] == 54 and p["previous_conf"] is None  # 27 CA + 27 switch ports
    assert d.partitions_file.read_text() == p["desired_conf"]
    back = read_pkeys(SimTarget(d), sn)
    assert back == intent(sn, p["desired_conf"], d.sm_host) and len(back) == 54
    assert back["z0-c00-hca0/1"] == [0x0200, 0x7FFF, 0x8101] and back["st00-hca1/1"] == [0x7FFF, 0x8200]
    assert back["mgmt0-hca0/1"] == [0x8300, 0xFFFF]  # the SM's own port, full in the default
    lid = {ca: _lid(f, ca) for ca in ("z0-c00-hca0", "z0-c01-hca0", "z1-c00-hca0", "st00-hca0")}
    assert path_record(d, "z0-c00-hca0", lid["z0-c00-hca0"], lid["z1-c00-hca0"]) == []  # tenants isolated
    assert path_record(d, "z0-c00-hca0", lid["z0-c00-hca0"], lid["st00-hca0"]) == ["0x200"]  # storage reached
    assert path_record(d, "z0-c00-hca0", lid["z0-c00-hca0"], lid["z0-c01-hca0"]) == ["0x8101"]  # own tenant
    code, out = loom("plan", TENANTS)
    assert code == 0 and "No changes" in out and "P_Keys" in out, out


def _set_pkey(d: Daemons, path: str, port: int, index: int, value: int) -> None:
    res = subprocess.run([sys.executable, str(HERE / "smp_set.py"), "pkey", path, str(port), str(index), hex(value)],
                         env={**d.env(), "PYTHONPATH": str(HERE)}, cwd=d.dir, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


def test_a_p_key_table_edited_on_one_port_is_drift_and_apply_repairs_it(tenants_up, tmp_path):
    d = tenants_up
    _apply(TENANTS, tmp_path)
    f = load_fabric(TENANTS)
    sn = subnet(f, 0)
    _, ca_dr = directed_routes(sn, d.sm_host)
    victim = _lid(f, "z0-c03-hca0")
    _set_pkey(d, ca_dr[victim], 0, 7, 0x8102)  # someone makes z0-c03 a full member of tenant-b
    assert 0x8102 in read_pkeys(SimTarget(d), sn)["z0-c03-hca0/1"]
    code, out = loom("plan", TENANTS, "--out", str(tmp_path / "drift.json"))
    assert code == 2 and "drift" in out and "P_Key tables differ from what loom applied last on 1 ports" in out, out
    plan = read_plan(tmp_path / "drift.json")
    assert plan["partitions"]["ports_differing"] == 1 and not plan["partitions"]["conf_changes"]
    assert plan["partitions"]["examples"] == ["z0-c03-hca0/1: P_Keys [0x0200 0x7fff 0x8101 0x8102] instead of "
                                              "[0x0200 0x7fff 0x8101]"]
    code, out = loom("apply", str(tmp_path / "drift.json"))
    assert code == 0 and "P_Keys verified" in out, out
    assert 0x8102 not in read_pkeys(SimTarget(d), sn)["z0-c03-hca0/1"]
    assert loom("plan", TENANTS)[0] == 0


def test_a_node_cut_off_by_a_pulled_cable_is_not_a_p_key_change(tenants_up, tmp_path):
    """The fabric as it stands: z0-c00's only cable is pulled, so its port cannot be asked; the
    other 52 tables still hold what loom applied, and the plan says so."""
    _apply(TENANTS, tmp_path)
    assert loom("sim", "link", "down", TENANTS, "z0-leaf0/1")[0] == 0
    code, out = loom("plan", TENANTS, "--out", str(tmp_path / "cut.json"))
    plan = read_plan(tmp_path / "cut.json")
    assert plan["partitions"]["ports_differing"] == 0 and not plan["partitions"]["conf_changes"], out
    assert plan["partitions"]["drift"] is None


def test_moving_a_node_between_tenants_touches_only_its_ports(tenants_up, tmp_path):
    """The runbook of docs/partitions.md: z0-c08 leaves tenant-a for tenant-b by name."""
    d = tenants_up
    _apply(TENANTS, tmp_path)
    text = Path(TENANTS).read_text()
    moved = text.replace("members: [{zone: z0, role: compute, membership: full}]",
                         'members: [{nodes: "z0-c[00-07]", membership: full}]').replace(
        "members: [{zone: z1, role: compute, membership: full}]",
        'members: [{zone: z1, role: compute, membership: full}, {nodes: z0-c08, membership: full}]')
    assert moved != text
    model = tmp_path / "tiny-tenants.yaml"
    model.write_text(moved)
    code, out = loom("diff", str(model), "--base-file", TENANTS, "--head-file", str(model))
    assert code == 0 and "who can talk to whom CHANGED" in out and "now can talk: z0-c08 ↔ z1-c[00-08]" in out, out
    code, out = loom("plan", str(model), "--out", str(tmp_path / "move.json"))
    assert code == 2, out
    plan = read_plan(tmp_path / "move.json")
    assert plan["changes"]["entries_changed"] == 0 and plan["partitions"]["conf_changes"]
    assert plan["partitions"]["ports_differing"] == 2  # z0-c08's port and the leaf port facing it
    assert loom("apply", str(tmp_path / "move.json"))[0] == 0
    f = load_fabric(model)
    lid = {ca: _lid(f, ca) for ca in ("z0-c08-hca0", "z1-c00-hca0", "z0-c00-hca0")}
    assert path_record(d, "z0-c08-hca0", lid["z0-c08-hca0"], lid["z1-c00-hca0"]) == ["0x8102"]
    assert path_record(d, "z0-c08-hca0", lid["z0-c08-hca0"], lid["z0-c00-hca0"]) == []
    assert loom("plan", str(model))[0] == 0


def test_opensm_killed_while_loading_partitions_restores_the_tables_it_had(tenants_up, tmp_path, monkeypatch):
    d = tenants_up
    code, _ = loom("plan", TENANTS, "--out", str(tmp_path / "p.json"))
    assert code == 2
    killed = opensm_dies_in_first_sweep_wait(monkeypatch, d)  # during the sweep that loads the new inputs
    res = apply_plan(read_plan(tmp_path / "p.json"), tmp_path / "p.json", timeout=30)
    assert killed and not res.ok and "restored and verified" in res.message, res.message
    assert not d.partitions_file.exists() and alive(d.pid("opensm"))
    sn = subnet(load_fabric(TENANTS), 0)
    assert set(map(tuple, read_pkeys(SimTarget(d), sn).values())) == {tuple(NO_PARTITIONS)}


def test_a_model_that_drops_its_partitions_takes_them_off_the_fabric(tenants_up, tmp_path):
    d = tenants_up
    _apply(TENANTS, tmp_path)
    text = Path(TENANTS).read_text()
    model = tmp_path / "tiny-tenants.yaml"
    model.write_text(text[:text.index("\npartitions:")] + "\n")
    code, out = loom("plan", str(model), "--out", str(tmp_path / "drop.json"))
    assert code == 2 and "partitions.conf changes" in out, out
    code, out = loom("apply", str(tmp_path / "drop.json"))
    assert code == 0, out
    assert not d.partitions_file.exists() and not (d.dir / "last-applied-pkeys.sha256").exists()
    sn = subnet(load_fabric(model), 0)
    assert set(map(tuple, read_pkeys(SimTarget(d), sn).values())) == {tuple(NO_PARTITIONS)}
    code, out = loom("plan", str(model))
    assert code == 0 and "No changes" in out and "P_Keys" not in out, out  # no longer loom's: nothing read


@pytest.mark.slow
def test_fire_flyer_tenants_end_to_end(tmp_path, monkeypatch):
    """Fire-Flyer 2 with a tenant per zone, storage shared, management closed: check prints the
    matrix, apply pushes the partitions and reads back every P_Key table (1584 CA ports and the
    1584 switch ports facing them), the SA answers as the partitions say, and plan converges."""
    code, out = loom("check", FF2, "--ebb-samples", "0")
    assert code == 0 and "who can talk to whom" in out and "z0-c[000-599]" in out, out
    d = _up(FF2, tmp_path, monkeypatch)
    try:
        code, out = loom("plan", FF2, "--out", str(tmp_path / "p.json"))
        assert code == 2, out
        assert read_plan(tmp_path / "p.json")["partitions"]["ports_differing"] == 2 * 1584
        code, out = loom("apply", str(tmp_path / "p.json"))
        assert code == 0 and "P_Keys verified on 3168 ports" in out, out
        f = load_fabric(FF2)
        lid = {ca: _lid(f, ca) for ca in ("z0-c000-mlx5_0", "z1-c599-mlx5_0", "st179-mlx5_1", "z1-m05-mlx5_0",
                                          "z0-c001-mlx5_0")}
        src = ("z0-c000-mlx5_0", lid["z0-c000-mlx5_0"])
        assert path_record(d, *src, lid["z1-c599-mlx5_0"]) == []  # the other tenant
        assert path_record(d, *src, lid["z1-m05-mlx5_0"]) == []  # management
        assert path_record(d, *src, lid["st179-mlx5_1"]) == ["0xB00"]  # storage, across the zones
        assert path_record(d, *src, lid["z0-c001-mlx5_0"]) == ["0x8A00"]  # its own tenant
        code, out = loom("plan", FF2)
        assert code == 0 and "No changes" in out and "P_Keys" in out, out
    finally:
        loom("sim", "down", "--force", FF2)


@pytest.mark.slow
def test_partitions_over_ssh_reach_every_sm_host_and_are_read_back(tmp_path, monkeypatch):
    """The SSH target (a master and a standby behind sshd): the file lands on both hosts, named in
    Loom's options block, and the P_Key tables are read back through the master's port."""
    from .sshfabric import SmPair, tools_missing as ssh_missing

    if ssh_missing() + tools_missing():
        pytest.fail(f"missing {ssh_missing() + tools_missing()} — run `make setup`")
    monkeypatch.setenv("LOOM_SSH_STATE_DIR", str(tmp_path / "ssh-state"))
    with SmPair(load_fabric(TENANTS), tmp_path / "ssh", ("mgmt0", "st00")) as pair:
        target = ["--target", "ssh", "--inventory", str(pair.inventory), "--ssh-config", str(pair.ssh_config)]
        code, out = loom("plan", TENANTS, "--out", str(tmp_path / "p.json"), *target)
        assert code == 2 and "partitions.conf changes; 54 ports" in out, out
        code, out = loom("apply", str(tmp_path / "p.json"))
        assert code == 0 and "P_Keys verified on 54 ports" in out, out
        want = read_plan(tmp_path / "p.json")["partitions"]["desired_conf"]
        for h in pair.hosts:
            assert Path(h.paths.partitions).read_text() == want
            assert f"partition_config_file {h.paths.partitions}\n" in Path(h.paths.conf).read_text()
        code, out = loom("plan", TENANTS, *target)
        assert code == 0 and "No changes" in out and "P_Keys" in out, out


def test_a_breach_is_never_pushed_by_plan_nor_by_a_tampered_plan(tenants_up, tmp_path):
    import json

    from loom.push.planfile import content_digest

    d = tenants_up
    text = Path(TENANTS).read_text()
    breach = tmp_path / "tiny-tenants.yaml"
    limited = "      - {role: compute, membership: limited}\n"
    breach.write_text(text.replace(limited, limited + "      - {nodes: z0-c03, membership: full}\n"))
    code, out = loom("plan", str(breach))
    assert code == 1 and "fail isolation: z0-c03 (tenant-a) can reach z1-c[00-08] (tenant-b)" in out, out
    # a plan of the sound model whose partitions file is swapped for the breach's, digests recomputed
    code, _ = loom("plan", TENANTS, "--out", str(tmp_path / "p.json"))
    assert code == 2
    plan = read_plan(tmp_path / "p.json")
    bad = plan["partitions"]["desired_conf"].replace("0x0002c90100000041=limited", "0x0002c90100000041=full")
    assert bad != plan["partitions"]["desired_conf"]
    p = {**plan, "partitions": {**plan["partitions"], "desired_conf": bad}}
    (tmp_path / "p.json").write_text(json.dumps({**p, "plan_sha256": content_digest(p)}))
    code, out = loom("apply", str(tmp_path / "p.json"))
    assert code == 1 and "its partitions differ from what" in out, out
    # a plan of the breach itself (made by a plan that did not check), refused by apply's re-check
    from loom.fabrics.infiniband import pkeys

    with pytest.MonkeyPatch.context() as unchecked:
        unchecked.setattr(pkeys, "refusal", lambda fabric: None)
        code, _ = loom("plan", str(breach), "--out", str(tmp_path / "b.json"))
    assert code == 2
    code, out = loom("apply", str(tmp_path / "b.json"))
    assert code == 1 and "fails partition isolation (z0-c03 (tenant-a) can reach" in out, out
    assert not d.partitions_file.exists()  # nothing written


def test_terraform_loom_routing_carries_the_partitions(tenants_up, tmp_path):
    """`loom_routing` (`loom tf routing`) plans and applies the partitions with the tables: its
    summary names them and its desired digest covers the partitions file."""
    import json

    from .simfabric import runner
    from loom.cli import app

    r = runner.invoke(app, ["tf", "routing", TENANTS])
    doc = json.loads(r.stdout)
    assert r.exit_code == 2 and "partitions: partitions.conf changes, 54 ports hold other P_Keys" in doc["summary"]
    r = runner.invoke(app, ["tf", "routing", TENANTS, "--apply", "--expect", doc["desired_sha256"]])
    assert r.exit_code == 0 and json.loads(r.stdout)["in_sync"], r.output
    assert tenants_up.partitions_file.exists()
    again = runner.invoke(app, ["tf", "routing", TENANTS])
    assert again.exit_code == 0 and json.loads(again.stdout)["desired_sha256"] == doc["desired_sha256"]
