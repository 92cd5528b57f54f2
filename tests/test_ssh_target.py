"""The SSH target with real parts (tests/sshfabric.py): OpenSSH servers on 127.0.0.1, a throwaway
user, two OpenSMs on one simulated fabric — the master (priority 15, the model's
subnet_manager) and a standby (priority 1).  Plan and apply over ssh, the standby's files,
the site's own options kept, and a failover that keeps the tables."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from loom.expand import load_fabric
from loom.render.sm_host import managed_part, site_part
from loom.push.packing import mismatch, rows_text
from loom.render.opensm import parse_lfts_dump
from loom.fabrics.infiniband.sim import tools_missing as sim_tools_missing

from .simfabric import TINY, loom
from .sshfabric import SITE_CONF, SmPair, log_text, sweeps, tools_missing, wait_for
from .load import slack

pytestmark = [pytest.mark.sim, pytest.mark.slow]


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    missing = tools_missing() + sim_tools_missing()
    if missing:
        pytest.fail(f"missing {missing} — run `make setup` (openssh-server, ibsim, opensm)")
    with SmPair(load_fabric(TINY), tmp_path_factory.mktemp("ssh"), ("mgmt0", "st00")) as p:
        yield p


@pytest.fixture
def ssh_state(pair, tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_SSH_STATE_DIR", str(tmp_path / "ssh-state"))
    return ["--target", "ssh", "--inventory", str(pair.inventory), "--ssh-config", str(pair.ssh_config)]


def plan(args: list[str], out: Path) -> tuple[int, str, dict]:
    code, text = loom("plan", TINY, "--out", str(out), *args)
    return code, text, json.loads(out.read_text()) if out.exists() else {}


def test_plan_apply_over_ssh_then_no_changes(pair, ssh_state, tmp_path):
    code, out, p = plan(ssh_state, tmp_path / "plan.json")
    assert code == 2, out
    assert p["target"]["kind"] == "ssh" and [h["name"] for h in p["target"]["hosts"]] == ["mgmt0", "st00"]
    assert "IdentityFile" not in json.dumps(p) and "id_ed25519" not in json.dumps(p)  # no key material or key paths
    code, out = loom("apply", str(tmp_path / "plan.json"))
    assert code == 0 and "applied and verified" in out, out
    want = rows_text(p["desired_lfts"])
    assert mismatch(pair.dump_fts(), want) is None  # read as root from the fabric, not through the target
    for h in pair.hosts:  # every SM host holds the same tables and LIDs; the site's settings are kept
        held = Path(h.paths.lfts).read_text()  # OpenSM's file: the plan's rows, with the portguid comments it needs
        assert parse_lfts_dump(held) == parse_lfts_dump(want) and "Channel Adapter portguid" in held
        assert Path(h.paths.guid2lid).read_text() == p["guid2lid"]
        conf = Path(h.paths.conf).read_text()
        assert f"sm_priority {h.priority}\n" in managed_part(conf)
        assert site_part(conf) == SITE_CONF.format(root=h.root)
    code, out, again = plan(ssh_state, tmp_path / "again.json")
    assert code == 0 and "No changes" in out, out
    audit = (tmp_path / "ssh-state" / "tiny" / "audit.log").read_text()
    assert "id_ed25519" not in audit and "BEGIN OPENSSH" not in audit


def test_same_tables_as_the_sim_target(pair, ssh_state, tmp_path):
    """What a change is does not depend on where it goes: the sim target's plan of the same
    fabric (same live tables) wants the tables the SSH target applied."""
    from loom.fabrics.infiniband.design import settled_route
    from loom.render.opensm import lfts_dump, tables_from_dump
    from loom.routing import subnet

    fabric = load_fabric(TINY)
    live = tables_from_dump(subnet(fabric, 0), pair.dump_fts(), "live")
    assert mismatch(pair.dump_fts(), lfts_dump(settled_route(fabric, live))) is None


def test_standby_with_stale_files_is_drift(pair, ssh_state, tmp_path):
    standby = pair.hosts[1]
    lfts = Path(standby.paths.lfts)
    good = lfts.read_text()
    lfts.write_text(good.replace(" 001 #", " 002 #", 1))  # one entry of one switch
    code, out, p = plan(ssh_state, tmp_path / "plan.json")
    assert code == 2 and "standby" in out and "st00: lfts differ" in out, out
    assert p["standbys_differing"] == ["st00: lfts differ from the master's"]
    code, out = loom("apply", str(tmp_path / "plan.json"))
    assert code == 0, out
    assert lfts.read_text() == good
    code, out, _ = plan(ssh_state, tmp_path / "again.json")
    assert code == 0 and "No changes" in out, out


def test_failover_to_the_standby_keeps_the_tables(pair, ssh_state, tmp_path):
    code, out, p = plan(ssh_state, tmp_path / "plan.json")
    assert code == 0, out
    want = rows_text(p["desired_lfts"])
    master, standby = pair.hosts
    log = Path(standby.paths.log)
    before = sweeps(log)
    pair.kill_opensm(master)
    wait_for("the standby to take over", lambda: "Entering MASTER state" in log_text(log) and sweeps(log) > before, 90)
    assert "file tables configured" in log_text(log).split("Entering MASTER state")[-1]
    assert mismatch(pair.dump_fts(), want) is None
    # issue 34: the fabric says who is master now (the master's log still says SUBNET UP)
    code, out, p = plan(ssh_state, tmp_path / "after.json")
    assert code == 0 and "No changes" in out, out
    assert "subnet manager: master st00 (LID 19, priority 1); mgmt0 (LID 27): no SM answering" in out, out
    assert [s["name"] for s in p["subnet_managers"]] == ["st00", "mgmt0"] and "SUBNET UP" in log_text(Path(master.paths.log))
    # a change after the failover is pushed to the standby that is master now, and verified on the old master's files
    lfts = Path(master.paths.lfts)
    good = lfts.read_text()
    lfts.write_text(good.replace(" 001 #", " 002 #", 1))
    code, out, p = plan(ssh_state, tmp_path / "stale.json")
    assert code == 2 and "mgmt0: lfts differ from the master's" in out, out
    before = sweeps(log)
    code, out = loom("apply", str(tmp_path / "stale.json"))
    assert code == 0 and "master subnet manager: st00" in out and "applied and verified" in out, out
    assert sweeps(log) > before and lfts.read_text() == good  # st00's OpenSM pushed; mgmt0's files put back
    code, out, _ = plan(ssh_state, tmp_path / "again.json")
    assert code == 0 and "No changes" in out and "master st00" in out, out


def last_state(log: Path) -> str:
    """The state the OpenSM started last entered last ("none" yet): it appends to its predecessor's log."""
    entered = [l.split("Entering ")[1].split()[0] for l in log_text(log).rsplit("OpenSM 3", 1)[-1].splitlines() if "Entering" in l]
    return entered[-1] if entered else "none"


