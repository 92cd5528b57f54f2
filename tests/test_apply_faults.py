"""Fault injection on the simulated fabric: after each fault the fabric is fully old or fully
new and verified, the lock is free, the audit says what happened, nothing is left running,
and `loom plan` shows no false drift.  Most faults run on `tiny`; slow as a whole (CI runs it)."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .load import hogs, slack
from .faults import plant_credit_loop, plant_drop, plant_forwarding_loop
from .simfabric import TINY, TOPO, loom, procs_using
from loom.expand import load_fabric
from loom.push import audit
from loom.fabrics.infiniband.apply import apply_plan
from loom.push.planfile import content_digest
from loom.fabrics.infiniband.daemon import Daemons
from loom.push.journal import Journal
from loom.push.lock import FabricLock, LockHeld, is_free
from loom.push.packing import digest_live, rows_text, table_rows
from loom.push.planfile import read_plan
from loom.fabrics.infiniband.qos_readback import directed_routes
from loom.render.opensm import lfts_dump, parse_lfts_dump, tables_from_dump
from loom.routing import subnet

HERE = Path(__file__).parent
pytestmark = [pytest.mark.sim, pytest.mark.slow]


def settled(d: Daemons) -> None:
    """Lock free, no journal, no temp files, and a plan without false drift."""
    assert is_free(d.dir) and Journal(d.dir).load() is None
    assert not list(d.dir.glob("apply.journal.*")), "the journal's kept texts outlived it"
    assert not list(d.dir.rglob(".loom-tmp.*"))
    code, out = loom("plan", TINY)
    assert "drift" not in out, out


def tables(d: Daemons) -> dict:
    return parse_lfts_dump(d.dump_fts())


def apply_tiny() -> None:
    """loom's tables and QoS onto the tiny fabric (from OpenSM's own routing)."""
    assert loom("plan", TINY)[0] == 2
    code, out = loom("apply", "--model", TINY)
    assert code == 0 and "applied and verified" in out, out


def make_plan_file(tmp_path) -> Path:
    path = tmp_path / "p.json"
    code, out = loom("plan", TINY, "--out", str(path))
    assert code == 2, out
    return path


def env_of(d: Daemons) -> dict:
    return {**d.env(), "PYTHONPATH": str(HERE)}


# ------------------------------------------------------------------ 1: plans are checked, not trusted


def _retamper(plan: dict, bad) -> dict:
    """Tables replaced *and* every digest recomputed: only the re-run checks can catch it."""
    p = {**plan, "desired_lfts": table_rows(bad), "desired_sha256": digest_live(lfts_dump(bad))}
    return {**p, "plan_sha256": content_digest(p)}


@pytest.mark.parametrize("plant,check", [(plant_forwarding_loop, "fails reachability"), (plant_drop, "fails reachability"),
                                         (plant_credit_loop, "fails deadlock freedom")])
def test_tampered_plan_is_refused(tiny_up, tmp_path, plant, check):
    path = make_plan_file(tmp_path)
    plan = read_plan(path)
    before = tables(tiny_up)
    sn = subnet(load_fabric(TINY), 0)
    bad, _ = plant(tables_from_dump(sn, rows_text(plan["desired_lfts"]), "plan"), "z0")
    path.write_text(json.dumps(_retamper(plan, bad)))
    code, out = loom("apply", str(path))
    assert code == 1 and check in out, out
    # edited without recomputing the digest: caught before any check runs
    path.write_text(json.dumps({**plan, "desired_lfts": table_rows(bad)}))
    code, out = loom("apply", str(path))
    assert code == 1 and "modified after" in out, out
    assert tables(tiny_up) == before
    last = audit.read(tiny_up.dir)[-1]
    assert last["event"] == "apply" and not last["ok"] and "refused" in last["outcome"] and last["uid"] == os.getuid()
    settled(tiny_up)


def test_plan_naming_another_state_dir_is_refused(tiny_up, tmp_path):
    plan = read_plan(make_plan_file(tmp_path))
    target = tmp_path / "tiny"  # named like the fabric, but not a simulated fabric loom made
    target.mkdir()
    p = {**plan, "state_dir": str(target)}
    path = tmp_path / "forged.json"
    path.write_text(json.dumps({**p, "plan_sha256": content_digest(p)}))
    code, out = loom("apply", str(path))
    assert code == 1 and "is not the simulated fabric" in out, out
    assert list(target.iterdir()) == []  # no lock, journal or audit written there
    settled(tiny_up)


def test_plan_of_a_changed_model_is_refused(tiny_up, tmp_path):
    model = tmp_path / "tiny.yaml"
    shutil.copy(TINY, model)
    (tmp_path / "catalogue").symlink_to(TOPO / "catalogue")
    path = tmp_path / "p.json"
    assert loom("plan", str(model), "--out", str(path))[0] == 2
    model.write_text(model.read_text() + "\n# edited\n")
    code, out = loom("apply", str(path))
    assert code == 1 and "changed since the plan" in out, out
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)  # the plan names its model absolutely: apply works from any directory
    try:
        assert loom("plan", str(model), "--out", str(path))[0] == 2
        code, out = loom("apply", str(path))
        assert code == 0, out
    finally:
        os.chdir(HERE.parent)


# ------------------------------------------------------------------ 2: interruptions


@pytest.mark.parametrize("phase,sig", [("intent", "KILL"), ("written", "KILL"), ("reloaded", "KILL"), ("verified", "KILL"),
                                       ("written", "INT"), ("reloaded", "TERM")])
def test_interrupted_apply_is_resolved(tiny_up, tmp_path, phase, sig):
    path = make_plan_file(tmp_path)
    before, want = tables(tiny_up), parse_lfts_dump(rows_text(read_plan(path)["desired_lfts"]))
    res = subprocess.run([sys.executable, str(HERE / "apply_with_fault.py"), str(path), phase, sig],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(HERE)})
    assert "Traceback" not in res.stderr, res.stderr
    if sig == "KILL":
        assert res.returncode == -9
        code, out = loom("plan", TINY)  # the next command resolves it
        assert "was interrupted" in out, out
        assert tables(tiny_up) == (want if phase == "verified" else before)
        event = [a for a in audit.read(tiny_up.dir) if a["event"] == "interrupted apply resolved"][-1]
        assert event["ok"] and event["interrupted_phase"] == phase
    else:
        assert res.returncode == 128 + getattr(signal, "SIG" + sig), res.stderr
        assert "interrupted" in res.stderr and "restored and verified" in res.stderr, res.stderr
        assert tables(tiny_up) == before
        assert "interrupted by signal" in audit.read(tiny_up.dir)[-1]["outcome"]
    assert tiny_up.up_and_running()
    settled(tiny_up)


# ------------------------------------------------------------------ 3: drift on a switch, QoS on/off


def _smp_set(d: Daemons, *args: str) -> None:
    res = subprocess.run([sys.executable, str(HERE / "smp_set.py"), *args], env=env_of(d), cwd=d.dir,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr


def test_drift_on_a_switch_is_repaired(tiny_up):
    apply_tiny()
    sn = subnet(load_fabric(TINY), 0)
    switch_dr, _ = directed_routes(sn, tiny_up.sm_host)
    row = next(r for r in range(sn.n) if sn.name(r) == "z1-leaf1")
    lid = int(sn.ca_lids[0])
    _smp_set(tiny_up, "lft", switch_dr[row], str(lid), "255")  # a blackhole set by hand on the switch
    code, out = loom("plan", TINY)
    assert code == 2 and "drift" in out, out
    code, out = loom("apply", "--keep-live", "--model", TINY)
    assert code == 1 and "--keep-live" in out  # kept only on request; by default the model wins
    code, out = loom("apply", "--model", TINY)
    assert code == 0 and "applied and verified" in out, out
    code, out = loom("plan", TINY)
    assert code == 0 and "drift" not in out, out
    _smp_set(tiny_up, "vlarb", switch_dr[row], "1", "1", "7")  # one port's VLArb weight changed by hand
    code, out = loom("plan", TINY)
    assert code == 2 and "drift" in out, out
    code, out = loom("apply", "--model", TINY)
    assert code == 0 and "QoS verified" in out, out
    code, out = loom("plan", TINY)
    assert code == 0 and "No changes" in out and "drift" not in out, out


def test_entry_changed_after_the_push_fails_the_whole_read_back(tiny_up, tmp_path, monkeypatch):
    """A full apply reads every table back by blocks: one entry set by hand between the push and
    the read-back fails the apply, naming the switch and the LID, and the old tables come back."""
    path = make_plan_file(tmp_path)
    before = tables(tiny_up)
    sn = subnet(load_fabric(TINY), 0)
    switch_dr, _ = directed_routes(sn, tiny_up.sm_host)
    row = next(r for r in range(sn.n) if sn.name(r) == "z1-leaf1")
    lid = int(sn.ca_lids[-1])
    real_mark = Journal.mark

    def mark(self, phase, **fields):
        real_mark(self, phase, **fields)
        if phase == "reloaded":
            _smp_set(tiny_up, "lft", switch_dr[row], str(lid), "255")

    monkeypatch.setattr(Journal, "mark", mark)
    res = apply_plan(read_plan(path), path, timeout=60)
    monkeypatch.setattr(Journal, "mark", real_mark)
    assert not res.ok and f"1 entries differ, e.g. z1-leaf1 LID {lid:#06x}: port 255 read back" in res.message, res.message
    assert "restored and verified" in res.message, res.message
    assert tables(tiny_up) == before
    settled(tiny_up)


def test_qos_turned_off_and_on_on_a_running_fabric(tiny_up, tmp_path):
    apply_tiny()
    off = tmp_path / "tiny.yaml"
    text = Path(TINY).read_text()
    off.write_text(text[:text.index("qos:")])
    (tmp_path / "catalogue").symlink_to(TOPO / "catalogue")
    code, out = loom("plan", str(off))
    assert code == 2 and "QoS" in out, out
    code, out = loom("apply", "--model", str(off))
    assert code == 0 and "QoS verified on 120 ports" in out, out
    assert loom("plan", str(off))[0] == 0
    code, out = loom("plan", TINY)
    assert code == 2
    code, out = loom("apply", "--model", TINY)
    assert code == 0 and "QoS verified on 120 ports" in out, out
    settled(tiny_up)


def test_failed_qos_apply_restores_qos_too(tiny_up, tmp_path, monkeypatch):
    """A restore verifies the QoS tables, not only routing: the old classes are back on every port."""
    import loom.fabrics.infiniband.apply as applymod

    off = tmp_path / "tiny.yaml"
    text = Path(TINY).read_text()
    off.write_text(text[:text.index("qos:")])
    (tmp_path / "catalogue").symlink_to(TOPO / "catalogue")
    apply_tiny()
    assert loom("plan", str(off), "--out", str(tmp_path / "p.json"))[0] == 2
    real, calls = applymod.mismatches, []

    def wrong_once(back, want):
        calls.append(1)
        return ["z0-leaf0/1: planted mismatch"] if len(calls) == 1 else real(back, want)

    monkeypatch.setattr(applymod, "mismatches", wrong_once)
    res = apply_plan(read_plan(tmp_path / "p.json"), tmp_path / "p.json", timeout=60)
    assert not res.ok and "restored and verified (routing and QoS)" in res.message, res.message
    monkeypatch.setattr(applymod, "mismatches", real)
    settled(tiny_up)


# ------------------------------------------------------------------ 4: daemons dying


def test_ibsim_dying_fails_fast_and_names_it(tiny_up, tmp_path):
    path = make_plan_file(tmp_path)
    tiny_up.kill("ibsim")
    t0 = time.monotonic()
    code, out = loom("apply", str(path))
    assert code == 1 and "ibsim" in out and "OpenSM" not in out.split("ibsim")[0], out
    assert time.monotonic() - t0 < 20
    assert is_free(tiny_up.dir)
    code, out = loom("plan", TINY)
    assert code == 1 and "ibsim (the simulated fabric) is not running" in out, out
    assert loom("sim", "up", TINY)[0] == 0
    assert loom("plan", TINY)[0] == 2


def test_ibsim_dying_mid_apply_restores_the_inputs(tiny_up, tmp_path, monkeypatch):
    """ibsim dies once the new inputs are written: the apply ends in seconds naming ibsim, the
    old inputs go back, and the next `sim up` brings the fabric back fully old."""
    path = make_plan_file(tmp_path)
    before = tables(tiny_up)
    real_mark = Journal.mark

    def mark(self, phase, **fields):
        real_mark(self, phase, **fields)
        if phase == "written":
            tiny_up.kill("ibsim")

    monkeypatch.setattr(Journal, "mark", mark)
    t0 = time.monotonic()
    res = apply_plan(read_plan(path), path, timeout=60)
    monkeypatch.setattr(Journal, "mark", real_mark)
    assert time.monotonic() - t0 < 20
    assert not res.ok and "ibsim" in res.message and "previous input files restored" in res.message, res.message
    assert is_free(tiny_up.dir) and Journal(tiny_up.dir).load() is None
    code, out = loom("sim", "up", TINY)
    assert code == 0, out
    assert tables(tiny_up) == before
    settled(tiny_up)


def test_tables_not_read_whole_are_an_error(tiny_up, tmp_path, monkeypatch):
    """Plan and apply read the live tables by blocks from every switch in service: one that does
    not answer, or a route that reaches another switch than the model's, is named with what to
    do, in plan and in apply, instead of planning over tables that were not read."""
    from loom.fabrics.infiniband.target import SimTarget

    sn = subnet(load_fabric(TINY), 0)
    real = SimTarget.smp

    def planted(edit):
        def smp(self, jobs, what, every=True):
            answers = real(self, jobs, what, every)
            return edit(answers) if what == "the live tables" else answers
        return smp

    silent = planted(lambda answers: [a for a in answers if a["key"] not in ("3", "id 3")])
    monkeypatch.setattr(SimTarget, "smp", silent)
    code, out = loom("plan", TINY)
    monkeypatch.setattr(SimTarget, "smp", real)
    assert code == 1 and f"read the tables of 11 of 12 switches; no answer from {sn.name(3)}: down?" in out, out
    assert "loom sim link up" in out and f"loom mark down MODEL {sn.name(3)}" in out, out
    # apply reads the live tables after the plan's check: the same refusal, nothing pushed
    path = tmp_path / "plan.json"
    assert loom("plan", TINY, "--out", str(path))[0] == 2
    monkeypatch.setattr(SimTarget, "smp", silent)
    code, out = loom("apply", str(path))
    monkeypatch.setattr(SimTarget, "smp", real)
    assert code == 1 and "read the tables of 11 of 12 switches" in out, out
    # another switch at a route (cabled otherwise, or another fabric): refused, both named
    other = planted(lambda answers: [{**a, "guid": a["guid"] + 1} if a["key"] == "id 3" else a for a in answers])
    monkeypatch.setattr(SimTarget, "smp", other)
    code, out = loom("plan", TINY)
    monkeypatch.setattr(SimTarget, "smp", real)
    assert code == 1 and f"0x{sn.switch(3).guid + 1:016x}" in out and f"the model has {sn.name(3)} there" in out, out
    assert loom("plan", TINY)[0] == 2


def test_opensm_killed_after_the_reload_is_not_verified(tiny_up, tmp_path, monkeypatch):
    import loom.fabrics.infiniband.apply as applymod

    path = make_plan_file(tmp_path)
    before = tables(tiny_up)
    real, calls = applymod.mismatches, []

    def kill_opensm(back, want):  # OpenSM dies while the QoS read-back is compared
        if not calls:
            calls.append(1)
            tiny_up.kill("opensm")
        return real(back, want)

    monkeypatch.setattr(applymod, "mismatches", kill_opensm)
    res = apply_plan(read_plan(path), path, timeout=60)
    monkeypatch.setattr(applymod, "mismatches", real)
    assert not res.ok and "OpenSM is not running" in res.message and "restored and verified" in res.message, res.message
    assert tables(tiny_up) == before and tiny_up.up_and_running()
    code, out = loom("sim", "status", TINY)
    assert code == 0 and "subnet up: yes" in out, out
    tiny_up.kill("opensm")
    code, out = loom("sim", "status", TINY)
    assert code == 1 and "subnet up: no" in out


# ------------------------------------------------------------------ 5: lifecycle


def test_ten_sim_ups_at_once_beside_hogs_start_one_fabric(tmp_path):
    """Ten `sim up`s at once on a busy machine (two CPU hogs and a disk hog beside them): exactly
    one starts the fabric; every other one finds it up or names the holder (never `?`)."""
    env = {**os.environ, "LOOM_STATE_DIR": str(tmp_path / "state")}
    cmd = [sys.executable, "-m", "loom.cli", "sim", "up", TINY]
    d = Daemons(tmp_path / "state" / "tiny")
    with hogs(directory=tmp_path):
        procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for _ in range(10)]
        outs = [p.communicate(timeout=300 * slack())[0] for p in procs]
    try:
        started = [e for e in audit.read(d.dir) if e.get("event") == "sim up" and e.get("outcome") == "started"]
        assert len(started) == 1, outs
        pids = {p.pid for p in procs}
        for p, o in zip(procs, outs):
            if p.returncode != 0:  # the loser names a holder that is one of the ten, with everything known
                holder = re.search(r"held by (\S+) \(pid (\d+) on (\S+), running `([^`]+)`\) since (\S+);", o)
                assert holder and int(holder[2]) in pids and "?" not in holder[0], o
            else:
                assert "sim up:" in o, o
        running = procs_using(d.dir)
        assert sorted(running) == sorted([d.pid("ibsim"), d.pid("opensm")]), (running, outs)
    finally:
        subprocess.run([sys.executable, "-m", "loom.cli", "sim", "down", TINY], env=env, capture_output=True, timeout=120)
    assert procs_using(d.dir) == []


def _taker(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        lock = FabricLock(Path(path), "apply").acquire()
    except LockHeld as exc:
        results.put(("held", exc.holder))
        return
    results.put(("got", None))
    time.sleep(0.05)
    lock.release()


def test_a_loser_always_reads_the_whole_holder_record(tmp_path):
    """200 trials of eight processes taking a free lock at once: every loser reads the winner's
    full record (pid, start, user, host, command, since) — the record is in place before the lock
    can be seen as taken."""
    ctx = multiprocessing.get_context("fork")
    for trial in range(200):
        d = tmp_path / f"t{trial}"
        d.mkdir()
        barrier, results = ctx.Barrier(8), ctx.Queue()
        ps = [ctx.Process(target=_taker, args=(str(d), barrier, results)) for _ in range(8)]
        for p in ps:
            p.start()
        got = [results.get(timeout=30 * slack()) for _ in ps]
        for p in ps:
            p.join(30 * slack())
        assert [g for g, _ in got].count("got") >= 1, got
        for outcome, holder in got:
            if outcome == "held":
                assert {"pid", "start", "user", "host", "command", "since", "purpose"} <= holder.keys(), holder
                assert isinstance(holder["pid"], int) and holder["pid"] > 0, holder
        assert is_free(d) and not (d / "fabric.lock").exists() and not list(d.iterdir()), list(d.iterdir())


def test_sim_down_refuses_during_an_apply_and_checks_pid_files(tiny_up):
    lock = FabricLock(tiny_up.dir, "apply").acquire()
    try:
        code, out = loom("sim", "down", TINY)
        assert code == 1 and "another apply is running" in out and "--force" in out
        assert tiny_up.up_and_running()
    finally:
        lock.release()
    assert loom("sim", "down", TINY)[0] == 0
    bystander = subprocess.Popen(["sleep", "60"])
    try:  # stale PID files naming an unrelated process: never signalled
        (tiny_up.dir / "ibsim.pid").write_text(f"{bystander.pid}\n")
        (tiny_up.dir / "opensm.pid").write_text(f"{bystander.pid} 1 opensm\n")
        code, out = loom("sim", "down", TINY)
        assert code == 0 and "nothing was running" in out
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def _contender(path: str, barrier, overlap: str, results) -> None:
    barrier.wait()
    try:
        lock = FabricLock(Path(path), "apply").acquire()
    except LockHeld:
        results.put("held")
        return
    try:
        fd = os.open(overlap, os.O_CREAT | os.O_EXCL)  # fails if another holder is inside too
        os.close(fd)
        time.sleep(0.005)
        os.unlink(overlap)
        results.put("took over" if lock.took_over else "got")
    except FileExistsError:
        results.put("OVERLAP")
    finally:
        lock.release()


def test_lock_takeover_races(tmp_path):
    """100 trials: a holder died holding the lock; four processes race for it.  Never two
    holders at once, and the takeover is reported exactly once."""
    ctx = multiprocessing.get_context("fork")
    for trial in range(100):
        d = tmp_path / f"t{trial}"
        d.mkdir()
        (d / "fabric.lock").write_text(json.dumps({"pid": 999999, "start": 1, "user": "gone", "purpose": "apply"}))
        barrier, results = ctx.Barrier(4), ctx.Queue()
        ps = [ctx.Process(target=_contender, args=(str(d), barrier, str(d / "inside"), results)) for _ in range(4)]
        for p in ps:
            p.start()
        for p in ps:
            p.join(10)
        got = [results.get(timeout=5) for _ in ps]
        assert "OVERLAP" not in got and got.count("took over") == 1, got
        assert is_free(d)


# ------------------------------------------------------------------ 6: disk full, read-only


@pytest.fixture
def small_disk(tmp_path):
    if os.getuid() != 0:
        pytest.fail("the disk-full test mounts a tmpfs: run as root (CI does)")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_and_read_only_state_are_clean_refusals(small_disk, tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(small_disk))
    d = Daemons.of("tiny")
    try:
        code, out = loom("sim", "up", TINY)
        assert code == 0, out
        path = make_plan_file(tmp_path)
        before = tables(d)
        inputs = {p: p.read_bytes() for p in (d.lfts_file, d.conf_file, d.guid2lid_file) if p.exists()}
        filler = small_disk / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)  # until ENOSPC
        code, out = loom("apply", str(path))
        assert code == 1 and "No space left on device" in out and "nothing was changed" in out, out
        assert {p: p.read_bytes() for p in inputs} == inputs and not d.lfts_file.with_name("x").exists()
        assert tables(d) == before and is_free(d.dir) and not list(d.dir.rglob(".loom-tmp.*"))
        filler.unlink()
        code, out = loom("apply", str(path))
        assert code == 0, out  # space again: the same plan applies
        assert loom("sim", "down", TINY)[0] == 0  # (a tmpfs with open files cannot be remounted read-only)
        subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
        for args in (("sim", "up", TINY), ("apply", str(path)), ("plan", TINY)):
            code, out = loom(*args)
            assert code == 1 and ("Read-only file system" in out or "not up" in out), (args, out)
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
        assert loom("sim", "up", TINY)[0] == 0
        code, out = loom("plan", TINY)
        assert code == 0 and "No changes" in out, out
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=False)
        loom("sim", "down", "--force", TINY)
    assert procs_using(d.dir) == []


def test_daemons_start_with_a_minimal_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("NETBOX_TOKEN", "s3cret-token-value")
    assert loom("sim", "up", TINY)[0] == 0
    d = Daemons.of("tiny")
    try:
        for name in ("ibsim", "opensm"):
            environ = Path(f"/proc/{d.pid(name)}/environ").read_bytes()
            assert b"s3cret" not in environ and b"NETBOX_TOKEN" not in environ and b"IBSIM_SOCKNAME" in environ
    finally:
        loom("sim", "down", TINY)


def test_start_after_a_crash_checks_what_opensm_would_load(tiny_up):
    """Bad tables in OpenSM's input file (written by hand while the fabric was down) are not loaded."""
    apply_tiny()
    assert loom("sim", "down", TINY)[0] == 0
    sn = subnet(load_fabric(TINY), 0)
    bad, _ = plant_forwarding_loop(tables_from_dump(sn, tiny_up.lfts_file.read_text(), "file"), "z0")
    tiny_up.lfts_file.write_text(lfts_dump(bad))
    code, out = loom("sim", "up", TINY)
    assert code == 0 and "fail reachability" in out and "lfts.dump.rejected" in out, out
    assert not tiny_up.lfts_file.exists()
    code, out = loom("plan", TINY)
    assert code == 2  # OpenSM's own routing now: the next apply brings loom's tables back
    assert loom("apply", "--model", TINY)[0] == 0 and loom("plan", TINY)[0] == 0


