"""The technician's change (issue 37): new leaves sit on top of their nodes, `node_groups[].racks`
says which racks a new group goes into, and the change has its own labels and marked sheets."""

from __future__ import annotations

import csv
import io
import re
import shutil
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric, lock_path
from loom.expand.churn import churn

TOPO = Path(__file__).parent.parent / "topology"
TINY, FF2 = TOPO / "tiny.yaml", TOPO / "fire-flyer-2.yaml"
runner = CliRunner()
Z2_TINY = "  - {name: z2, kind: fat-tree-2, switch_model: SW8, leaves: 2, spines: 1, leaf_down: 4, leaf_up: 4}\n"
Z1_FF2 = ("  - {name: z1, kind: fat-tree-2, switch_model: QM8700, leaves: 40, spines: 20, leaf_down: 20, leaf_up: 20, "
          "oversubscription: 1}\n")
Z2_FF2 = "  - {name: z2, kind: fat-tree-2, switch_model: QM8700, leaves: 2, spines: 1, leaf_down: 20, leaf_up: 20}\n"


def run(*args: str) -> tuple[int, str]:
    r = runner.invoke(app, list(args))
    assert "Traceback" not in r.output, r.output
    return r.exit_code, r.output


def grown(tmp_path: Path, base: Path, zone_after: str, zone: str, group: str, lock: bool = True) -> Path:
    """`base` with a new zone after `zone_after` and a new node group in it (with the base's lock)."""
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    text = base.read_text()
    assert zone_after in text
    text = text.replace(zone_after, zone_after + zone, 1).replace("node_groups:\n", f"node_groups:\n{group}\n", 1)
    head = tmp_path / base.name
    head.write_text(text)
    if lock:
        shutil.copy(lock_path(base), lock_path(head))
    return head


def assert_pure_growth(old, new) -> None:
    ch = churn(old, new)
    assert ch.devices_moved == [] and ch.lids_renumbered == [] and ch.ports_recabled == []
    assert {c.action for c in ch.cables} == {"add"}
    assert new.racks[:len(old.racks)] == old.racks
    units = [(d.rack, d.ru) for d in (*new.switches, *new.nodes)]
    assert len(units) == len(set(units))


def test_new_groups_leaves_sit_on_top_of_their_nodes_not_in_the_spine_rack(tmp_path):
    """Before: both new leaves went to A01 (the spine rack) and every host cable became a long run."""
    head = grown(tmp_path, TINY, "  - {name: z1, kind: fat-tree-2, switch_model: SW8, leaves: 4, spines: 2, leaf_down: 4, "
                 "leaf_up: 4}\n", Z2_TINY,
                 '  - {name: c2-, node_type: compute, role: compute, count: 6, zones: [z2], name_pattern: "z2-c{index:02d}"}')
    old, new = load_fabric(TINY), load_fabric(head)
    assert_pure_growth(old, new)
    spine_rack = next(s.rack for s in new.switches if s.name == "z2-spine0")
    for leaf in (s for s in new.switches if s.zone == "z2" and s.role == "leaf"):
        racks = {new.nodes[new.ports[int(a)].node].rack for a, b, k in zip(new.cables.a_dev, new.cables.b_dev, new.cables.a_kind)
                 if k == 1 and int(b) == leaf.index}
        assert leaf.rack in racks and leaf.rack != spine_rack
        assert leaf.ru > new.model.layout.rack_units - new.model.layout.leaf_units_per_node_rack
    code, out = run("cabling", "diff", str(TINY), str(head), "--format", "csv")
    host = [r for r in csv.DictReader(io.StringIO(out)) if "z2-c" in r["new_a"]]
    assert code == 0 and len(host) == 6 and all(" DAC " in r["new_cable"] for r in host)


def test_group_racks_put_nodes_and_their_leaves_in_the_named_racks(tmp_path):
    head = grown(tmp_path, FF2, Z1_FF2, Z2_FF2, '  - {name: h100, node_type: a100-pcie, role: compute, count: 12, '
                 'zones: [z2], name_pattern: "z2-h{index:03d}", racks: [H01, H02]}')
    old, new = load_fabric(FF2), load_fabric(head)
    assert_pure_growth(old, new)
    mine = [n for n in new.nodes if n.name.startswith("z2-h")]
    assert [n.rack for n in mine] == ["H01"] * 10 + ["H02"] * 2  # H01 filled first, below its leaf units
    assert {s.name: (s.rack, s.ru) for s in new.switches if s.zone == "z2" and s.role == "leaf"} == \
        {"z2-leaf0": ("H01", 42), "z2-leaf1": ("H01", 41)}
    assert "H01" in new.racks and "H02" in new.racks
    # recorded: the lock keeps them there, and the next load places nothing anew
    assert run("lock", str(head))[0] == 0 and run("lock", str(head), "--check")[0] == 0
    again = load_fabric(head)
    assert [(n.name, n.rack, n.ru) for n in again.nodes] == [(n.name, n.rack, n.ru) for n in new.nodes]


