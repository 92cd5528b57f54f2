"""The watcher drains a failing link and returns it when clean (issue 39, step 4): symbol errors
raised on one leaf–spine cable every few seconds while `Watcher.run` follows the fabric → the
link is drained within 10 s of crossing the failing limit, only the destinations that used it
move, the audit log says why; the errors stop → it is returned after `health.clean_s`; a
`perfquery -R` triggers nothing.  Real ibsim + OpenSM: tiny here, the two-zone fabric marked slow."""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from loom.checks.link_health import end_keys
from loom.expand import load_fabric, lock_path
from loom.expand.failures import parse_failures, without
from loom.fabrics.infiniband.daemon import Daemons
from loom.fabrics.infiniband.sim import console
from loom.fabrics.infiniband.target import SimTarget
from loom.fabrics.infiniband.watch import Watcher
from loom.push.audit import read as read_audit
from loom.render.opensm import tables_from_dump
from loom.routing import subnet
from loom.routing.asbuilt import affected_destinations

from .load import slack, wait_for
from .simfabric import TOPO, loom
from .test_port_counters import perfquery

pytestmark = pytest.mark.sim

HEALTH = "\nhealth: {window_s: 60, clean_s: 4}\n"  # failing at 10 symbol errors in the minute


def with_health(src: Path, tmp_path: Path) -> Path:
    """A copy of model `src` (its lock file and catalogue beside it) that judges links quickly."""
    dst = tmp_path / src.name
    dst.write_text(src.read_text() + HEALTH)
    shutil.copy(lock_path(src), lock_path(dst))
    (tmp_path / "catalogue").symlink_to((src.parent / "catalogue").resolve())
    return dst


def events(d) -> list[dict]:
    log = d.dir / "watch.log"
    return [json.loads(l) for l in log.read_text().splitlines()] if log.exists() else []


def live(d, fabric):
    return tables_from_dump(subnet(fabric, 0), d.dump_fts(), "live")


def drain_and_return(d, model: Path, cable_id: str, every: float = 2.0, step: int = 4) -> dict:
    """The acceptance journey on a fabric that is up with loom's design tables applied; returns
    the figures (seconds from crossing to drained, to returned)."""
    fabric = load_fabric(model)
    cable = parse_failures(fabric, [cable_id])
    (index,) = cable.cables
    design = live(d, fabric)
    # counts from long ago on another cable, there before the watcher starts (reset later)
    other = next(end_keys(fabric, i)[1] for i in range(len(fabric.cables.kind)) if i != index)
    odev, oport = other.split("/")
    console(d.dir, [f'PerformanceSet "{odev}"[{oport}] PortCounters.SymbolErrorCounter=5000'])
    w = Watcher(model, fabric, SimTarget(d), hold_down=1, health_interval=1.0)
    stop, ready = threading.Event(), threading.Event()
    failure: list[BaseException] = []
    figures: dict = {}

    def journey():  # beside the watcher, which runs in the main thread (apply handles signals there)
        try:
            wait_for("the watcher's first step", ready.is_set, 120)
            figures.update(_journey(d, fabric, cable, index, cable_id, design, every, step))
        except BaseException as exc:  # surfaced below
            failure.append(exc)
        finally:
            stop.set()

    thread = threading.Thread(target=journey, daemon=True)
    thread.start()
    w.run(interval=2, until=stop.is_set, ready=ready.set)
    thread.join(60)
    if failure:
        raise failure[0]
    return figures


