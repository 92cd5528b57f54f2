"""Issue 34: apply computes what changes from the live tables it reads, never from the plan's own
summary — a plan re-signed after editing its `changes` block, or its tables, is applied by what
it would really do, and a valid hand edit of its tables is pushed only on purpose
(`--from-edited-plan`) and then reported by the next plan until the model routes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loom.checks import check_tables
from loom.expand import load_fabric
from loom.fabrics.infiniband.checked import failing_checks
from loom.push import audit
from loom.push.packing import digest_live, rows_text, table_rows
from loom.push.planfile import content_digest, read_plan
from loom.qos import plan_qos
from loom.render.opensm import lfts_dump, parse_lfts_dump, tables_from_dump
from loom.routing import subnet

from .simfabric import TINY, loom
from .test_plan_apply import hand_edit

pytestmark = pytest.mark.sim


def resign(path: Path, plan: dict) -> None:
    """Write `plan` with its own digest recomputed, as anyone can."""
    path.write_text(json.dumps({**plan, "plan_sha256": content_digest(plan)}))


def applied(tmp_path: Path) -> Path:
    """The model's tables applied; a fresh plan of it (nothing to change) saved."""
    assert loom("plan", TINY)[0] == 2 and loom("apply", "--model", TINY)[0] == 0
    path = tmp_path / "p.json"
    code, out = loom("plan", TINY, "--out", str(path))
    assert code == 0 and "No changes" in out, out
    return path


def test_a_plan_claiming_changes_that_are_not_there_pushes_nothing(tiny_up, tmp_path):
    d = tiny_up
    path = applied(tmp_path)
    code, out = loom("show", str(path))
    assert code == 0 and "differ from what its model routes" not in out, out  # a plan of the model: no warning
    plan = read_plan(path)
    plan["changes"].update(entries_changed=5000, switches_touched=12, per_switch={"z0-leaf0": 5000})
    plan["qos"]["conf_changes"] = True
    resign(path, plan)
    sweeps, log = d.sweeps(), d.log.read_text()
    code, out = loom("apply", str(path))
    assert code == 0 and "no changes" in out and "5000" not in out, out
    assert d.sweeps() == sweeps and "Exiting SM" not in d.log.read_text()[len(log):]  # OpenSM neither reloaded nor restarted
    last = audit.read(d.dir)[-1]
    assert last["ok"] and last["entries_changed"] == 0 and "5000" not in last["outcome"], last


def test_a_plan_hiding_a_real_change_is_pushed_and_counted(tiny_up, tmp_path):
    d = tiny_up
    applied(tmp_path)
    hand_edit(d, "z0-leaf0")  # two entries changed on live switches behind loom's back
    hand_edit(d, "z0-leaf1")
    path = tmp_path / "p2.json"
    assert loom("plan", TINY, "--out", str(path))[0] == 2
    plan = read_plan(path)
    assert plan["changes"]["entries_changed"] == 2
    plan["changes"].update(entries_changed=0, switches_touched=0, per_switch={}, destinations_moved=[])
    plan["drift"] = None
    resign(path, plan)
    code, out = loom("apply", str(path))
    assert code == 0 and "applied and verified: 2 entries on 2 switches" in out, out
    assert audit.read(d.dir)[-1]["entries_changed"] == 2
    assert parse_lfts_dump(d.dump_fts()) == parse_lfts_dump(rows_text(plan["desired_lfts"]))
    code, out = loom("plan", TINY)
    assert code == 0 and "No changes" in out, out


