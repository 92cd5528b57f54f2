"""The fabric as it stands (issue 32): one state — the design, what the model and the lock declare
down, what the target observes down — and the commands that write and show it (`loom mark`,
`loom status`), without a running fabric."""

from __future__ import annotations

import json
import re
import shutil

import numpy as np
import pytest

from loom.expand import load_fabric
from loom.expand.asbuilt import load_as_built
from loom.expand.failures import parse_failures
from loom.fabrics.infiniband.observed import missing_in_simulation
from loom.push.errors import PlanError, TargetError
from loom.render.ibsim import ibsim_net
from loom.routing import route
from loom.routing.base import NO_ROUTE
from loom.routing.changes import table_changes

from .simfabric import TOPO, loom


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A copy of tiny with its lock (marks are written there), and a private state directory."""
    for suffix in (".yaml", ".lock.json"):
        shutil.copy(TOPO / f"tiny{suffix}", tmp_path / f"tiny{suffix}")
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "tiny.yaml"


def declare_in_model(model, text: str) -> None:
    """Add `missing_*` entries (flow-style YAML, `missing_links: [...]`) to zone z0 of the model."""
    body = model.read_text()
    anchor = "leaf_down: 4, leaf_up: 4}"
    line = next(l for l in body.splitlines() if "{name: z0," in l)
    model.write_text(body.replace(line, line.replace(anchor, f"leaf_down: 4, leaf_up: 4, {text}}}"), 1))


def test_declared_in_the_model_is_the_same_fabric_the_expansion_builds(tiny):
    declare_in_model(tiny, "missing_links: [{leaf: 1, up_port: 2}], missing_switches: [{role: spine, index: 1}]")
    state = load_as_built(tiny)
    assert {(d.name, d.source) for d in state.declared} == {("z0-leaf1/7", "model"), ("z0-spine1", "model")}
    assert len(state.design.cables) == len(load_fabric(TOPO / "tiny.yaml").cables)  # the design has them all
    routed = load_fabric(tiny)  # what route and check take: a down switch keeps its cables, carrying nothing
    ids = {routed.cable_id(i) for i in range(len(routed.cables))} - \
        {routed.cable_id(i) for i in parse_failures(routed, ["z0-spine1"]).cables}
    assert {state.fabric.cable_id(i) for i in range(len(state.fabric.cables))} == ids
    assert state.cable_names(state.cables_down) == sorted({"z0-leaf1/7"} | {f"z0-leaf{l}/{p}" for l in range(4) for p in (6, 8)})


def test_observed_joins_without_repeating_what_is_declared(tiny):
    declare_in_model(tiny, "missing_links: [{leaf: 1, up_port: 2}]")
    state = load_as_built(tiny).with_observed(["z0-leaf1/7", "z0-leaf0/5", "no-such/1"])
    assert [d.name for d in state.observed] == ["z0-leaf0/5"]
    assert state.cable_names(state.cables_down) == ["z0-leaf0/5", "z0-leaf1/7"]


def test_mark_down_and_up(tiny):
    code, out = loom("mark", "down", str(tiny), "z0-spine1", "z0-leaf2:5", "--reason", "PSU failed", "--until", "2026-01-02")
    assert code == 0 and "z0-spine1, z0-leaf2/5 (9 cables)" in out, out
    lock = json.loads(tiny.with_name("tiny.lock.json").read_text())
    assert lock["down"]["z0-spine1"]["reason"] == "PSU failed" and lock["down"]["z0-leaf2/5"]["until"] == "2026-01-02"
    assert loom("lock", str(tiny), "--check")[0] == 0  # the digest covers the marks; the lock still matches
    code, out = loom("status", str(tiny))
    assert code == 1 and "z0-spine1  (loom mark, 8 cables): PSU failed" in out and "OVERDUE" in out, out
    status = json.loads(loom("status", str(tiny), "--json")[1])
    assert {d["name"] for d in status["declared"]} == {"z0-spine1", "z0-leaf2/5"} and status["declared"][0]["overdue"]
    fabric = load_fabric(tiny)  # route and check route around the marks
    ids = {fabric.cable_id(i) for i in range(len(fabric.cables))}
    assert "z0-leaf2/5" not in ids and not any(i.startswith("z0-leaf0/6") for i in ids)
    assert "z0-leaf2/5" in {f.cable_id(i) for f in [load_fabric(tiny, marked=False)] for i in range(len(f.cables))}
    code, out = loom("check", str(tiny))
    assert code == 0, out
    code, out = loom("mark", "up", str(tiny), "z0-spine1:1")  # a cable of the switch is not the switch's mark
    assert code == 0 and "not marked down" in out, out
    assert loom("mark", "up", str(tiny), "z0-spine1", "z0-leaf2/5")[0] == 0
    assert loom("status", str(tiny))[0] == 0 and "down" not in json.loads(tiny.with_name("tiny.lock.json").read_text())


@pytest.mark.parametrize("args, code, words", [
    (["down", "z0-leaf9", "--reason", "x"], 2, "no switch or NIC named `z0-leaf9`"),
    (["down", "z0-spine1", "--reason", "x", "--until", "next week"], 2, "write it as YYYY-MM-DD"),
    (["down", "z0-spine1"], 2, "--reason"),
])
def test_mark_refuses_bad_input_and_writes_nothing(tiny, args, code, words):
    before = tiny.with_name("tiny.lock.json").read_bytes()
    got, out = loom("mark", args[0], str(tiny), *args[1:])
    assert got == code and words in out, out
    assert tiny.with_name("tiny.lock.json").read_bytes() == before


def test_mark_needs_a_lock_and_refuses_what_the_model_declares(tiny):
    declare_in_model(tiny, "missing_switches: [{role: spine, index: 1}]")
    code, out = loom("mark", "up", str(tiny), "z0-spine1")
    assert code == 1 and "declared down by the model" in out and "missing_*" in out, out
    tiny.with_name("tiny.lock.json").unlink()
    code, out = loom("mark", "down", str(tiny), "z0-leaf0", "--reason", "x")
    assert code == 1 and "loom lock" in out, out


def test_status_shows_what_the_simulation_and_the_watcher_observed(tiny, tmp_path):
    state = tmp_path / "state" / "tiny"
    state.mkdir(parents=True)
    (state / "links-down.json").write_text(json.dumps({"down": ["z0-leaf0/5"]}))
    (state / "watch.down.json").write_text("not json")  # a damaged record is not fatal to status
    code, out = loom("status", str(tiny))
    assert code == 1 and "pulled in the simulation" in out and "z0-leaf0/5" in out and "Traceback" not in out, out


def test_status_shows_an_interrupted_apply(tiny, tmp_path):
    """An apply killed midway leaves its journal: status says so (and exits 1), even where the
    journal is damaged, until a plan, apply or sim command resolves it."""
    state = tmp_path / "state" / "tiny"
    state.mkdir(parents=True)
    assert loom("status", str(tiny))[0] == 0
    for journal in ('{"phase": "written", "texts": [], "phases": {}}', "not json"):
        (state / "apply.journal").write_text(journal)
        code, out = loom("status", str(tiny))
        assert code == 1 and "an interrupted apply awaits recovery" in out and "Traceback" not in out, out
        assert json.loads(loom("status", str(tiny), "--json")[1])["interrupted_apply"] is True


def test_a_command_run_from_elsewhere_says_where_it_looked(tmp_path, monkeypatch):
    """The state directory is `.loom/` of the working directory unless LOOM_STATE_DIR is set: run
    from another directory, status said "observed down: nothing" (exit 0) and plan "ibsim is not
    running", naming no directory.  Each now names the one it looked in and how to choose another."""
    monkeypatch.delenv("LOOM_STATE_DIR", raising=False)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    looked = str(tmp_path / "elsewhere" / ".loom" / "sim" / "tiny")
    model = str(TOPO / "tiny.yaml")
    for args, code in ((("status", model), 0), (("plan", model), 1), (("apply", "--model", model), 1),
                       (("sim", "link", "down", model, "z0-leaf0:5"), 1), (("watch", model, "--for", "1"), 1),
                       (("sim", "status", model), 1)):
        got, out = loom(*args)
        assert got == code and f"no state in {looked}" in out and "LOOM_STATE_DIR" in out, (args, out)
    status = json.loads(loom("status", model, "--json")[1])
    assert status["state_found"] is False and status["state_dir"] == looked


