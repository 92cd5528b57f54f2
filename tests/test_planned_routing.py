"""Issue 36: the apply of a plan made here takes the tables `loom plan` routed, from the same
inputs, as the model's routing instead of routing the model again (`planned.py`); any change of
those inputs, or of the plan's tables, routes again (the edited-plan refusals of
tests/test_apply_computes.py run with the record in place)."""

from __future__ import annotations

import json

import pytest

from loom.fabrics.infiniband import apply as apply_mod
from loom.fabrics.infiniband.planned import _READ, KEEP, PLANNED, inputs_digest, recalled, remember

from .simfabric import TINY, loom


def test_every_record_routing_reads_changes_the_inputs(tmp_path):
    base = inputs_digest(tmp_path, "k", "dk", "live")
    assert inputs_digest(tmp_path, "k", "dk", "live") == base
    assert len({base, inputs_digest(tmp_path, "k2", "dk", "live"), inputs_digest(tmp_path, "k", "dk2", "live"),
                inputs_digest(tmp_path, "k", "dk", "live2")}) == 4
    seen = {base}
    for name in _READ:
        (tmp_path / name).write_text("x\n")
        seen.add(inputs_digest(tmp_path, "k", "dk", "live"))
        (tmp_path / name).write_text("y\n")  # same length, other content
        seen.add(inputs_digest(tmp_path, "k", "dk", "live"))
    assert len(seen) == 1 + 2 * len(_READ)


def test_a_record_names_inputs_tables_and_design_together(tmp_path):
    remember(tmp_path, "in", "tables", None)
    assert recalled(tmp_path, "in", "tables", None)
    assert not recalled(tmp_path, "in", "other", None)
    assert not recalled(tmp_path, "other", "tables", None)
    assert not recalled(tmp_path, "in", "tables", "design")  # a plan carrying design tables the routing did not make
    for i in range(KEEP + 2):
        remember(tmp_path, f"in{i}", "t", "d")
    assert not recalled(tmp_path, "in", "tables", None) and recalled(tmp_path, f"in{KEEP + 1}", "t", "d")
    assert len(json.loads((tmp_path / PLANNED).read_text())) == KEEP


@pytest.mark.parametrize("body", ["{torn", '{"inputs": "in"}', '[{"inputs": 1, "tables_sha256": 2}]', "[]"])
def test_a_torn_or_foreign_file_is_no_record(tmp_path, body):
    (tmp_path / PLANNED).write_text(body)
    assert not recalled(tmp_path, "in", "tables", None)
    remember(tmp_path, "in", "tables", None)  # and is replaced
    assert recalled(tmp_path, "in", "tables", None)


def _counting(monkeypatch) -> list[int]:
    calls = []
    real = apply_mod.model_routing

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(apply_mod, "model_routing", counted)
    return calls


@pytest.mark.sim
def test_the_apply_of_a_fresh_plan_does_not_route_again(tiny_up, tmp_path, monkeypatch):
    path = tmp_path / "p.json"
    assert loom("plan", TINY, "--out", str(path))[0] == 2
    calls = _counting(monkeypatch)
    code, out = loom("apply", str(path))
    assert code == 0 and "applied and verified" in out, out
    assert calls == []
    code, out = loom("plan", TINY)
    assert code == 0 and "No changes" in out, out


@pytest.mark.sim
def test_a_plan_without_a_matching_record_is_routed_again(tiny_up, tmp_path, monkeypatch):
    """A plan made elsewhere (no record here), or before a record routing reads changed."""
    d = tiny_up
    path = tmp_path / "p.json"
    assert loom("plan", TINY, "--out", str(path))[0] == 2
    (d.dir / PLANNED).unlink()
    calls = _counting(monkeypatch)
    code, out = loom("apply", str(path))
    assert code == 0 and "applied and verified" in out, out
    assert calls == [1]
    assert loom("plan", TINY, "--out", str(path))[0] == 0
    (d.dir / "last-applied.key").write_text("another fabric's key\n")  # what routing starts from changed since
    code, out = loom("apply", str(path))
    assert code == 0 and calls == [1, 1], out