def _swap_two_up_routes(plan: dict) -> tuple[object, list[tuple[str, int]]]:
    """The plan's tables with two remote destinations of a leaf swapped between its up-ports:
    a hand edit that passes every check (balance, reachability, deadlock) yet is not the model's."""
    fabric = load_fabric(TINY)
    sn = subnet(fabric, 0)
    t = tables_from_dump(sn, rows_text(plan["desired_lfts"]), "plan")
    qos = plan_qos(fabric.model)
    row = next(r for r in range(sn.n) if sn.name(r) == "z0-leaf0")
    remote = [int(l) for l in sn.ca_lids if sn.ca_switch[int(l)] != row]
    for a in remote:
        for b in remote:
            pa, pb = int(t.lft[row, a]), int(t.lft[row, b])
            if a < b and pa != pb:
                edited = t.with_entries({(row, a): pb, (row, b): pa})
                if not failing_checks(check_tables(edited, ebb_samples=0, qos=qos)):
                    return edited, [("z0-leaf0", a), ("z0-leaf0", b)]
    raise AssertionError("no valid swap found on z0-leaf0")


def test_a_valid_hand_edit_is_pushed_only_on_purpose_and_reported_after(tiny_up, tmp_path):
    d = tiny_up
    path = applied(tmp_path)
    plan = read_plan(path)
    edited, _ = _swap_two_up_routes(plan)
    plan = {**plan, "desired_lfts": table_rows(edited), "desired_sha256": digest_live(lfts_dump(edited))}
    resign(path, plan)
    code, out = loom("show", str(path))  # the review says so before anything is applied
    assert code == 0 and "its tables differ from what its model routes on that fabric (2 entries on 1 switches)" in out, out
    assert "--from-edited-plan" in out
    before = d.dump_fts()
    code, out = loom("apply", str(path))
    assert code == 1 and "differ from what its model routes" in out and "2 entries on 1 switches" in out, out
    assert "--from-edited-plan" in out and d.dump_fts() == before
    code, out = loom("apply", "--from-edited-plan", str(path))
    assert code == 0 and "applied and verified: 2 entries on 1 switches" in out and "edited plan" in out, out
    assert parse_lfts_dump(d.dump_fts()) == parse_lfts_dump(lfts_dump(edited))
    # the next plans report the edit and route back to the model, however often they are made
    for _ in range(2):
        code, out = loom("plan", TINY)
        assert code == 2 and "live tables differ from the model's routing" in out and "2 LFT entries" in out, out
    assert "routing_key" in json.loads((d.dir / "edited-apply.json").read_text())
    code, out = loom("apply", "--model", TINY)
    assert code == 0 and "applied and verified: 2 entries" in out, out
    code, out = loom("plan", TINY)
    assert code == 0 and "No changes" in out and "differ" not in out, out
    assert not (d.dir / "edited-apply.json").exists()


def test_design_tables_a_plan_carries_must_be_the_models(tiny_up, tmp_path):
    """A plan made with nothing to keep yet carries nothing; one re-signed to carry other design
    tables (which apply would keep as the design) is refused like an edit of its tables."""
    path = applied(tmp_path)
    plan = read_plan(path)
    edited, _ = _swap_two_up_routes(plan)
    resign(path, {**plan, "design_lfts": table_rows(edited)})
    code, out = loom("apply", str(path))
    assert code == 1 and "design tables it carries are not the model's" in out, out


@pytest.mark.parametrize("field, value, named", [("qos", None, "qos"), ("qos", "x", "qos"), ("changes", "lots", "changes"),
                                                 ("created", None, "created"), ("target", "sim", "target"),
                                                 ("new_switches", 5, "new_switches")])
def test_apply_refuses_what_show_refuses(tiny_up, tmp_path, field, value, named):
    """A re-signed plan whose fields have the wrong shape: apply refuses it as `loom show` does,
    naming the field, before any work (it once crashed on `qos: null` and pushed `changes: "lots"`)."""
    d = tiny_up
    path = applied(tmp_path)
    resign(path, {**read_plan(path), field: value})
    code, shown = loom("show", str(path))
    assert code == 1 and named in shown and "Traceback" not in shown, shown
    sweeps = d.sweeps()
    code, out = loom("apply", str(path))
    assert code == 1 and f"{path}: {named}" in out and "Traceback" not in out, out
    assert d.sweeps() == sweeps