def test_the_simulation_observes_pulled_and_never_cabled_cables(tmp_path):
    design = load_as_built(TOPO / "tiny.yaml").design
    net = tmp_path / "fabric.net"
    declared = load_fabric(TOPO / "tiny.yaml")
    net.write_text(ibsim_net(declared, 0))
    assert missing_in_simulation(net, [], design) == []
    assert missing_in_simulation(net, ["z0-leaf0/5", "elsewhere/1"], design) == ["z0-leaf0/5"]
    text = net.read_text()
    leaf3 = re.search(r'^Switch \d+ "z0-leaf3"\n(.*?)\n\n', text, re.M | re.S).group(1)
    far = re.search(r'^\[6\] "([^"]+)"\[(\d+)\]', leaf3, re.M)
    gone = [l for l in text.splitlines() if (l.startswith("[6]") and l in leaf3.splitlines())
            or l.startswith(f'[{far.group(2)}] "z0-leaf3"[6]')]
    assert len(gone) == 2  # ibsim lists a cable from both ends
    net.write_text("\n".join(l for l in text.splitlines() if l not in gone) + "\n")
    assert missing_in_simulation(net, [], design) == ["z0-leaf3/6"]  # never cabled
    net.write_text(text.replace('"z0-spine0"[1]', '"z0-spine1"[1]', 1))  # a cable on another switch
    with pytest.raises(TargetError, match="cabled differently"):
        missing_in_simulation(net, [], design)