def start_again_until_master(pair, timeout: float) -> float:
    """Start the old master's OpenSM again; the seconds until it is master and has swept (the
    other SM a standby by then)."""
    master, standby = pair.hosts
    mlog = Path(master.paths.log)
    before, started = sweeps(mlog), time.monotonic()
    pair.start_opensm(master)
    wait_for("the master to take over again", lambda: last_state(mlog) == "MASTER" and sweeps(mlog) > before, timeout)
    took = time.monotonic() - started
    assert last_state(Path(standby.paths.log)) == "STANDBY"
    return took


def test_the_master_started_again_takes_over(pair, ssh_state, tmp_path):
    """issue 34: after a failover the old master's OpenSM is started again; as a standby of higher
    priority it sends the master trap 144, the master's heavy sweep on it (Loom's `sweep_on_trap
    TRUE`, over the site's FALSE) hands over, and it is master again within one sweep — measured
    0.5–4.5 s — serving the same tables; `loom plan` says No changes and names it."""
    master, standby = pair.hosts
    slog = Path(standby.paths.log)
    assert "#loom# sweep_on_trap FALSE\n" in Path(master.paths.conf).read_text()
    if pair.opensm_pid(master) and Path(f"/proc/{pair.opensm_pid(master)}").exists():  # run on its own: fail over first
        before = sweeps(slog)
        pair.kill_opensm(master)
        wait_for("the standby to take over", lambda: last_state(slog) == "MASTER" and sweeps(slog) > before, 90)
    code, out, p = plan(ssh_state, tmp_path / "plan.json")
    assert code == 0 and "master st00 (LID 19, priority 1); mgmt0 (LID 27): no SM answering" in out, out
    want = rows_text(p["desired_lfts"])
    took = start_again_until_master(pair, 30)
    assert took < 10 * slack(), f"the returning master took {took:.1f} s (measured 0.5-4.5 s)"
    assert mismatch(pair.dump_fts(), want) is None
    code, out, _ = plan(ssh_state, tmp_path / "again.json")
    assert code == 0 and "No changes" in out, out
    assert "subnet manager: master mgmt0 (LID 27, priority 15); standby st00 (LID 19, priority 1)" in out, out


