"""plan → apply → plan against a real OpenSM on the simulated fabric (the fabric is the state)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom.cli import app
from loom.expand import load_fabric
from loom.fabrics.infiniband.daemon import Daemons, alive
from loom.fabrics.infiniband.apply import apply_plan
from loom.push.planfile import content_digest
from loom.push.lock import FabricLock, is_free
from loom.push.packing import rows_text
from loom.push.planfile import read_plan
from loom.fabrics.infiniband.sim import tools_missing
from loom.render.opensm import lfts_dump, parse_lfts_dump, tables_from_dump
from loom.routing import route, subnet

from .simfabric import TINY, TOPO, loom, opensm_dies_in_first_sweep_wait, runner

pytestmark = pytest.mark.sim


def hand_edit(d: Daemons, switch: str) -> None:
    """Someone changes one entry of a live switch table behind loom's back (through OpenSM)."""
    sn = route(load_fabric(TINY))[0].subnet
    live = tables_from_dump(sn, d.dump_fts(), "live")
    row = next(r for r in range(sn.n) if sn.name(r) == switch)
    lid = int(sn.ca_lids[0])
    port = int(live.lft[row, lid])
    d.lfts_file.write_text(lfts_dump(live.with_entries({(row, lid): 5 if port != 5 else 6})))
    assert d.reload() == "file"


def test_up_plan_apply_plan_down(tiny_up, tmp_path):
    d = tiny_up
    code, out = loom("sim", "up", TINY)
    assert code == 0 and "already up" in out  # idempotent
    code, out = loom("sim", "status", TINY)
    assert code == 0 and "subnet up: yes" in out
    code, out = loom("plan", TINY, "--out", str(tmp_path / "plan.json"))
    assert code == 2, out  # OpenSM's minhop differs from loom's routing
    plan = read_plan(tmp_path / "plan.json")
    assert plan["changes"]["entries_changed"] > 0
    code, out = loom("apply", str(tmp_path / "plan.json"))
    assert code == 0 and "applied and verified" in out, out
    code, out = loom("plan", TINY)
    assert code == 0 and "No changes" in out, out
    r = runner.invoke(app, ["plan", TINY, "--format", "json"])  # stdout alone: one JSON document
    assert r.exit_code == 0 and json.loads(r.stdout)["changes"]["entries_changed"] == 0
    audit = [json.loads(l) for l in (d.dir / "audit.log").read_text().splitlines()]
    assert audit[-1]["ok"] and audit[-1]["user"] and audit[-1]["plan_sha256"] and audit[-1]["model_sha256"]


