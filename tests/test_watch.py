"""`loom watch`: the minimal-churn reroute applied when a cable goes down, the design tables back
when it returns, hold-down against flapping (issue 17).  Real ibsim + OpenSM, the tiny fabric."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from loom.expand import load_fabric
from loom.expand.failures import parse_failures, without
from loom.fabrics.infiniband.links import set_links
from loom.fabrics.infiniband.target import SimTarget
from loom.fabrics.infiniband.watch import Watcher
from loom.render.opensm import tables_from_dump
from loom.routing import subnet
from loom.routing.asbuilt import affected_destinations

from .load import slack, wait_for, wait_line
from .simfabric import TINY, loom

pytestmark = pytest.mark.sim


@pytest.fixture
def applied(tiny_up, tmp_path):
    """The tiny fabric up with loom's design tables applied."""
    code, out = loom("plan", TINY, "--out", str(tmp_path / "plan.json"))
    assert code == 2, out
    code, out = loom("apply", str(tmp_path / "plan.json"))
    assert code == 0, out
    return tiny_up


def live(d, fabric=None):
    f = fabric or load_fabric(TINY)
    return tables_from_dump(subnet(f, 0), d.dump_fts(), "live")


def test_a_cable_down_is_rerouted_with_minimal_churn_and_healed_back(applied):
    d, f = applied, load_fabric(TINY)
    design = live(d)
    w = Watcher(TINY, f, SimTarget(d), hold_down=0)
    assert w.step() is None  # nothing down: nothing to do
    cable = parse_failures(f, ["z0-leaf0/5"])
    set_links(d.dir, f, sorted(cable.cables), up=False)
    e = w.step()
    assert e.kind == "down" and e.ok and e.changed == ["z0-leaf0/5"], e
    assert e.seconds["total"] < 10 and e.entries > 0
    now = live(d)
    changed = (now.lft != design.lft).any(axis=0)
    affected = affected_destinations(design, subnet(without(f, cable), 0))
    assert changed.any() and not (changed & ~affected).any()  # only destinations that used the cable moved
    assert (d.dir / "watch.down.json").exists()
    assert not (d.dir / "last-applied.key").exists()  # the tables in force are not the model's routing
    code, out = loom("plan", TINY)  # plan makes the watcher's reroute too (one function): nothing to change
    assert code == 0 and "observed: z0-leaf0/5" in out and "No changes" in out and "as it stands" in out, out
    set_links(d.dir, f, sorted(cable.cables), up=True)
    e = w.step()
    assert e.kind == "up" and e.ok and e.entries == int((now.lft != design.lft).sum()), e
    assert np.array_equal(live(d).lft, design.lft)  # back to the design tables, entry for entry
    assert not (d.dir / "watch.down.json").exists()
    events = [json.loads(l)["kind"] for l in (d.dir / "watch.log").read_text().splitlines()]
    assert events == ["down", "up"]


def test_a_flapping_cable_is_held_down(applied):
    d, f = applied, load_fabric(TINY)
    w = Watcher(TINY, f, SimTarget(d), hold_down=60)
    cable = sorted(parse_failures(f, ["z0-spine1/3"]).cables)
    set_links(d.dir, f, cable, up=False)
    assert w.step().kind == "down"
    set_links(d.dir, f, cable, up=True)
    assert w.step() is None  # back, but not for long enough
    set_links(d.dir, f, cable, up=False)
    assert w.step() is None  # down again: the reroute in force already avoids it
    set_links(d.dir, f, cable, up=True)
    assert w.step() is None  # back again: the hold-down starts over
    assert w.step(time.monotonic() + 61).kind == "up"  # stable past the hold-down