def test_a_standby_that_does_not_answer_does_not_stop_the_masters_sweep(pair):
    """The harness's own fidelity: on hardware the kernel times out a request nobody answers; the
    tests' OpenSMs get that from tests/umad_timeouts.c (umad2sim has no timer).  A heavy sweep of
    the master that asks a stopped standby for its SMInfo still ends, as it must for the returning
    master above (whose trap 144s ibsim never answers)."""
    master, standby = pair.hosts
    if last_state(Path(master.paths.log)) != "MASTER":  # run on its own: both started afresh
        for h in pair.hosts:
            pair.kill_opensm(h)
        pair.start_opensm(master)
        wait_for("the master", lambda: last_state(Path(master.paths.log)) == "MASTER" and "SUBNET UP" in log_text(Path(master.paths.log)).rsplit("OpenSM 3", 1)[-1])
        pair.start_opensm(standby)
        wait_for("the standby", lambda: last_state(Path(standby.paths.log)) == "STANDBY")
    mlog = Path(master.paths.log)
    before = sweeps(mlog)
    os.kill(pair.opensm_pid(standby), signal.SIGSTOP)
    try:
        os.kill(pair.opensm_pid(master), signal.SIGHUP)  # a heavy sweep: it asks every SM port for its SMInfo
        wait_for("the master's sweep past the stopped standby", lambda: sweeps(mlog) > before, 20)
        assert "Timeout while getting attribute 0x20 (SMInfo)" in log_text(mlog).rsplit("OpenSM 3", 1)[-1]
    finally:
        os.kill(pair.opensm_pid(standby), signal.SIGCONT)


def test_two_masters_are_refused_naming_both(pair, ssh_state, tmp_path):
    """Two SMs that both answer master (seen in the issue when both started at once — a race that
    a busy machine may never lose, so planted: st00's OpenSM started with `-d0`, OpenSM's own
    "ignore other SMs", beside the master mgmt0).  Both logs say MASTER; plan refuses, naming
    both, until one is stopped — then the other serves the same tables and plan says No
    changes.  The last test of the pair that needs both: st00 stays stopped."""
    code, out, _ = plan(ssh_state, tmp_path / "first.json")
    assert code == 0 or loom("apply", str(tmp_path / "first.json"))[0] == 0, out
    other = pair.hosts[1]
    logs = [Path(h.paths.log) for h in pair.hosts]
    pair.kill_opensm(other)
    swept = sweeps(logs[1])
    pair.start_opensm(other, "-d0")
    wait_for("st00's OpenSM to become master beside mgmt0's",
             lambda: [last_state(log) for log in logs] == ["MASTER", "MASTER"] and sweeps(logs[1]) > swept, 60 * slack())
    code, out = loom("plan", TINY, *ssh_state)
    flat = " ".join(out.split())
    assert code == 1, out
    assert "mgmt0 (LID 27, GUID 0x0002c901000001b1, priority 15): master" in flat and "st00 (LID 19" in flat, out
    pair.kill_opensm(pair.hosts[1])
    code, out, _ = plan(ssh_state, tmp_path / "one.json")
    assert code == 0 and "No changes" in out and "master mgmt0 (LID 27, priority 15); st00 (LID 19): no SM answering" in out, out


