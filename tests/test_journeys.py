"""Journeys across commands on the simulated fabric (issue 32): each ends with `loom plan` saying
"No changes" and counts that agree between the commands that state them.

- A spine dies and stays dead for a week: pulled, marked, planned, applied; back, marked up,
  returned to the design.  The plan around it moves exactly the destinations the spine carried
  in the design tables (`affected_destinations`: what `whatif` counts), the return moves them
  back and nothing else (the spine's own table is *added*, not moved), then zero.
- An inter-zone cable of a three-zone ring fails: the minimal repair would leave a zone's traffic
  with an exit that leads nowhere, so the plan widens it (and says so), stays reachable, and
  returns to the design when the cable is back.
- The fabric grows — a new leaf group (`tests/models/leafgrow.yaml`), or a node — and is
  re-cabled: no drift claimed, the new LIDs counted as added.
- The watcher killed in the middle of a reroute (SIGKILL with `apply.journal` present): the next
  plan restores, then routes around the pulled cable — never "No changes" over it — and a new
  watcher, after the cable is back, returns to the design.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from loom.expand.asbuilt import load_as_built
from loom.fabrics.infiniband.daemon import Daemons
from loom.render.opensm import tables_from_dump
from loom.routing import subnet
from loom.routing.asbuilt import affected_destinations

from .load import slack, wait_for, wait_line
from .simfabric import TOPO, loom, procs_using

HERE = Path(__file__).parent

pytestmark = pytest.mark.sim


@pytest.fixture
def fabric_up(request, tmp_path, monkeypatch):
    """A copy of a reference model (its lock too: marks are written there) up in the simulator
    under a private state directory, with loom's design tables applied."""
    name = request.param
    where = TOPO if (TOPO / f"{name}.yaml").exists() else HERE / "models"
    for suffix in (".yaml", ".lock.json"):
        if (where / f"{name}{suffix}").exists():
            shutil.copy(where / f"{name}{suffix}", tmp_path / f"{name}{suffix}")
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    model = str(tmp_path / f"{name}.yaml")
    code, out = loom("sim", "up", model)
    assert code == 0, out
    d = Daemons.of(load_as_built(model).design.name)
    assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    yield model, d
    loom("sim", "down", "--force", model)
    assert procs_using(d.dir) == []


def last_plan(d) -> dict:
    return json.loads((d.dir / "last-plan.json").read_text())


def moved(plan: dict) -> set[int]:
    return {m["lid"] for m in plan["changes"]["destinations_moved"]}


def no_changes(model: str) -> str:
    code, out = loom("plan", model)
    assert code == 0 and "No changes" in out, out
    return out


@pytest.mark.parametrize("fabric_up, spine", [("tiny", "z0-spine1"),
                                              pytest.param("fire-flyer-2", "z0-spine4", marks=pytest.mark.slow)],
                         indirect=["fabric_up"])
