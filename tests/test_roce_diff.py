"""`loom diff` on Ethernet planes: verdicts evaluated, routes and switch configuration lines
changed per switch, in RoCE words."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app

TOPO = Path(__file__).parent.parent / "topology"
runner = CliRunner()


def shrink(tmp_path: Path, name: str, old: str, new: str) -> tuple[Path, Path]:
    """The model with its lock file as base, and a head without one node group's last nodes."""
    base = tmp_path / f"{name}.yaml"
    shutil.copy(TOPO / f"{name}.yaml", base)
    shutil.copy(TOPO / f"{name}.lock.json", tmp_path / f"{name}.lock.json")
    head = tmp_path / "head" / f"{name}.yaml"
    head.parent.mkdir()
    text = base.read_text()
    assert old in text
    head.write_text(text.replace(old, new))
    return base, head


def diff(base: Path, head: Path, fmt: str = "json"):
    return runner.invoke(app, ["diff", str(base), "--base-file", str(base), "--head-file", str(head), "--format", fmt])


def check_shrink(d: dict, nics_removed: int) -> None:
    assert d["technology"] == "ethernet"
    assert all(v is True for v in d["head"]["verdicts"].values()), d["head"]["verdicts"]  # evaluated, none "n/a"
    assert d["changed"] and not d["growth"] and not d["regressions"]
    assert len(d["routing"]["destinations_removed"]) == nics_removed
    assert d["routing"]["entries_removed"] > 0
    assert d["configs"]["lines_changed"] > 0 and d["configs"]["per_switch"]


def test_shrinking_an_ethernet_fabric_is_a_change_with_routes_removed(tmp_path):
    base, head = shrink(tmp_path, "c4-dualport", "count: 32", "count: 28")
    r = diff(base, head)
    assert r.exit_code == 0, r.output[-2000:]
    check_shrink(json.loads(r.output), 4 * 8)  # 4 nodes × 8 dual-port NICs
    text = diff(base, head, "text").output
    assert "verdict: change, no regression" in text and "routes changed" in text and "switch configuration" in text
    assert "LFT" not in text and "n/a" not in text
    md = diff(base, head, "markdown").output
    assert "🔶 change, no regression" in md and "| PFC deadlock free | ✅ | ✅ |" in md and "### Switch configuration" in md
    same = json.loads(diff(base, base).output)
    assert not same["changed"] and same["configs"]["lines_changed"] == 0


@pytest.mark.slow
def test_shrinking_roce_4plane_by_96_nodes_is_reported(tmp_path):
    base, head = shrink(tmp_path, "roce-4plane", "count: 4096", "count: 4000")
    r = diff(base, head)
    assert r.exit_code == 0, r.output[-2000:]
    d = json.loads(r.output)
    check_shrink(d, 96 * 8)
    # each removed node's leaves lose its host /31s from their BGP origination and port tables
    assert all(n.startswith("p") for n in d["configs"]["per_switch"])
