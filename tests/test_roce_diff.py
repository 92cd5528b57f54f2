"""`loom diff` on Ethernet planes: verdicts evaluated, routes and switch configuration lines
changed per switch, in RoCE words."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric
from loom.render import roce_diff
from loom.routing import route
from loom.routing.subnet import TO_SWITCH

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


def routed(path: Path):
    f = load_fabric(path)
    return f, route(f)


def count_renders(monkeypatch) -> list[str]:
    """The names of the switches `config_changes` renders, one entry per side rendered."""
    rendered: list[str] = []
    real = roce_diff.render_switch

    def counting(inputs):
        rendered.append(inputs[0][2]["name"])
        return real(inputs)

    monkeypatch.setattr(roce_diff, "render_switch", counting)
    return rendered


# loopback: in frr.conf and config_db.json; model: only in config_db.json's DEVICE_METADATA
@pytest.mark.parametrize("field, value", [("loopback", "172.31.255.254"), ("model", "OTHER-SKU")])
def test_a_change_to_one_switch_renders_and_reports_only_that_switch(monkeypatch, field, value):
    base, base_tables = routed(TOPO / "c4-dualport.yaml")
    head, head_tables = routed(TOPO / "c4-dualport.yaml")
    k = len(head.switches) // 2
    head.model.switch_models["OTHER-SKU"] = head.model.switch_models[head.switches[k].model]  # the same hardware, renamed
    switches = list(head.switches)
    switches[k] = dataclasses.replace(switches[k], **{field: value})
    object.__setattr__(head, "switches", tuple(switches))  # a frozen Fabric: the one switch edited in place
    name = head.switches[k].name
    rendered = count_renders(monkeypatch)
    d = roce_diff.config_changes(base, base_tables, head, head_tables)
    assert list(d["per_switch"]) == [name] and d["per_switch"][name]["added"] == d["per_switch"][name]["removed"] > 0
    assert rendered == [name, name]  # both sides of the changed switch, none of the others
    rendered.clear()
    assert roce_diff.config_changes(base, base_tables, base, base_tables)["lines_changed"] == 0 and rendered == []


def test_a_static_route_moved_on_one_switch_is_reported(tmp_path, monkeypatch):
    model = tmp_path / "static.yaml"
    model.write_text((TOPO / "roce-lab.yaml").read_text().replace("routing: bgp", "routing: static"))
    base, base_tables = routed(model)
    head, head_tables = routed(model)
    t = head_tables[0]
    row = next(r for r in range(t.subnet.n) if head.switches[int(t.subnet.switches[r])].role == "leaf")
    up = [p for p in range(t.lft.shape[1]) if p < t.subnet.peer_kind.shape[1] and t.subnet.peer_kind[row, p] == TO_SWITCH]
    lid = next(x for x in range(1, t.lft.shape[1]) if int(t.lft[row, x]) in up)
    t.lft[row, lid] = next(p for p in up if p != int(t.lft[row, lid]))  # the route now leaves by another up-link
    name = head.switches[int(t.subnet.switches[row])].name
    rendered = count_renders(monkeypatch)
    d = roce_diff.config_changes(base, base_tables, head, head_tables)
    assert d["per_switch"] == {name: {"added": 1, "removed": 1}}
    assert rendered == [name, name]