def test_one_count_of_a_change():
    """Moved, added and removed are told apart on the switches in service; the count plan,
    whatif and the watcher report."""
    fabric = load_fabric(TOPO / "tiny.yaml")
    before = route(fabric)[0]
    after = before.__class__(before.subnet, before.lft.copy(), "x", ())
    sn = before.subnet
    lids = np.flatnonzero(before.lft[0] != NO_ROUTE)
    a, b = int(lids[0]), int(lids[1])
    after.lft[0, a] = 200 if before.lft[0, a] != 200 else 201  # moved
    before.lft[1, b] = NO_ROUTE  # added: routed nothing before
    c = int(lids[2])
    after.lft[:, c] = NO_ROUTE  # removed: no switch forwards it any more
    gone = int((before.lft[:, c] != NO_ROUTE).sum())
    ch = table_changes(before, after)
    assert ch.entries == 2 + gone and ch.destinations_removed.tolist() == [c]
    assert a in ch.destinations_moved.tolist() and b in ch.destinations_added.tolist()
    assert c not in ch.destinations_moved.tolist() + ch.destinations_added.tolist()
    assert ch.per_switch()[0] == 2 and sn.n > 2


def test_a_plan_names_the_destinations_it_removes():
    """A node taken out of the model: its LID is forwarded by every switch live, by none in the
    plan; the plan lists it as removed, named by its LID (the model has no name for it)."""
    from loom.fabrics.infiniband.plan import diff_tables

    fabric = load_fabric(TOPO / "tiny.yaml")
    want = route(fabric)[0]
    sn = want.subnet
    unowned = next(l for l in range(1, sn.max_lid + 1) if sn.lid_switch[l] < 0 and sn.lid_port[l] < 0)
    live = want.__class__(sn, want.lft.copy(), "live", ())
    live.lft[:, unowned] = live.lft[:, int(sn.ca_lids[0])]  # the live fabric still routes a node the model dropped
    c = diff_tables(live, want)
    assert c["destinations_removed"] == [{"lid": unowned, "name": f"LID {unowned} (not in the model)"}]
    assert c["destinations_moved"] == c["destinations_added"] == [] and c["entries_changed"] > 0


@pytest.mark.parametrize("down, words", [
    ({"z0-spine1": {"reason": 5}}, "down.z0-spine1.reason"),
    ({"z0-spine1": {"reason": "x", "until": "soon"}}, "down.z0-spine1.until"),
    ({"z0-spine1": {"reason": "x", "rm -rf": 1}}, "down.z0-spine1.rm -rf"),
    ({"z0-spine1": "PSU"}, "down.z0-spine1"),
    ([1, 2], "down"),
])
def test_a_hostile_down_section_is_refused_naming_the_lock_and_the_field(tiny, down, words):
    lock = tiny.with_name("tiny.lock.json")
    data = json.loads(lock.read_text())
    data["down"] = down
    lock.write_text(json.dumps(data))
    for cmd in (("check", str(tiny)), ("status", str(tiny)), ("mark", "up", str(tiny), "z0-spine1")):
        code, out = loom(*cmd)
        assert code == 1 and "tiny.lock.json" in out and words in out and "Traceback" not in out, (cmd, out)


