"""Reports never print Python's `None`: a fabric without storage nodes has no storage balance,
and the plan and the diff leave that figure out (or show "—") instead (issue 37)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from loom.cli import app

from loom.render.plan_report import print_lft_plan

ROOT = Path(__file__).resolve().parent.parent


def _plan(storage_before, storage_after) -> dict:
    return {"fabric": "lab", "drift": None, "qos": {"intent": False, "conf_changes": [], "ports_differing": 0, "examples": []},
            "changes": {"entries_changed": 3, "switches_touched": 1, "per_switch": {"z0-leaf0": 3},
                        "destinations_moved": [{"lid": 5, "name": "gpu001"}], "destinations_added": []},
            "balance_before": {"max_dest_per_up_port": 2, "lower_bound": 2, "storage": storage_before},
            "balance_after": {"max_dest_per_up_port": 2, "lower_bound": 2, "storage": storage_after}}


def _printed(plan: dict) -> str:
    console = Console(record=True, width=200)
    print_lft_plan(console, plan, Path("plan.json"), changed=True)
    return console.export_text()


def test_a_plan_without_storage_nodes_says_nothing_of_storage():
    text = _printed(_plan(None, None))
    assert "None" not in text
    assert "storage" not in text
    assert "before 2/2, after 2/2" in text


def test_a_plan_that_adds_storage_says_so():
    text = _printed(_plan(None, 1))
    assert "None" not in text
    assert "storage before none, after 1" in text


def test_a_diff_without_storage_nodes_prints_no_none():
    """rail-optimised.yaml has no storage nodes (its storage figure was printed `None`)."""
    model = str(ROOT / "topology" / "rail-optimised.yaml")
    r = CliRunner().invoke(app, ["diff", model, "--base-file", model, "--format", "markdown"])
    assert r.exit_code == 0, r.output
    assert "| eBB |" in r.stdout
    assert "None" not in r.stdout and "storage" not in r.stdout