def test_fresh_layout_honours_group_racks(tmp_path):
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    model = tmp_path / "tiny.yaml"
    st = 'homing: dual, name_pattern: "st{index:02d}"}'
    model.write_text(TINY.read_text().replace(st, st[:-1] + ", racks: [A05]}"))
    f = load_fabric(model, None)
    assert {n.rack for n in f.nodes if n.role == "storage"} == {"A05"}
    assert "A05" not in {n.rack for n in f.nodes if n.role != "storage"} and f.racks[-1] == "A05"


@pytest.mark.parametrize("racks, message", [
    ("[A05, Q17]", "'Q17' is not a rack of the layout"),
    ("[A05, A05]", "rack A05 is listed twice"),
    ("[A05], count: 30", "30 nodes of 2 U do not fit in 1 rack(s) of 40 node units (20 at most)"),
    ("[A02]", "racks A02 have no 2 free units below the leaf units left for node"),  # full of compute already
    ("[ZZZZZZZZZZZZ01]", "beyond the 4096 racks a floor may have"),  # refused before a rack is added
], ids=["unknown", "twice", "capacity", "no room on the floor", "far away"])
def test_bad_group_racks_name_file_field_and_fix(tmp_path, racks, message):
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    model = tmp_path / "tiny.yaml"
    st = 'homing: dual, name_pattern: "st{index:02d}"}'
    text = TINY.read_text().replace(st, st[:-1] + f", racks: {racks}}}")
    model.write_text(text.replace("count: 4, zones: [z0, z1]", "zones: [z0, z1]") if "count" in racks else text)
    code, out = run("validate", str(model))
    assert code == 1 and message in out and str(model) in out and "node_groups[2].racks" in out and "fix:" in out


def test_change_only_labels_and_marked_sheets(tmp_path):
    head = grown(tmp_path, FF2, Z1_FF2, Z2_FF2, '  - {name: h100, node_type: a100-pcie, role: compute, count: 12, '
                 'zones: [z2], name_pattern: "z2-h{index:03d}", racks: [H01, H02]}')
    added = 12 + 2 * 20  # a cable per node, 20 up-links per leaf
    code, out = run("cabling", "diff", str(FF2), str(head), "--format", "labels")
    labels = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(labels) == 2 * added and all(r["cable_id"].startswith("z2-") for r in labels)
    assert max(len(r[f"line{i}"]) for r in labels for i in range(1, 5)) <= 25
    code, marked = run("cabling", "diff", str(FF2), str(head), "--format", "html")
    assert code == 0 and marked.count('<tr class="add">') == 2 * added and marked.count("<tr><td></td>") > 6000
    code, only = run("cabling", "diff", str(FF2), str(head), "--format", "html", "--only-changes")
    assert code == 0 and only.count('<tr class="add">') == 2 * added and "<tr><td></td>" not in only
    assert re.findall(r'<section class="rack" id="rack-(\w+)"', only) == ["A01", "H01", "H02"]
    assert only.count('class="new"') == 12 + 3  # nodes, leaves and the spine outlined NEW in the elevations
    xlsx = tmp_path / "change.xlsx"
    assert run("cabling", "diff", str(FF2), str(head), "--format", "xlsx", "--only-changes", "--out", str(xlsx))[0] == 0
    wb = load_workbook(xlsx)
    rows = [r for ws in wb.worksheets if ws.title.startswith("Row ") for r in ws.iter_rows(min_row=2, values_only=True)]
    assert len(rows) == added and {r[0] for r in rows} == {"add"} and wb["Removed"].max_row == 1
    assert wb.worksheets[0]["A2"].fill.fgColor.rgb.upper().endswith("D9F2D9")
    code, out = run("cabling", "diff", str(FF2), str(head), "--only-changes")
    assert code == 2 and "--only-changes" in out