def signed(lock_file, **update) -> None:
    """Rewrite a lock file with `update`, signed as `loom lock` signs it."""
    from loom.expand.lockfile import Mark, lock_text, read_lock

    lock = read_lock(lock_file)
    if "down" in update:
        update["down"] = {k: Mark(**v) for k, v in update["down"].items()}
    lock_file.write_text(lock_text(lock.model_copy(update=update)))


def test_a_mark_of_something_the_model_no_longer_has_is_shown_takes_nothing_out_and_can_go(tiny):
    signed(tiny.with_name("tiny.lock.json"), down={"z9-spine7": {"reason": "left over"}})
    code, out = loom("status", str(tiny))
    assert code == 1 and "z9-spine7  (loom mark, 0 cables): left over" in out, out
    assert len(load_fabric(tiny).cables) == len(load_fabric(TOPO / "tiny.yaml").cables)
    code, out = loom("mark", "up", str(tiny), "z9-spine7")
    assert code == 0 and "marked up: z9-spine7" in out, out
    assert loom("status", str(tiny))[0] == 0


def test_marks_survive_a_relayout_and_a_hand_edited_lock_is_not_signed(tiny):
    assert loom("mark", "down", str(tiny), "z0-spine1", "--reason", "PSU")[0] == 0
    assert loom("lock", str(tiny), "--relayout")[0] == 0
    assert "z0-spine1" in json.loads(tiny.with_name("tiny.lock.json").read_text())["down"]
    lock = tiny.with_name("tiny.lock.json")
    lock.write_text(lock.read_text().replace('"PSU"', '"PSU!"'))
    for args in (("down", "z0-leaf0", "--reason", "x"), ("up", "z0-spine1")):
        code, out = loom("mark", *args[:1], str(tiny), *args[1:])
        assert code == 1 and "edited by hand" in out, out
    assert '"PSU!"' in lock.read_text()


@pytest.mark.parametrize("until", ["2026-02-30", "20261203", "2026-12-3"])
def test_a_date_that_is_not_on_the_calendar_is_refused(tiny, until):
    code, out = loom("mark", "down", str(tiny), "z0-spine1", "--reason", "x", "--until", until)
    assert code == 2 and "YYYY-MM-DD" in out, out
    lock = tiny.with_name("tiny.lock.json")
    data = json.loads(lock.read_text())
    data["down"] = {"z0-spine1": {"reason": "x", "until": until}}
    lock.write_text(json.dumps(data))
    code, out = loom("status", str(tiny))
    assert code == 1 and "down.z0-spine1.until" in out and "Traceback" not in out, out


@pytest.mark.parametrize("down", [["z9-leaf0/1"], "z0-leaf0/5", [5]])
def test_a_plan_naming_cables_the_model_lacks_is_refused(down):
    from loom.push.planfile import as_planned

    with pytest.raises(PlanError, match="as_built.cables_down names cables the model does not have"):
        as_planned({"model": str(TOPO / "tiny.yaml"), "as_built": {"cables_down": down}}, None, "plan.json")


def test_a_huge_mark_name_is_refused(tiny):
    lock = tiny.with_name("tiny.lock.json")
    data = json.loads(lock.read_text())
    data["down"] = {"x" * 10_000: {"reason": "r"}}
    lock.write_text(json.dumps(data))
    code, out = loom("status", str(tiny))
    assert code == 1 and "at most 200 characters" in out and len(out) < 2000, out


def test_a_mark_moves_no_cable(tiny):
    """The cabling sheet and the change sheet are the floor: a cable marked down stays on them."""
    before = loom("cabling", str(tiny), "--format", "csv")[1]
    assert loom("mark", "down", str(tiny), "z0-spine1", "--reason", "PSU")[0] == 0
    assert loom("cabling", str(tiny), "--format", "csv")[1] == before
    code, out = loom("cabling", "diff", str(TOPO / "tiny.yaml"), str(tiny), "--format", "csv")
    assert code == 0 and "z0-spine1" not in out, out