def test_a_failover_between_push_and_read_back_is_settled(tmp_path, monkeypatch):
    """The master's OpenSM dies right after apply pushed (SIGKILL while the tables are read back)
    and the standby takes over: the apply is not verified (the master it pushed to is gone), so it
    restores — through the SM that is master now — and says so; the next plan names that master
    and the same apply then goes through it."""
    import loom.fabrics.infiniband.apply as applymod
    from loom.fabrics.infiniband.apply import apply_plan
    from loom.push.planfile import read_plan

    monkeypatch.setenv("LOOM_SSH_STATE_DIR", str(tmp_path / "ssh-state"))
    with SmPair(load_fabric(TINY), tmp_path / "pair", ("mgmt0", "st00")) as pair:
        args = ["--target", "ssh", "--inventory", str(pair.inventory), "--ssh-config", str(pair.ssh_config)]
        before = pair.dump_fts()
        assert loom("plan", TINY, "--out", str(tmp_path / "p.json"), *args)[0] == 2
        master, standby = pair.hosts
        log = Path(standby.paths.log)
        real, killed = applymod.block_mismatch, []

        def failover(*a, **k):
            if not killed:
                killed.append(sweeps(log))
                pair.kill_opensm(master)
                wait_for("the standby to take over", lambda: "Entering MASTER" in log_text(log) and sweeps(log) > killed[0], 90)
            return real(*a, **k)

        monkeypatch.setattr(applymod, "block_mismatch", failover)
        res = apply_plan(read_plan(tmp_path / "p.json"), tmp_path / "p.json", timeout=60)
        monkeypatch.setattr(applymod, "block_mismatch", real)
        assert killed and not res.ok and "OpenSM is not running on the master mgmt0" in res.message, res.message
        assert "previous tables restored and verified" in res.message, res.message
        assert parse_lfts_dump(pair.dump_fts()) == parse_lfts_dump(before)
        code, out = loom("plan", TINY, "--out", str(tmp_path / "again.json"), *args)
        assert code == 2 and "master st00 (LID 19, priority 1); mgmt0 (LID 27): no SM answering" in out, out
        code, out = loom("apply", str(tmp_path / "again.json"))
        assert code == 0 and "applied and verified" in out, out
        code, out = loom("plan", TINY, *args)
        assert code == 0 and "No changes" in out and "master st00" in out, out


def test_fire_flyer_over_ssh_apply_no_changes_failover(tmp_path, monkeypatch):
    """The acceptance run on the two-zone fabric: a verified apply over ssh, then "No changes",
    then the standby takes over and serves the same tables, then the master started again takes
    over again, and plan says No changes naming it."""
    monkeypatch.setenv("LOOM_SSH_STATE_DIR", str(tmp_path / "ssh-state"))
    ff2 = str(TINY).replace("tiny.yaml", "fire-flyer-2.yaml")
    with SmPair(load_fabric(ff2), tmp_path / "pair", ("z0-m00", "st000")) as pair:
        args = ["--target", "ssh", "--inventory", str(pair.inventory), "--ssh-config", str(pair.ssh_config)]
        code, out = loom("plan", ff2, "--out", str(tmp_path / "plan.json"), *args)
        assert code == 2, out
        code, out = loom("apply", str(tmp_path / "plan.json"))
        assert code == 0 and f"QoS verified on {2 * 1604 + 1584 + 1584} ports" in out, out
        code, out = loom("plan", ff2, "--out", str(tmp_path / "again.json"), *args)
        assert code == 0 and "No changes" in out, out
        want = rows_text(json.loads((tmp_path / "again.json").read_text())["desired_lfts"])
        master, standby = pair.hosts
        log = Path(standby.paths.log)
        before = sweeps(log)
        pair.kill_opensm(master)
        wait_for("the standby to take over", lambda: "Entering MASTER state" in log_text(log) and sweeps(log) > before, 120)
        assert "file tables configured" in log_text(log).split("Entering MASTER state")[-1]
        assert mismatch(pair.dump_fts(), want) is None
        code, out = loom("plan", ff2, *args)  # issue 34: the fabric names the standby as master
        assert code == 0 and "No changes" in out and "subnet manager: master st000 (" in out, out
        took = start_again_until_master(pair, 120)  # and the master started again takes over
        assert mismatch(pair.dump_fts(), want) is None
        code, out = loom("plan", ff2, *args)
        assert code == 0 and "No changes" in out and "subnet manager: master z0-m00 (" in out and "; standby st000 (" in out, out
        print(f"fire-flyer-2: the returning master took over in {took:.1f} s")


def test_health_reads_every_cable_end_over_ssh(pair, ssh_state, tmp_path, monkeypatch):
    """`loom health --target ssh`: the port counters are read where the master's port is (its
    python3 and libibumad, as the other reads), both ends of every cable."""
    from loom.fabrics.infiniband.sim import console

    from .simfabric import between_readings

    code, out = loom("health", TINY, *ssh_state, "--interval", "0", "--json")
    assert code == 0, out
    report = json.loads(out[out.index("{"):])
    assert report["links"] == 60 and report["counts"]["healthy"] == 60 and report["unhealthy"] == [], report
    between_readings(monkeypatch, lambda: console(pair.sim.dir, ['PerformanceSet "z0-leaf2"[6] PortCounters.SymbolErrorCounter=900']))
    code, out = loom("health", TINY, *ssh_state, "--interval", "0.5")
    assert code == 1 and "failing  z0-leaf2/6: z0-leaf2/6 SymbolErrorCounter 900/h" in out, out