def _journey(d, fabric, cable, index: int, cable_id: str, design, every: float, step: int) -> dict:
    near, _ = end_keys(fabric, index)
    device, port = near.split("/")
    # another tool resets counters that were high: nothing happens
    other = next(end_keys(fabric, i)[1] for i in range(len(fabric.cables.kind)) if i != index)
    odev, oport = other.split("/")
    time.sleep(2.5)
    perfquery(d, "-R", str(next(s.lid for s in fabric.switches if s.name == odev)), oport)
    # symbol errors rising on one end of the cable, `step` every `every` seconds
    value, crossed = 0, None
    deadline = time.monotonic() + 120 * slack()
    # the log is read before each verdict: a drain logged while this thread slept is in time
    while not any(e["kind"] == "drain" for e in events(d)):
        assert time.monotonic() < deadline, events(d)
        if crossed is not None:
            assert time.monotonic() - crossed < 10 * slack() + every, "not drained within 10 s of the threshold"
        value += step
        console(d.dir, [f'PerformanceSet "{device}"[{port}] PortCounters.SymbolErrorCounter={value}'])
        last_raise = time.monotonic()
        if crossed is None and value >= 10:
            crossed = time.monotonic()
        time.sleep(every)
    drained_after = time.monotonic() - crossed
    (drain,) = [e for e in events(d) if e["kind"] == "drain"]
    assert drain["ok"] and drain["changed"] == [cable_id] and drain["cables_down"] == [cable_id], drain
    assert [e["kind"] for e in events(d)] == ["drain"], events(d)  # the reset triggered nothing
    now = live(d, fabric)
    moved = (now.lft != design.lft).any(axis=0)
    assert moved.any() and not (moved & ~affected_destinations(design, subnet(without(fabric, cable), 0))).any()
    audited = [a for a in read_audit(d.dir) if a.get("drained")]
    assert audited and cable_id in audited[-1]["drained"] and "SymbolErrorCounter" in audited[-1]["drained"][cable_id][0]
    assert cable_id in json.loads((d.dir / "watch.drained.json").read_text())["drained"]
    # the errors stopped with the last raise: returned once both ends stayed clean for clean_s
    wait_for("the return", lambda: any(e["kind"] == "return" for e in events(d)), 60)
    returned_after = time.monotonic() - last_raise
    assert returned_after >= 4, returned_after  # not before clean_s
    ret = [e for e in events(d) if e["kind"] == "return"][-1]
    assert ret["ok"] and ret["changed"] == [cable_id] and ret["cables_down"] == [], ret
    assert np.array_equal(live(d, fabric).lft, design.lft)
    assert not (d.dir / "watch.drained.json").exists()
    # a reset of the drained link's own counters afterwards: still nothing
    perfquery(d, "-R", str(next(s.lid for s in fabric.switches if s.name == device)), port)
    time.sleep(3)
    assert [e["kind"] for e in events(d)] == ["drain", "return"], events(d)
    return {"drained_s": round(drained_after, 2), "returned_s": round(returned_after, 2)}


@pytest.fixture
def applied_model(tiny_up, tmp_path):
    model = with_health(TOPO / "tiny.yaml", tmp_path)
    code, out = loom("plan", str(model), "--out", str(tmp_path / "plan.json"))
    assert code == 2, out
    code, out = loom("apply", str(tmp_path / "plan.json"))
    assert code == 0, out
    return tiny_up, model


def test_a_failing_link_is_drained_and_returned_on_the_tiny_fabric(applied_model):
    d, model = applied_model
    figures = drain_and_return(d, model, "z0-leaf0/5")
    assert figures["drained_s"] < 10 * slack()
    code, out = loom("plan", str(model))
    assert code == 0 and "No changes" in out, out


