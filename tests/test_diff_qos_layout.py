"""`loom diff` names a QoS/VL layout change as a verdict of its own (issue 37): a change that
forces a second VL set for cross-zone traffic rewrote every port's SL2VL table and said nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.checks.qos_layout import changes
from loom.cli import app

TINY = Path(__file__).resolve().parent.parent / "topology" / "tiny.yaml"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """tiny with room for 8 VLs (base), and the same with its inter-zone links on two leaves per
    zone (head): cross-zone traffic then needs a second VL per class."""
    d = tmp_path_factory.mktemp("qos")
    text = TINY.read_text().replace("limits: {data_vls: 4}", "limits: {data_vls: 8}")
    split = text.replace("  - {count: 1, a: {zone: z0}, b: {zone: z1}}",
                         "  - {count: 2, a: {zone: z0, leaves: [2, 3]}, b: {zone: z1, leaves: [2, 3]}}")
    assert text != TINY.read_text() and split != text
    (d / "base.yaml").write_text(text)
    (d / "head.yaml").write_text(split)
    return d / "base.yaml", d / "head.yaml"


def diff(base: Path, head: Path, *fmt: str):
    r = CliRunner().invoke(app, ["diff", str(head), "--base-file", str(base), *fmt])
    assert "Traceback" not in r.output, r.output
    return r


def test_a_second_vl_set_is_a_verdict_of_its_own(pair):
    base, head = pair
    d = json.loads(diff(base, head, "--format", "json").stdout)
    lay = d["qos_layout"]
    assert (lay["base"]["vl_sets"], lay["head"]["vl_sets"]) == (1, 2)
    assert (lay["base"]["data_vls"], lay["head"]["data_vls"]) == (3, 6)
    assert any("second VL per class" in x for x in lay["changes"])
    assert any(x.startswith("SL2VL: 3 of 16") for x in lay["changes"])
    assert d["changed"] and not d["growth"]  # an added cable alone would read as pure growth
    text = diff(base, head).stdout
    assert "QoS/VL layout                  CHANGED: 3 classes, 3 data VLs -> 3 classes, 6 data VLs in 2 sets" in text
    assert text.rstrip().endswith("; QoS/VL layout changed")
    md = diff(base, head, "--format", "markdown").stdout
    assert "### QoS / VL layout" in md and "🔶 **changed**" in md


def test_the_same_layout_says_same(pair):
    base, _ = pair
    text = diff(base, base).stdout
    assert "QoS/VL layout                  same (3 classes, 3 data VLs)" in text
    assert "layout changed" not in text


def test_a_class_moving_vl_is_named():
    a = {"classes": {"bulk": {"sl": 1, "vl": 1}}, "data_vls": 2, "vl_sets": 1, "split": None, "sl2vl": [0, 1] + [0] * 14}
    b = {**a, "classes": {"bulk": {"sl": 1, "vl": 0}}, "data_vls": 1, "sl2vl": [0] * 16}
    assert changes(a, a) == []
    assert changes(a, b) == ["data VLs: 2 → 1 (every port's VLArb table changes)", "class bulk: SL1/VL1 → SL1/VL0",
                             "SL2VL: 1 of 16 SLs map to another VL (SL1 VL1→VL0)"]