def test_fat_tree_3_converges_in_one_apply(tmp_path, monkeypatch):
    """Sticky routing settles before it is planned: one apply reaches "No changes" (before,
    OpenSM's minhop took four applies: 5472 → 432 → 14 → 4 → 0 entries)."""
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    ft3 = str(TOPO / "fat-tree-3.yaml")
    try:
        assert loom("sim", "up", ft3)[0] == 0
        assert loom("plan", ft3)[0] == 2
        code, out = loom("apply", "--model", ft3)
        assert code == 0 and "applied and verified" in out, out
        code, out = loom("plan", ft3)
        assert code == 0 and "No changes" in out, out
    finally:
        loom("sim", "down", ft3)


@pytest.fixture
def ext2_disk(tmp_path):
    """A small ext2 file system (loop mount): unlike tmpfs it has immutable files (chattr +i)."""
    if os.getuid() != 0:
        pytest.fail("the immutable-file test mounts a loop device: run as root (CI does)")
    image, mnt = tmp_path / "disk.img", tmp_path / "ext2"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "16M", str(image)], check=True)
    subprocess.run(["mkfs.ext2", "-q", "-F", str(image)], check=True)
    subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], check=True)
    yield mnt
    subprocess.run(["chattr", "-R", "-i", str(mnt)], capture_output=True)
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_immutable_input_file_leaves_nothing_half_written(ext2_disk, tmp_path, monkeypatch):
    """The QoS options would be written and the tables refused: the options are put back."""
    monkeypatch.setenv("LOOM_STATE_DIR", str(ext2_disk))
    d = Daemons.of("tiny")
    off = tmp_path / "tiny.yaml"
    text = Path(TINY).read_text()
    off.write_text(text[:text.index("qos:")])
    (tmp_path / "catalogue").symlink_to(TOPO / "catalogue")
    try:
        assert loom("sim", "up", TINY)[0] == 0
        apply_tiny()
        assert loom("plan", str(off), "--out", str(tmp_path / "p.json"))[0] == 2
        conf, before = d.conf_file.read_text(), tables(d)
        subprocess.run(["chattr", "+i", str(d.lfts_file)], check=True)
        code, out = loom("apply", str(tmp_path / "p.json"))
        assert code == 1 and "Operation not permitted" in out and "nothing was changed" in out, out
        assert d.conf_file.read_text() == conf and tables(d) == before and is_free(d.dir)
        subprocess.run(["chattr", "-i", str(d.lfts_file)], check=True)
        code, out = loom("apply", str(tmp_path / "p.json"))
        assert code == 0 and "QoS verified" in out, out
    finally:
        loom("sim", "down", "--force", TINY)
    assert procs_using(d.dir) == []