def test_a_spine_dead_for_a_week(fabric_up, spine):
    model, d = fabric_up
    state = load_as_built(model)
    design = tables_from_dump(subnet(state.design, 0), (d.dir / "design.lfts").read_text(), "design")
    assert (d.dir / "design.lfts").read_text() == (d.dir / "last-applied.lfts").read_text()
    code, out = loom("sim", "link", "down", model, spine)  # it dies ...
    assert code == 0, out
    code, out = loom("mark", "down", model, spine, "--reason", "PSU failed, RMA 1234", "--until", "2026-12-03")
    assert code == 0 and "marked down" in out, out
    code, out = loom("status", model)  # ... declared and observed, both shown
    assert code == 1 and f"{spine}  (loom mark" in out and "PSU failed" in out and "pulled in the simulation" in out, out
    code, out = loom("plan", model)
    assert code == 2 and "minimal repair" in out and spine in out, out
    around = last_plan(d)
    carried = affected_destinations(design, subnet(load_as_built(model).fabric, 0))
    assert moved(around) == set(np.flatnonzero(carried).tolist()) and around["changes"]["destinations_added"] == []
    assert loom("apply", "--model", model)[0] == 0
    assert "as it stands" in no_changes(model)
    # a week later: the technician is done, the operator marks it up
    swept = d.sweeps()
    assert loom("sim", "link", "up", model, spine)[0] == 0
    # OpenSM programs the returning spine on the sweep its ports' traps start (the tables file has
    # none for it: OpenSM's own); a plan read before that sweep would find its old design table
    wait_for("OpenSM's sweep after the spine came back", lambda: d.sweeps() > swept)
    code, out = loom("mark", "up", model, spine)
    assert code == 0 and "marked up" in out, out
    code, out = loom("plan", model)
    assert code == 2 and "as built" not in out, out
    back = last_plan(d)
    assert moved(back) == moved(around)  # what moved away moves back, nothing else
    spine_lid = next(s.lid for s in state.design.switches if s.name == spine)
    assert back["changes"]["per_switch"][spine] > 0 and spine_lid not in moved(back)
    assert loom("apply", "--model", model)[0] == 0
    assert "as it stands" not in no_changes(model)
    assert (d.dir / "design.lfts").read_text() == (d.dir / "last-applied.lfts").read_text()
    assert loom("status", model)[0] == 0


@pytest.mark.parametrize("fabric_up", ["sparse"], indirect=True)
def test_a_partly_populated_zone_grows_and_loses_a_spine(fabric_up):
    """A zone filled leaf by leaf (`tests/models/sparse.yaml`), whose design spreads the
    destinations of its sparse leaves over their idle links (`loom/routing/share.py`): two
    nodes more, locked and re-cabled, planned and applied; then a spine dies and comes back.
    After each apply the next plan says "No changes": the spread is kept from the tables in
    force, not redone differently."""
    model, d = fabric_up
    code, out = loom("check", model, "--json")
    assert code == 0, out
    into = json.loads(out)["balance"]["levels"]["spine_down"]["into"]
    assert into["max_paths"] == 8, into  # 11 with every destination on one link into its leaf
    no_changes(model)
    path = Path(model)
    path.write_text(path.read_text().replace("count: 8, zones: [z0]", "count: 10, zones: [z0]"))
    assert loom("lock", model)[0] == 0
    code, out = loom("sim", "up", model)
    assert code == 0 and "re-cabled" in out, out
    code, out = loom("plan", model)
    assert code == 2 and "drift" not in out, out
    assert {a["name"] for a in last_plan(d)["changes"]["destinations_added"]} == {"c08-hca0", "c09-hca0"}
    assert loom("apply", "--model", model)[0] == 0
    no_changes(model)
    assert loom("sim", "link", "down", model, "z0-spine1")[0] == 0
    assert loom("mark", "down", model, "z0-spine1", "--reason", "fan")[0] == 0
    code, out = loom("plan", model)
    assert code == 2 and "minimal repair" in out, out
    assert loom("apply", "--model", model)[0] == 0
    assert "as it stands" in no_changes(model)
    swept = d.sweeps()
    assert loom("sim", "link", "up", model, "z0-spine1")[0] == 0
    wait_for("OpenSM's sweep after the spine came back", lambda: d.sweeps() > swept)
    assert loom("mark", "up", model, "z0-spine1")[0] == 0
    assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    assert "as it stands" not in no_changes(model)
    assert (d.dir / "design.lfts").read_text() == (d.dir / "last-applied.lfts").read_text()