@pytest.mark.slow
def test_a_failing_link_is_drained_and_returned_on_the_two_zone_fabric(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    model = with_health(TOPO / "fire-flyer-2.yaml", tmp_path)
    try:
        code, out = loom("sim", "up", str(model))
        assert code == 0, out
        code, out = loom("plan", str(model), "--out", str(tmp_path / "plan.json"))
        assert code == 2, out
        code, out = loom("apply", str(tmp_path / "plan.json"))
        assert code == 0, out
        d = Daemons.of("fire-flyer-2")
        figures = drain_and_return(d, model, "z0-leaf0/33", every=2.0, step=4)
        print("two-zone drain/return:", figures)
        assert figures["drained_s"] < 10 * slack()
    finally:
        loom("sim", "down", "--force", str(model))


def test_only_switch_links_are_drained_and_a_new_watcher_keeps_the_drain(applied_model):
    d, model = applied_model
    fabric = load_fabric(model)
    w = Watcher(model, fabric, SimTarget(d), hold_down=0, health_interval=1.0)
    assert not w.health_step() and w.step() is None
    console(d.dir, ['PerformanceSet "z0-leaf0"[1] PortCounters.SymbolErrorCounter=100',  # a node's cable
                    'PerformanceSet "z0-leaf1"[6] PortCounters.SymbolErrorCounter=100'])  # leaf-spine
    assert w.health_step()
    verdicts = {h.cable_id: h.verdict for h in w.links}
    assert verdicts["z0-leaf0/1"] == verdicts["z0-leaf1/6"] == "failing"
    assert [fabric.cable_id(c) for c in w.drained] == ["z0-leaf1/6"]  # the node's cable is ticketed, not drained
    e = w.step()
    assert e.kind == "drain" and e.ok and e.changed == ["z0-leaf1/6"], e
    code, out = loom("plan", str(model))  # a plan during the drain keeps it: the link counts as observed down
    assert code == 0 and "No changes" in out and "observed: z0-leaf1/6" in out, out
    again = Watcher(model, fabric, SimTarget(d), hold_down=0, health_interval=1.0)  # the next watcher
    assert [fabric.cable_id(c) for c in again.drained] == ["z0-leaf1/6"]
    assert again.step() is None  # the tables in force already avoid it: nothing to do
    assert not again.health_step()  # one reading: not yet clean_s of quiet counters


def test_a_drain_never_cuts_a_switch_off(applied_model):
    """Errors on all four uplinks of a leaf: three are drained, the last way out stays in service
    (routing would silently leave the leaf and its nodes out of the tables, and no check refuses that)."""
    d, model = applied_model
    fabric = load_fabric(model)
    w = Watcher(model, fabric, SimTarget(d), hold_down=0, health_interval=1.0)
    assert not w.health_step() and w.step() is None
    uplinks = ["z0-leaf0/5", "z0-leaf0/6", "z0-leaf0/7", "z0-leaf0/8"]
    console(d.dir, [f'PerformanceSet "z0-leaf0"[{p.split("/")[1]}] PortCounters.SymbolErrorCounter=100' for p in uplinks])
    assert w.health_step()
    assert sorted(fabric.cable_id(c) for c in w.drained) == uplinks[:3]
    assert [fabric.cable_id(c) for c in w.kept] == uplinks[3:]
    e = w.step()
    assert e.kind == "drain" and e.ok and e.changed == uplinks[:3], e
    assert not w.applied.warnings  # nothing cut off
    now = live(d, fabric)
    leaf0 = next(r for r in range(now.subnet.n) if now.subnet.name(r) == "z0-leaf0")
    assert set(now.lft[leaf0, now.subnet.ca_lids].tolist()) - {0, 1, 2, 3, 4} == {8}  # all upward traffic on the last uplink


def test_a_drain_whose_reroute_fails_a_check_is_given_up_not_retried(applied_model, monkeypatch):
    d, model = applied_model
    fabric = load_fabric(model)
    w = Watcher(model, fabric, SimTarget(d), hold_down=0, health_interval=1.0)
    assert not w.health_step() and w.step() is None
    monkeypatch.setattr(w, "_failing", lambda tables, checked: [] if tables is w.design else ["a planted check"])
    console(d.dir, ['PerformanceSet "z0-leaf1"[6] PortCounters.SymbolErrorCounter=100'])
    assert w.health_step()
    e = w.step()
    assert e.kind == "refused" and not e.ok and "a planted check" in e.message and e.cables_down == [], e
    assert w.drained == {} and [fabric.cable_id(c) for c in w.kept] == ["z0-leaf1/6"]
    assert not (d.dir / "watch.drained.json").exists()
    assert w.step() is None  # not tried again at every step
    console(d.dir, ['PerformanceSet "z0-leaf1"[6] PortCounters.SymbolErrorCounter=200'])
    assert not w.health_step() and w.step() is None  # nor at the next reading while it keeps failing
    assert [e["kind"] for e in events(d)] == ["refused"]
