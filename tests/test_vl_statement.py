"""`loom check` says once, consistently, why traffic is split over two VL sets and what the
routing does on one VL (issue 37: it said both "one VL could not stay loop-free" and "on one
VL the routing would be free of credit loops")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from loom.render.check_report import print_check, vl_split

GOLDEN = Path(__file__).resolve().parent / "golden" / "check--tiny.json"


def _printed(**overrides) -> str:
    p = {**json.loads(GOLDEN.read_text()), **overrides}
    console = Console(record=True, width=400)
    print_check(console, "tiny", p)
    return console.export_text()


@pytest.mark.parametrize("kind", ["cross_zone_vls", "part_vls"])
@pytest.mark.parametrize("single", [True, False], ids=["free-on-one-vl", "loop-on-one-vl"])
def test_one_statement_about_one_vl(kind, single):
    text = _printed(**{kind: True, "deadlock_free_single_vl": single})
    said = [line for line in text.splitlines() if "single VL" in line or "one VL" in line]
    assert len(said) == 1, said  # the split's reason and the measurement, together, once
    assert "could not stay loop-free" not in text and "would be free of credit loops" not in text
    assert ("happen to close none" in said[0]) is single
    assert ("would close one" in said[0]) is (not single)


def test_without_a_split_the_qos_line_keeps_the_measurement():
    assert vl_split({"deadlock_free_single_vl": True}) is None
    text = _printed(cross_zone_vls=False, part_vls=False, deadlock_free_single_vl=True)
    assert "on one VL the routing would be free of credit loops" in text
