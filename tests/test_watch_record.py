"""`watch.down.json` is true of the watcher's tables only: once a plan of the model is applied
(or the watcher died before its apply finished), `loom status` and a new watcher must not take
its cables as routed around (the stranger's review: status kept saying "routed around by loom
watch" after plan and apply said "No changes")."""

from __future__ import annotations

import json

from loom.push.links import watcher_down

from .simfabric import TINY, loom


def _state(tmp_path, monkeypatch, record: dict, last: str):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path))
    d = tmp_path / "tiny"
    d.mkdir(parents=True)
    (d / "watch.down.json").write_text(json.dumps(record))
    (d / "last-applied.sha256").write_text(last + "\n")
    return d


def test_the_record_holds_while_the_watchers_tables_are_in_force(tmp_path, monkeypatch):
    d = _state(tmp_path, monkeypatch, {"down": ["z0-leaf0/5"], "tables_sha256": "aa"}, "aa")
    assert watcher_down(d) == ["z0-leaf0/5"]
    code, out = loom("status", TINY)
    assert code == 1 and "routed around by `loom watch`: z0-leaf0/5" in out, out


def test_an_apply_since_makes_the_record_stale(tmp_path, monkeypatch):
    d = _state(tmp_path, monkeypatch, {"down": ["z0-leaf0/5"], "tables_sha256": "aa"}, "bb")
    assert watcher_down(d) == []
    code, out = loom("status", TINY)
    assert code == 0 and "loom watch" not in out and "observed down: nothing" in out, out


def test_damaged_records_are_nothing(tmp_path, monkeypatch):
    d = _state(tmp_path, monkeypatch, {"down": "z0-leaf0/5"}, "aa")
    assert watcher_down(d) == []
    (d / "watch.down.json").write_text("[1, 2")
    assert watcher_down(d) == []