def test_saved_plan_is_readable_and_shows_its_entries(tiny_up, tmp_path):
    """The plan file holds the tables as rows; `loom show PLAN --entries` lists exactly the rows
    that differ between the live and the desired tables, and a malformed row is refused by name."""
    path = tmp_path / "plan.json"
    assert loom("plan", TINY, "--out", str(path))[0] == 2
    text = path.read_text()
    plan = json.loads(text)
    assert plan["version"] == 3 and "\n   [1, " in text  # one [lid, port] row per line
    before = parse_lfts_dump(rows_text(plan["previous_lfts"]))
    after = parse_lfts_dump(rows_text(plan["desired_lfts"]))
    by_guid = {int(s["guid"], 16): name for name, s in plan["desired_lfts"].items()}
    want = {(by_guid[g], lid, before[g].get(lid), port) for g, rows in after.items() for lid, port in rows.items()
            if before[g].get(lid) != port}
    assert len(want) == plan["changes"]["entries_changed"] > 0
    code, out = loom("show", str(path), "--format", "json", "--entries")
    shown = json.loads(out)["entries"]
    assert code == 0 and {(e["switch"], e["lid"], e["from"], e["to"]) for e in shown} == want
    code, out = loom("show", str(path), "--entries")
    e = shown[0]
    line = f"LID 0x{e['lid']:04x} ({e['name']}): port {e['from']} → port {e['to']}"
    assert code == 0 and any(l.startswith(e["switch"] + " ") and l.endswith(line) for l in out.splitlines()), out
    assert f"{plan['changes']['entries_changed']} LFT entries" in out
    # a reviewer's filters (issue 37): one switch by glob; only routes that change port
    code, out = loom("show", str(path), "--format", "json", "--switch", "z0-leaf*")
    leafs = json.loads(out)["entries"]
    assert code == 0 and leafs == [e for e in shown if e["switch"].startswith("z0-leaf")] and 0 < len(leafs) < len(shown)
    code, out = loom("show", str(path), "--switch", "z0-leaf*")
    assert code == 0 and f"{len(leafs)} of {len(shown)} entries: those on switches matching 'z0-leaf*'" in out, out
    code, out = loom("show", str(path), "--format", "json", "--moved")
    assert code == 0 and json.loads(out)["entries"] == [e for e in shown if e["from"] is not None]
    assert loom("show", TINY, "--moved")[0] == 2  # a model has no entries
    sw = next(iter(plan["desired_lfts"]))
    plan["desired_lfts"][sw]["rows"][0][1] = "7"
    plan["plan_sha256"] = content_digest(plan)  # digests recomputed: the rows' own check must catch it
    path.write_text(json.dumps(plan))
    for cmd in (("show", str(path)), ("apply", str(path))):
        code, out = loom(*cmd)
        assert code == 1 and f"desired_lfts.{sw}.rows.0.1" in out and "Traceback" not in out, out


def test_moving_a_storage_node_plans_its_routes(tiny_up, tmp_path):
    assert loom("plan", TINY)[0] == 2 and loom("apply", "--model", TINY)[0] == 0
    moved = tmp_path / "moved.yaml"
    text = Path(TINY).read_text().replace('name_pattern: "st{index:02d}"}', 'name_pattern: "st{index:02d}", pinned: {st00: [2, 2]}}')
    moved.write_text(text)
    code, out = loom("plan", str(moved))
    assert code == 1 and "cabled differently" in out  # the technician moves the cables first
    code, out = loom("sim", "up", str(moved))
    assert code == 0 and "re-cabled" in out
    code, out = loom("plan", str(moved), "--out", str(tmp_path / "p.json"))
    assert code == 2, out
    plan = read_plan(tmp_path / "p.json")
    after = load_fabric(moved)
    st00 = {p.lid for p in after.ports if after.nodes[p.node].name == "st00"}
    names = {m["name"] for m in plan["changes"]["destinations_moved"]}
    assert {"st00-hca0", "st00-hca1"} <= names
    # other destinations move only on the leaves the node left and joined (their up-ports
    # rebalance), or between a spine's parallel links into those leaves (their down-ports do)
    old_leaves = {"z0-leaf1", "z1-leaf1"}
    new_leaves = {"z0-leaf2", "z1-leaf2"}
    want, prev = parse_lfts_dump(rows_text(plan["desired_lfts"])), parse_lfts_dump(rows_text(plan["previous_lfts"]))
    by_guid = {s.guid: s.name for s in after.switches}
    sn = subnet(after, 0)
    for guid, entries in want.items():
        for lid, port in entries.items():
            if prev[guid].get(lid) != port and lid not in st00:
                on_leaf = sn.name(int(sn.ca_switch[lid])) if sn.ca_switch[lid] >= 0 else None
                assert by_guid[guid] in old_leaves | new_leaves or \
                    ("spine" in by_guid[guid] and on_leaf in old_leaves | new_leaves), (by_guid[guid], lid)
    code, out = loom("apply", str(tmp_path / "p.json"))
    assert code == 0, out
    assert loom("plan", str(moved))[0] == 0


def test_stale_plan_is_refused(tiny_up, tmp_path):
    assert loom("plan", TINY, "--out", str(tmp_path / "p.json"))[0] == 2
    hand_edit(tiny_up, "z0-leaf0")
    code, out = loom("apply", str(tmp_path / "p.json"))
    assert code == 1 and "stale plan" in out