def test_the_watch_command_follows_opensm_sweeps(applied, tmp_path):
    d = applied
    env = {**os.environ, "LOOM_STATE_DIR": os.environ["LOOM_STATE_DIR"]}
    proc = subprocess.Popen([sys.executable, "-m", "loom.cli", "watch", TINY, "--interval", "60", "--hold-down", "0",
                             "--for", "60"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        seen = wait_line(proc, "first discovery done", 60)
        code, out = loom("sim", "link", "down", TINY, "z0-leaf2:6")
        assert code == 0, out
        # the trap's sweep, not the 60 s interval, must wake it: well inside the interval
        wait_for("the watcher's event after the trap", lambda: (d.dir / "watch.log").exists(), 20)
        line = json.loads((d.dir / "watch.log").read_text().splitlines()[0])
        assert line["kind"] == "down" and line["ok"] and line["changed"] == ["z0-leaf2/6"], line
    finally:
        proc.terminate()
        out = seen + proc.communicate(timeout=30 * slack())[0]
    assert proc.returncode == 0 and "watcher stopped; the fabric is routed around z0-leaf2/6" in out, out


def _await_trap_sweep(w: Watcher, timeout: float = 30) -> None:
    wait_for("a sweep with a link-state trap after the link event", w.sweeps_seen, timeout)


def test_after_a_trap_only_the_trapping_switches_are_asked(applied, monkeypatch):
    """The light discovery: OpenSM's log names the switches that trapped; their port states
    decide, and no full ibnetdiscover runs (it would fail here)."""
    d, f = applied, load_fabric(TINY)
    target = SimTarget(d)
    w = Watcher(TINY, f, target, hold_down=0)
    w.sweeps_seen()
    monkeypatch.setattr(target, "run", lambda *a, **k: pytest.fail("a full discovery ran after a trap"))
    cable = sorted(parse_failures(f, ["z0-leaf1/6"]).cables)
    set_links(d.dir, f, cable, up=False)
    _await_trap_sweep(w)
    guids = {s.guid for s in f.switches if s.name in ("z0-leaf1", "z0-spine2")}
    assert w.trapped & guids, w.trapped
    e = w.step()
    assert e.kind == "down" and e.ok and e.changed == ["z0-leaf1/6"], e
    set_links(d.dir, f, cable, up=True)
    e = None
    while e is None:  # the port comes up through Init: the sweep that activates it decides
        _await_trap_sweep(w)
        e = w.step()
    assert e.kind == "up" and e.ok, e


def test_a_spine_down_is_read_from_its_neighbours_without_a_full_discovery(applied, monkeypatch):
    """A spine whose every link goes down traps too but answers no route: its neighbours' ends
    say its cables are down, so neither a retry nor a full ibnetdiscover is needed (they cost a
    two-zone spine-down event ~1.7 s, issue 36)."""
    d, f = applied, load_fabric(TINY)
    target = SimTarget(d)
    w = Watcher(TINY, f, target, hold_down=0)
    w.sweeps_seen()
    monkeypatch.setattr(target, "run", lambda *a, **k: pytest.fail("a full discovery ran after a spine's traps"))
    failure = parse_failures(f, ["z0-spine1"])
    set_links(d.dir, f, sorted(failure.cables), up=False)
    e = None
    while e is None:
        _await_trap_sweep(w)
        e = w.step()
    assert e.kind == "down" and e.ok, e
    assert e.changed == sorted(f.cable_id(c) for c in failure.cables), e


def test_a_reload_that_did_not_take_is_caught_by_the_block_read_back(applied, monkeypatch):
    """Planted: OpenSM is never told to re-read its file, so the switches keep the old entries;
    reading back the blocks the change touched must see it, and the apply restores."""
    d, f = applied, load_fabric(TINY)
    target = SimTarget(d)
    w = Watcher(TINY, f, target, hold_down=0)
    before = live(d)
    monkeypatch.setattr(target, "reload", lambda timeout: "file")
    set_links(d.dir, f, sorted(parse_failures(f, ["z0-leaf0/5"]).cables), up=False)
    e = w.step()
    assert e.kind == "failed" and not e.ok and "read-back differs" in e.message and "entries differ" in e.message, e
    assert "restored" in e.message, e
    assert np.array_equal(live(d).lft, before.lft)


def test_a_watcher_starts_where_the_last_one_stopped(applied):
    """A watcher stopped while the fabric was degraded; the cable came back meanwhile.  The next
    watcher starts from the recorded state (`watch.down.json`), sees the cable up, returns to the
    design tables and clears the record, so `loom plan` says "No changes" again.  Meanwhile plan
    reads the fabric, not the dead watcher's record: it plans the return, it never refuses."""
    d, f = applied, load_fabric(TINY)
    cable = sorted(parse_failures(f, ["z0-leaf2/6"]).cables)
    set_links(d.dir, f, cable, up=False)
    e = Watcher(TINY, f, SimTarget(d), hold_down=0).step()
    assert e is not None and e.kind == "down" and e.ok, e  # ... and that watcher stops here
    set_links(d.dir, f, cable, up=True)
    code, out = loom("plan", TINY)
    assert code == 2 and "as built" not in out and "destinations move" in out, out
    w = Watcher(TINY, f, SimTarget(d), hold_down=0)
    assert sorted(map(f.cable_id, w.down)) == ["z0-leaf2/6"]
    e = w.step()
    assert e is not None and e.kind == "up" and e.ok and e.changed == ["z0-leaf2/6"], e
    assert not (d.dir / "watch.down.json").exists()
    code, out = loom("plan", TINY)
    assert code == 0 and "No changes" in out, out