@pytest.mark.parametrize("fabric_up", ["ring3"], indirect=True)
def test_an_inter_zone_cable_of_a_ring_fails(fabric_up):
    model, d = fabric_up
    assert loom("sim", "link", "down", model, "z0-leaf6:1")[0] == 0  # one of z0's two links to z1
    code, out = loom("plan", model)
    assert code == 2 and "widened (the minimal repair fails reachability" in out and "observed: z0-leaf6/1" in out, out
    assert loom("apply", "--model", model)[0] == 0  # apply re-checks: reachable, deadlock-free, balanced
    assert "as it stands" in no_changes(model)
    assert loom("sim", "link", "up", model, "z0-leaf6:1")[0] == 0
    assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    assert "as it stands" not in no_changes(model)
    assert (d.dir / "design.lfts").read_text() == (d.dir / "last-applied.lfts").read_text()


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_the_watcher_killed_mid_reroute(fabric_up, tmp_path):
    """SIGKILL while the watcher's apply holds its journal; plan settles it, routes around the
    pulled cable (the watcher's own reroute: nothing to change), and after the cable is back a
    new watcher returns the fabric to the design."""
    model, d = fabric_up
    watcher = subprocess.Popen([sys.executable, str(HERE / "apply_with_fault.py"), "--run", "written", "KILL", "watch",
                                model, "--interval", "0.5", "--hold-down", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_line(watcher, "watching", 120)
        assert loom("sim", "link", "down", model, "z0-leaf0:5")[0] == 0
        assert watcher.wait(timeout=120 * slack()) == -signal.SIGKILL  # it killed itself with its tables written
    finally:
        watcher.kill()
        watcher.wait()
    assert (d.dir / "apply.journal").exists()
    code, out = loom("plan", model)  # settles the journal, then plans around the pulled cable
    assert "observed: z0-leaf0/5" in out, out
    if code == 2:
        assert loom("apply", "--model", model)[0] == 0
    plan = last_plan(d)
    leaf0 = plan["desired_lfts"]["z0-leaf0"]["rows"]
    assert all(port != 5 for _, port in leaf0)  # nothing leaves by the pulled cable
    assert "as it stands" in no_changes(model)
    assert loom("sim", "link", "up", model, "z0-leaf0:5")[0] == 0
    watcher = subprocess.Popen([sys.executable, "-m", "loom.cli", "watch", model, "--interval", "0.5", "--hold-down", "0",
                                "--for", "20"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        wait_for("the watcher's return to the design", lambda: not (d.dir / "watch.down.json").exists()
                 and (d.dir / "design.lfts").read_text() == (d.dir / "last-applied.lfts").read_text(), 120)
    finally:
        watcher.terminate()
        watcher.wait()
    assert "as it stands" not in no_changes(model)


def test_the_design_tables_are_kept_only_from_an_intact_fabric():
    """`design.lfts` is written by an apply of a plan made with nothing down (the plan's
    `as_built.cables_down` empty): a plan around a failure never becomes the design."""
    from types import SimpleNamespace

    from loom.fabrics.infiniband.apply import _design_of

    routed = SimpleNamespace(new_design=None, tables="the model's tables")
    assert _design_of(routed, {"as_built": {"cables_down": []}}) == "the model's tables"
    assert _design_of(routed, {"as_built": {"cables_down": ["z0-leaf0/5"]}}) is None
    assert _design_of(routed, {}) is None  # a plan of an older loom: not known to be intact
    carried = SimpleNamespace(new_design="the design it was repaired from", tables="repaired")
    assert _design_of(carried, {"as_built": {"cables_down": ["z0-leaf0/5"]}}) == "the design it was repaired from"


@pytest.mark.parametrize("fabric_up", ["leafgrow"], indirect=True)
def test_a_new_leaf_group_is_cabled_in(fabric_up):
    """Zone z0 grows by two leaves and eight nodes (its spines have free ports): locked, the
    simulation re-cabled; the plan claims no drift, counts the new destinations (the nodes and
    the new leaves' own LIDs) as added and programs the new leaves; then "No changes"."""
    model, d = fabric_up
    path = Path(model)
    text = path.read_text()
    path.write_text(text.replace("switch_model: SW8, leaves: 4,", "switch_model: SW8, leaves: 6,", 1)
                    .replace("count: 9, zones: [z0]", "count: 17, zones: [z0]"))
    code, out = loom("lock", model)
    assert code == 0 and "14 switches" in out and "10 added, 0 removed" in out, out  # two leaves, eight nodes
    code, out = loom("sim", "up", model)
    assert code == 0 and "re-cabled" in out, out
    code, out = loom("plan", model)
    assert code == 2 and "drift:" not in out and "as built" not in out, out
    plan = last_plan(d)
    added = {a["name"] for a in plan["changes"]["destinations_added"]}
    assert {f"z0-c{i:02d}-hca0" for i in range(9, 17)} | {"z0-leaf4", "z0-leaf5"} <= added
    assert plan["changes"]["per_switch"]["z0-leaf4"] > 0
    assert plan["new_switches"] == ["z0-leaf4", "z0-leaf5"] and "in service since loom applied last: 2 switches new or back" in out
    assert loom("apply", "--model", model)[0] == 0
    no_changes(model)


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_the_fabric_grows_and_is_re_cabled(fabric_up):
    """A node more in zone z0: locked, the simulation re-cabled with `loom sim up`; the plan
    claims no drift (nothing changed outside loom), counts the new destination as added, and
    after apply says "No changes"."""
    model, d = fabric_up
    path = Path(model)
    text = path.read_text()
    assert "count: 9, zones: [z0]" in text
    path.write_text(text.replace("count: 9, zones: [z0]", "count: 10, zones: [z0]"))
    assert loom("lock", model)[0] == 0
    code, out = loom("sim", "up", model)
    assert code == 0 and "re-cabled" in out, out
    code, out = loom("plan", model)
    assert code == 2 and "drift" not in out and "as built" not in out, out
    plan = last_plan(d)
    assert {a["name"] for a in plan["changes"]["destinations_added"]} == {"z0-c09-hca0"}
    assert plan["drift"] is None
    assert loom("apply", "--model", model)[0] == 0
    no_changes(model)


def parse_cables(fabric, name: str) -> set[int]:
    from loom.expand.failures import parse_failures

    return set(parse_failures(fabric, [name]).cables)


def live_tables(d, model: str):
    return tables_from_dump(subnet(load_as_built(model).design, 0), d.dump_fts(), "live")


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_a_mark_made_while_the_watcher_runs_is_routed_around(fabric_up):
    """The watcher rereads the model and the lock when they change: a `loom mark down` moves
    traffic off the cable at the next step, and the plan agrees ("No changes … as it stands");
    a model that describes another fabric stops the watcher with a message."""
    from loom.expand import load_fabric
    from loom.fabrics.infiniband.target import SimTarget
    from loom.fabrics.infiniband.watch import Watcher
    from loom.push.errors import PlanError

    model, d = fabric_up
    w = Watcher(Path(model), load_fabric(model), SimTarget(d), hold_down=0)
    assert w.step() is None
    assert loom("mark", "down", model, "z0-leaf0:5", "--reason", "CRC errors")[0] == 0
    e = w.step()
    assert e is not None and e.kind == "down" and e.ok and e.changed == ["z0-leaf0/5"], e
    leaf0 = next(s.index for s in load_as_built(model).design.switches if s.name == "z0-leaf0")
    assert not (live_tables(d, model).lft[leaf0] == 5).any()
    assert "as it stands" in no_changes(model)
    Path(model).write_text(Path(model).read_text().replace("count: 9, zones: [z0]", "count: 10, zones: [z0]"))
    with pytest.raises(PlanError, match="describes another fabric"):
        w.step()


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_a_new_watcher_does_not_hold_down_what_came_back_while_none_ran(fabric_up):
    """A watcher died with a cable routed around; the cable came back; a new watcher with a long
    hold-down returns to the design at once (what is up is up) instead of re-degrading first."""
    from loom.expand import load_fabric
    from loom.fabrics.infiniband.links import set_links
    from loom.fabrics.infiniband.target import SimTarget
    from loom.fabrics.infiniband.watch import Watcher

    model, d = fabric_up
    f = load_fabric(model)
    design = (d.dir / "design.lfts").read_text()
    cable = sorted(parse_cables(f, "z0-leaf2/6"))
    set_links(d.dir, f, cable, up=False)
    assert Watcher(Path(model), f, SimTarget(d), hold_down=60).step().kind == "down"
    set_links(d.dir, f, cable, up=True)
    e = Watcher(Path(model), f, SimTarget(d), hold_down=60).step()
    assert e is not None and e.kind == "up" and e.ok and e.changed == ["z0-leaf2/6"], e
    assert (d.dir / "last-applied.lfts").read_text() == design and not (d.dir / "watch.down.json").exists()
    events = [json.loads(l)["kind"] for l in (d.dir / "watch.log").read_text().splitlines()]
    assert events == ["down", "up"]  # nothing re-degraded in between


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_a_plan_made_before_a_mark_is_not_applied(fabric_up):
    model, d = fabric_up
    assert loom("sim", "link", "down", model, "z0-leaf0:5")[0] == 0
    assert loom("plan", model)[0] == 2
    assert loom("mark", "down", model, "z0-spine1", "--reason", "PSU")[0] == 0
    code, out = loom("apply", "--model", model)
    assert code == 1 and "lock file" in out and "changed since the plan" in out, out


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_without_recorded_design_tables_the_watcher_returns_to_the_plans_design(fabric_up):
    """No `design.lfts` (an older loom applied the design); a plan around a pulled cable was
    applied; the cable is back.  The watcher does not take those tables for the design: it
    returns to the design as plan finds it, and the plan then says "No changes"."""
    from loom.expand import load_fabric
    from loom.fabrics.infiniband.target import SimTarget
    from loom.fabrics.infiniband.watch import Watcher

    model, d = fabric_up
    for name in ("design.lfts", "design.key"):
        (d.dir / name).unlink()
    assert loom("sim", "link", "down", model, "z0-leaf0:5")[0] == 0
    assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    assert loom("sim", "link", "up", model, "z0-leaf0:5")[0] == 0
    e = Watcher(Path(model), load_fabric(model), SimTarget(d), hold_down=0).step()
    assert e is not None and e.kind == "up" and e.ok and e.changed == [], e
    assert "as it stands" not in no_changes(model)


def test_a_journal_naming_declared_cables_is_resolved_on_the_design(tmp_path):
    """Restoring an interrupted apply reads QoS over the fabric the apply was made for: cables
    it routed around are named on the design (a declared one is not in the model's fabric)."""
    from loom.fabrics.infiniband.apply import _as_it_stands

    model = tmp_path / "tiny.yaml"
    text = (TOPO / "tiny.yaml").read_text()
    line = next(l for l in text.splitlines() if "{name: z0," in l)
    model.write_text(text.replace(line, line.replace("leaf_up: 4}", "leaf_up: 4, missing_links: [{leaf: 1, up_port: 2}]}")))
    shutil.copy(TOPO / "tiny.lock.json", tmp_path / "tiny.lock.json")
    sn = _as_it_stands({"model": str(model), "cables_down": ["z0-leaf1/7", "z0-leaf0/5"]})
    leaf1 = next(i for i in range(sn.n) if sn.name(i) == "z0-leaf1")
    assert sn.peer_kind[leaf1, 7] == 0 and sn.peer_kind[leaf1, 5] != 0


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_a_no_change_apply_around_a_dead_spine_keeps_the_design(fabric_up):
    """Plan and apply run again while a spine is marked down (a pipeline that always does both):
    the no-change apply keeps the design tables as they were, and once the spine is back the
    plan returns to them (an apply once recorded the repair as the design: every plan after
    failed reachability, and only deleting `design.lfts` by hand got out)."""
    model, d = fabric_up
    design = (d.dir / "design.lfts").read_text()
    assert loom("mark", "down", model, "z1-spine0", "--reason", "PSU")[0] == 0
    for expect in (2, 0):
        assert loom("plan", model)[0] == expect and loom("apply", "--model", model)[0] == 0
    assert (d.dir / "design.lfts").read_text() == design
    assert loom("mark", "up", model, "z1-spine0")[0] == 0
    code, out = loom("plan", model)
    assert code == 2, out
    assert loom("apply", "--model", model)[0] == 0
    assert (d.dir / "last-applied.lfts").read_text() == design
    no_changes(model)


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_design_tables_recorded_around_a_failure_are_routed_afresh(fabric_up):
    """State an earlier loom left: the repair around a dead spine kept as `design.lfts`.  With the
    spine back, the plan does not fail the checks of those tables: it routes the design afresh."""
    from loom.fabrics.infiniband.design import design_files

    model, d = fabric_up
    assert loom("mark", "down", model, "z1-spine0", "--reason", "PSU")[0] == 0
    assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    key = (d.dir / "design.key").read_text().split()[0]
    for path, text in design_files(d.dir, key, (d.dir / "last-applied.lfts").read_text()).items():
        path.write_text(text)
    assert loom("mark", "up", model, "z1-spine0")[0] == 0
    code, out = loom("plan", model)
    assert code == 2 and "fails" not in out, out
    assert loom("apply", "--model", model)[0] == 0
    no_changes(model)


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_a_cable_pulled_between_plan_and_apply_refuses_the_plan(fabric_up, tmp_path):
    """The live tables do not show a cable that failed after the plan was made; the plan's
    tables, checked on the cabling it saw, could send traffic down it: apply refuses them,
    naming the cable, and pushes nothing.  A new plan routes around it."""
    model, d = fabric_up
    assert loom("mark", "down", model, "z0-spine1", "--reason", "PSU")[0] == 0
    plan = str(tmp_path / "p.json")
    assert loom("plan", model, "--out", plan)[0] == 2
    assert loom("sim", "link", "down", model, "z0-leaf1:7")[0] == 0
    applied = (d.dir / "last-applied.sha256").read_text()
    code, out = loom("apply", plan)
    assert code == 1 and "cabling changed" in out and "z0-leaf1/7" in out, out
    assert (d.dir / "last-applied.sha256").read_text() == applied and not (d.dir / "apply.journal").exists()
    assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    assert loom("sim", "link", "up", model, "z0-leaf1:7")[0] == 0
    assert loom("mark", "up", model, "z0-spine1")[0] == 0
    assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    no_changes(model)


RESTART_AFTER = {  # what happened before the restart: (loom arguments, applied?) in order
    "a cable routed around, back after the restart": [(("sim", "link", "down", "{m}", "z0-leaf3:6"), True)],
    "a spine marked down, not applied": [(("mark", "down", "{m}", "z0-spine1", "--reason", "PSU"), False)],
    "a spine marked down and drained": [(("mark", "down", "{m}", "z1-spine1", "--reason", "PSU"), True)],
    "a NIC marked down and drained": [(("mark", "down", "{m}", "z0-c08-hca0", "--reason", "NIC"), True)],
    "a drained spine's mark taken back, not applied": [(("mark", "down", "{m}", "z1-spine1", "--reason", "PSU"), True),
                                                       (("mark", "up", "{m}", "z1-spine1"), False)],
}


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
@pytest.mark.parametrize("before", list(RESTART_AFTER))
def test_a_restart_keeps_looms_tables(fabric_up, before):
    """`sim down` / `sim up` with loom's tables in OpenSM's file.  Whatever changed since they were
    applied — a cable the restart brings back, a spine marked down (design tables through it), a
    mark applied (tables that drain it), a mark taken back — they are safe on the fabric as
    cabled: loaded, not swapped for OpenSM's own routing (which the next plan took for a change
    made outside loom); the plan then routes as usual."""
    model, d = fabric_up
    for args, apply in RESTART_AFTER[before]:
        assert loom(*(a.format(m=model) for a in args))[0] == 0
        if apply:
            assert loom("plan", model)[0] == 2 and loom("apply", "--model", model)[0] == 0
    assert loom("sim", "down", "--force", model)[0] == 0
    code, out = loom("sim", "up", model)
    assert code == 0 and "rejected" not in out and "routing file" in out, out
    code, out = loom("plan", model)
    assert code in (0, 2) and "outside loom" not in out, out
    assert loom("apply", "--model", model)[0] == 0
    no_changes(model)


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
@pytest.mark.parametrize("daemon", ["opensm", "ibsim"])
def test_status_names_a_daemon_of_the_simulation_that_died(fabric_up, daemon):
    """A daemon killed (SIGKILL: no `sim down` removed its PID file): `loom status` read only the
    state files and said nothing was wrong, with exit 0, while `sim status` showed it down.  It
    names the daemon and the command that brings it back; after that command, nothing."""
    model, d = fabric_up
    assert loom("status", model)[0] == 0
    d.kill(daemon)
    code, out = loom("status", model)
    assert code == 1 and f"killed or crashed) in the simulation: {daemon};" in out and f"`loom sim up {model}`" in out, out
    assert json.loads(loom("status", model, "--json")[1])["dead_daemons"] == [daemon]
    assert loom("sim", "up", model)[0] == 0
    code, out = loom("status", model)
    assert code == 0 and "killed" not in out, out
    assert json.loads(loom("status", model, "--json")[1])["dead_daemons"] == []
    no_changes(model)


@pytest.mark.parametrize("fabric_up", ["tiny"], indirect=True)
def test_a_stopped_watchers_record_is_not_news_after_a_restart(fabric_up):
    """A watcher routed around a pulled cable and stopped; then `sim down` / `sim up` brought every
    cable back.  Status said "routed around by `loom watch`" (exit 1) with the cable up and no
    watcher running: the record is kept for the next watcher, not as news.  Status now says the
    cable is up and what returns to the design; while a watcher runs (its hold-down) or the cable
    is still pulled, the record is current.  A new watcher returns to the design."""
    from loom.expand import load_fabric
    from loom.fabrics.infiniband.target import SimTarget
    from loom.fabrics.infiniband.watch import Watcher
    from loom.push.links import watcher_running, watching

    model, d = fabric_up
    f = load_fabric(model)
    assert loom("sim", "link", "down", model, "z0-leaf3:7")[0] == 0
    assert Watcher(Path(model), f, SimTarget(d), hold_down=0).step().kind == "down"  # ... and that watcher stops
    code, out = loom("status", model)
    assert code == 1 and "routed around by `loom watch`: z0-leaf3/7" in out, out  # still pulled
    assert loom("sim", "down", model)[0] == 0 and loom("sim", "up", model)[0] == 0
    code, out = loom("status", model)
    assert code == 0 and "routed around by `loom watch`" not in out and "up in the simulation: z0-leaf3/7" in out, out
    assert json.loads(loom("status", model, "--json")[1])["stale_watcher_record"] == ["z0-leaf3/7"]
    with watching(d.dir):  # a watcher runs (as this process): the record is its, current
        code, out = loom("status", model)
        assert code == 1 and "routed around by `loom watch`: z0-leaf3/7" in out, out
    assert (d.dir / "watch.down.json").exists()  # kept for the next watcher, which starts from it
    running = []
    Watcher(Path(model), f, SimTarget(d), hold_down=60).run(0.1, until=lambda: True,
                                                           ready=lambda: running.append(watcher_running(d.dir)))
    assert running == [True] and not watcher_running(d.dir) and not (d.dir / "watch.down.json").exists()
    code, out = loom("status", model)
    assert code == 0 and "loom watch" not in out, out
    no_changes(model)