def test_concurrent_apply_is_refused(tiny_up, tmp_path):
    assert loom("plan", TINY, "--out", str(tmp_path / "p.json"))[0] == 2
    lock = FabricLock(tiny_up.dir, "apply").acquire()  # another apply holds the fabric lock
    try:
        code, out = loom("apply", str(tmp_path / "p.json"))
        assert code == 1 and "another apply is running" in out and "pid" in out
    finally:
        lock.release()
    code, out = loom("apply", str(tmp_path / "p.json"))
    assert code == 0, out


def test_opensm_killed_during_apply_restores_previous_state(tiny_up, tmp_path, monkeypatch):
    d = tiny_up
    assert loom("plan", TINY, "--out", str(tmp_path / "p.json"))[0] == 2
    before = parse_lfts_dump(d.dump_fts())
    plan = read_plan(tmp_path / "p.json")
    killed = opensm_dies_in_first_sweep_wait(monkeypatch, d)  # during the sweep that loads the new inputs
    res = apply_plan(plan, tmp_path / "p.json", timeout=30)
    assert killed and not res.ok and "restored and verified" in res.message, res.message
    assert parse_lfts_dump(d.dump_fts()) == before  # nothing half-applied
    assert alive(d.pid("opensm"))  # and OpenSM runs again
    audit = [json.loads(l) for l in (d.dir / "audit.log").read_text().splitlines()]
    assert audit[-1]["ok"] is False and is_free(d.dir)


def test_hand_edited_table_is_drift(tiny_up, tmp_path):
    assert loom("plan", TINY)[0] == 2 and loom("apply", "--model", TINY)[0] == 0
    hand_edit(tiny_up, "z1-leaf1")
    code, out = loom("plan", TINY, "--out", str(tmp_path / "p.json"))
    assert code == 2 and "drift" in out
    plan = read_plan(tmp_path / "p.json")
    assert plan["changes"]["per_switch"] == {"z1-leaf1": 1}
    assert loom("apply", str(tmp_path / "p.json"))[0] == 0
    assert loom("plan", TINY)[0] == 0


def test_plan_refuses_failing_routing(tiny_up, tmp_path, monkeypatch):
    import loom.fabrics.infiniband.plan as planmod

    real = planmod.push_verdict
    monkeypatch.setattr(planmod, "push_verdict", lambda *a: {**real(*a), "deadlock_free": False})
    code, out = loom("plan", TINY)
    assert code == 1 and "fails deadlock freedom" in out


def test_plan_without_sim_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "none"))
    code, out = loom("plan", TINY)
    assert code == 1 and "loom sim up" in out


@pytest.mark.slow
def test_fire_flyer_apply_then_no_changes(tmp_path, monkeypatch):
    """The two-zone fabric end to end: minhop → loom's tables, verified, then a clean plan."""
    if tools_missing():
        pytest.fail(f"simulator tools missing: {tools_missing()} — run `make setup`")
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    ff2 = str(TOPO / "fire-flyer-2.yaml")
    try:
        assert loom("sim", "up", ff2)[0] == 0
        code, out = loom("plan", ff2)
        assert code == 2, out
        code, out = loom("apply", "--model", ff2)
        assert code == 0 and "applied and verified" in out, out
        # routing and QoS: every cabled switch port (both ends of 1604 switch links + 1584 node
        # links) and every CA port was read back and equals the intent
        assert f"QoS verified on {2 * 1604 + 1584 + 1584} ports" in out, out
        assert loom("plan", ff2)[0] == 0  # a full apply converges in one run
        code, out = loom("apply", "--model", ff2)  # and so does the unchanged plan
        assert code == 0 and "no changes" in out, out
        assert loom("plan", ff2)[0] == 0
    finally:
        loom("sim", "down", ff2)


class Recorder:
    """A `loom.progress` listener that remembers what it was told."""

    def __init__(self) -> None:
        self.started, self.steps, self.finished = [], 0, 0

    def start(self, what: str, total: int) -> str:
        self.started.append((what, total))
        return what

    def advance(self, handle: str, steps: int) -> None:
        self.steps += steps

    def finish(self, handle: str) -> None:
        self.finished += 1


def test_qos_read_back_reports_its_progress(tiny_up):
    """The read-back says how many ports it has read as it goes (the CLI draws a bar from it)."""
    from loom.progress import listening
    from loom.fabrics.infiniband.qos_readback import qos_jobs, read_qos

    sn = subnet(load_fabric(TINY), 0)
    seen = Recorder()
    with listening(seen):
        back = read_qos(tiny_up, sn)
    total = len(qos_jobs(sn, tiny_up.sm_host))
    assert seen.started == [("QoS read-back (ports)", total)] and seen.steps == total == len(back) and seen.finished == 1


def test_a_plan_of_the_model_applied_last_takes_its_tables(tiny_up, tmp_path, monkeypatch):
    """After an apply, a plan of the same model does not route again (`last-applied.key` is
    its routing key); a changed model, or a watcher's apply since, routes again."""
    import loom.fabrics.infiniband.design as design_module
    import loom.fabrics.infiniband.plan as plan_module

    d = tiny_up
    code, out = loom("plan", TINY)
    assert code == 2 and "  route: " in out, out  # routed first: refused before the fabric is touched if no engine routes it
    assert loom("apply", "--model", TINY)[0] == 0
    key = (d.dir / "last-applied.key").read_text().strip()
    assert key == plan_module.routing_key(load_fabric(TINY))
    routed = []
    real = design_module.settled_route
    monkeypatch.setattr(design_module, "settled_route", lambda *a: routed.append(1) or real(*a))
    code, out = loom("plan", TINY)
    assert code == 0 and "No changes" in out and not routed and "  route: " not in out, out
    # planted: the keys name another model (the one the tables were routed for has changed)
    (d.dir / "last-applied.key").write_text("0" * 64 + "\n")
    (d.dir / "design.key").write_text("0" * 64 + " 0\n")
    code, out = loom("plan", TINY)
    assert code == 0 and routed == [1] and "  route: " in out, out
    # another model's routing key differs (a storage node pinned elsewhere)
    moved = tmp_path / "moved.yaml"
    moved.write_text(Path(TINY).read_text().replace('name_pattern: "st{index:02d}"}',
                                                    'name_pattern: "st{index:02d}", pinned: {st00: [2, 2]}}'))
    assert plan_module.routing_key(load_fabric(moved)) != key


def test_a_routing_only_change_is_applied_by_a_reload(tiny_up, tmp_path):
    """Nothing but routing changes, on a fabric holding what loom applied last: OpenSM re-reads its
    file (no restart), only the changed entries are read back, and the fabric holds the plan."""
    from loom.expand.failures import parse_failures, without
    from loom.fabrics.infiniband.apply import apply_tables
    from loom.fabrics.infiniband.target import SimTarget
    from loom.routing import get_engine

    d, f = tiny_up, load_fabric(TINY)
    assert loom("plan", TINY)[0] == 2 and loom("apply", "--model", TINY)[0] == 0
    design = tables_from_dump(subnet(f, 0), d.dump_fts(), "design")
    # tables routed around a cable (legal on the intact fabric too) put in by loom: the next plan moves them back
    around = get_engine("fattree").repair(subnet(without(f, parse_failures(f, ["z0-leaf0/5"])), 0), design)
    assert apply_tables(SimTarget(d), Path(TINY), around, "test").ok
    starts = d.sweeps()
    code, out = loom("plan", TINY, "--out", str(tmp_path / "back.json"))
    assert code == 2 and read_plan(tmp_path / "back.json")["drift"] is None, out
    code, out = loom("apply", str(tmp_path / "back.json"))
    assert code == 0 and "applied and verified" in out and "QoS verified" not in out, out
    audit = json.loads((d.dir / "audit.log").read_text().splitlines()[-1])
    assert "read back QoS" not in audit["phases"] and audit["ok"], audit
    assert "Exiting SM" not in d.log.read_text().split("SUBNET UP")[starts]  # OpenSM was not restarted
    want = parse_lfts_dump(rows_text(read_plan(tmp_path / "back.json")["desired_lfts"]))
    assert parse_lfts_dump(d.dump_fts()) == want


def test_a_reload_signalled_during_a_sweep_is_verified_after_the_sweep_it_queued(tiny_up, monkeypatch):
    """OpenSM sweeping on a trap when the watcher signals it: the SUBNET UP that follows is of a
    sweep that began before the new file was in place, so the tables are still the old ones; the
    sweep the signal queued comes next.  Planted: the file is written only once OpenSM has swept
    on the old one, and signalled again (the queued sweep).  The apply verifies after that sweep
    instead of restoring the old tables (which restarted OpenSM: 12 s of a watcher's reroute)."""
    import os
    import signal
    import threading

    from loom.expand.failures import parse_failures, without
    from loom.fabrics.infiniband.apply import apply_tables
    from loom.fabrics.infiniband.target import SimTarget
    from loom.routing import get_engine

    d, f = tiny_up, load_fabric(TINY)
    assert loom("plan", TINY)[0] == 2 and loom("apply", "--model", TINY)[0] == 0
    design = tables_from_dump(subnet(f, 0), d.dump_fts(), "design")
    around = get_engine("fattree").repair(subnet(without(f, parse_failures(f, ["z0-leaf0/5"])), 0), design)
    write, reload, held, timers = SimTarget.write_inputs, SimTarget.reload, [], []
    monkeypatch.setattr(SimTarget, "write_inputs", lambda self, files: held.append(files))

    def signalled_mid_sweep(self, timeout):
        engine = reload(self, timeout)  # the sweep on the old file
        write(self, held.pop())
        # the sweep the first signal queued, after the one under way (the read-back starts first)
        timers.append(threading.Timer(0.5, os.kill, (self.d.pid("opensm"), signal.SIGHUP)))
        timers[-1].start()
        return engine

    monkeypatch.setattr(SimTarget, "reload", signalled_mid_sweep)
    starts = d.sweeps()
    result = apply_tables(SimTarget(d), Path(TINY), around, "test", previous=design)
    timers[0].join()
    assert result.ok and "read back after the next sweep" in result.phases, result
    assert "Exiting SM" not in d.log.read_text().split("SUBNET UP")[starts]  # not restored by a restart
    assert (tables_from_dump(subnet(f, 0), d.dump_fts(), "live").lft == around.lft).all()


@pytest.mark.parametrize("where", ["drift", "fabric", "per_switch", "destinations_moved", "examples", "standbys_differing"])
def test_show_prints_markup_in_a_plan_as_text(tiny_up, tmp_path, where):
    """Issue 35: `[/x]` (Rich markup) in any text field of a saved plan is shown as written, never
    a crash; a plan whose digest does not match its content is shown with a warning."""
    from loom.push.planfile import content_digest

    path = tmp_path / "plan.json"
    assert loom("plan", TINY, "--out", str(path))[0] == 2
    p = json.loads(path.read_text())
    bad = "[/x] [bold]z"
    if where == "drift":
        p["drift"] = bad
    elif where == "fabric":
        p["fabric"] = bad
    elif where == "per_switch":
        p["changes"]["per_switch"] = {bad: 1}
    elif where == "destinations_moved":
        p["changes"]["destinations_moved"][0]["name"] = bad
    elif where == "examples":
        p["qos"]["examples"], p["qos"]["ports_differing"] = [bad], 1
    else:
        p["standbys_differing"] = [bad]
    path.write_text(json.dumps(p))
    code, out = loom("show", str(path))
    assert code == 0 and "[/x]" in out and "modified after loom made it" in out, out
    p["plan_sha256"] = content_digest(p)  # re-signed: no warning, still no crash
    path.write_text(json.dumps(p))
    code, out = loom("show", str(path))
    assert code == 0 and "[/x]" in out and "modified after" not in out, out
