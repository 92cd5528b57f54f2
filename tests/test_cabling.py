"""Cabling sheets for the technician: CSV, XLSX, HTML (rendered in headless Chromium), change sheets."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from pathlib import Path

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric

TOPO = Path(__file__).parent.parent / "topology"
FF2 = TOPO / "fire-flyer-2.yaml"
runner = CliRunner()


def cabling(*args: str) -> str:
    r = runner.invoke(app, ["cabling", *args])
    assert r.exit_code == 0, r.output
    return r.output


def test_csv_has_one_row_per_cable_and_is_byte_identical(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    cabling(str(FF2), "--format", "csv", "--out", str(a))
    cabling(str(FF2), "--format", "csv", "--out", str(b))
    assert a.read_bytes() == b.read_bytes()
    rows = list(csv.DictReader(io.StringIO(a.read_text())))
    fabric = load_fabric(FF2)
    assert len(rows) == len(fabric.cables) == 3188
    assert len({r["cable_id"] for r in rows}) == len(rows)  # IDs are unique
    host = [r for r in rows if r["kind"] == "host"]
    assert all(r["a_rack"] and r["b_rack"] and r["a_ru"] and r["part_number"] for r in rows)
    assert len(host) == 1584 and {r["media"] for r in rows} <= {"DAC", "AOC", "fiber"}
    # lengths are sold lengths that cover the measured run
    assert all(float(r["length_m"]) >= float(r["run_m"]) for r in rows)


def test_xlsx_sheets_per_row_and_bom_sums(tmp_path):
    out = tmp_path / "ff2.xlsx"
    cabling(str(FF2), "--format", "xlsx", "--out", str(out))
    wb = load_workbook(out)
    rows = [ws for ws in wb.worksheets if ws.title.startswith("Row ")]
    assert rows and all(ws.max_row > 1 for ws in rows)
    assert sum(ws.max_row - 1 for ws in rows) == 3188
    bom = wb["BOM"]
    header = [c.value for c in bom[1]]
    items = [dict(zip(header, [c.value for c in r])) for r in bom.iter_rows(min_row=2)]
    assert sum(i["count"] for i in items if i["item"] == "cable") == 3188
    fibre = sum(i["count"] for i in items if i["item"] == "cable" and i["media"] == "fiber")
    assert sum(i["count"] for i in items if i["item"] == "transceiver") == 2 * fibre
    # numbers as numbers, autofilter, print titles, widths; a bill of materials per rack
    ws = rows[0]
    header = [c.value for c in ws[1]]
    first = dict(zip(header, [c.value for c in ws[2]]))
    assert isinstance(first["a_ru"], int) and isinstance(first["length_m"], (int, float)) and isinstance(first["run_m"], float)
    assert ws.auto_filter.ref and ws.print_title_rows == "$1:$1" and ws.column_dimensions["B"].width > 20
    rack_bom = wb["Rack BOM"]
    assert sum(r[6].value for r in rack_bom.iter_rows(min_row=2) if r[1].value == "cable") == 3188


def test_labels_one_per_cable_end_fit_the_label(tmp_path):
    out = tmp_path / "labels.csv"
    cabling(str(FF2), "--format", "labels", "--out", str(out))
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 2 * 3188 and {r["end"] for r in rows} == {"A", "B"}
    lines = [r[f"line{i}"] for r in rows for i in range(1, 5)]
    assert max(len(x) for x in lines) <= 25
    a = next(r for r in rows if r["cable_id"] == "z0-leaf0/1" and r["end"] == "A")
    assert a["line1"] == "z0-leaf0/1" and "z0-c000" in a["line2"] and a["line3"].startswith("→ ") and "z0-leaf0" in a["line3"]


def test_html_renders_in_chromium_one_section_per_rack(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed — run `make setup`")
    html = tmp_path / "tiny.html"
    cabling(str(TOPO / "tiny.yaml"), "--format", "html", "--out", str(html))
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-1000:]
    fabric = load_fabric(TOPO / "tiny.yaml")
    racks_with_cables = {s.rack for s in fabric.switches} | {n.rack for n in fabric.nodes}
    assert dom.stdout.count('<section class="rack"') == len(racks_with_cables)
    assert dom.stdout.count('<svg xmlns="http://www.w3.org/2000/svg" class="elevation"') == len(racks_with_cables)
    for rack in racks_with_cables:
        assert f'id="rack-{rack}"' in dom.stdout and f'href="#rack-{rack}"' in dom.stdout
    # every device drawn once, at its RU; the fabric picture has a legend
    assert dom.stdout.count('<g class="device"') == len(fabric.switches) + len(fabric.nodes)
    leaf = next(s for s in fabric.switches if s.role == "leaf")
    assert f'<title>{leaf.name}: U{leaf.ru}' in dom.stdout
    assert '<g class="legend">' in dom.stdout and "inter-zone link" in dom.stdout
    png = tmp_path / "shot.png"
    shot = subprocess.run([*flags, f"--screenshot={png}", "--window-size=1200,1600", html.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and png.exists() and png.stat().st_size > 10_000


def test_moving_one_storage_node_changes_exactly_its_cables(tmp_path):
    moved = tmp_path / "moved.yaml"
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    old = 'homing: dual, name_pattern: "st{index:03d}"}'
    moved.write_text(FF2.read_text().replace(old, old[:-1] + ", pinned: {st000: [36, 36]}}"))
    out = cabling("diff", str(FF2), str(moved), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["action"], r["cable_id"]) for r in rows] == [("move", "z0-leaf36/20"), ("move", "z1-leaf36/20")]
    assert all("st000" in r["label"] for r in rows)
    assert rows[0]["from"].endswith("z0-leaf0 16") and rows[0]["to"].endswith("z0-leaf36 20")


def test_runs_longer_than_any_medium_are_refused(tmp_path):
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    far = tmp_path / "far.yaml"
    far.write_text(FF2.read_text().replace("leaf_units_per_node_rack: 2", "leaf_units_per_node_rack: 2\n  row_pitch_m: 40"))
    r = runner.invoke(app, ["cabling", str(far), "--format", "csv"])
    assert r.exit_code == 1 and "longer than any catalogue medium allows" in r.output and "Traceback" not in r.output


def test_model_without_cabling_section_is_refused():
    r = runner.invoke(app, ["cabling", str(TOPO / "c4-dualport.yaml")])
    assert r.exit_code == 1 and "cabling:" in r.output


def test_change_sheet_between_git_revisions(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(TOPO, repo / "topology")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    model = repo / "topology" / "fire-flyer-2.yaml"
    old = 'homing: dual, name_pattern: "st{index:03d}"}'
    model.write_text(model.read_text().replace(old, old[:-1] + ", pinned: {st002: [37, 37]}}"))
    out = cabling("diff", str(model), "--base", "HEAD", "--format", "text")
    assert "2 cabling change(s)" in out and out.count("MOVE") == 2 and "st002" in out


def test_one_grammar_sheet_and_diff_subcommands():
    """`loom cabling MODEL` is `loom cabling sheet MODEL` (options before or after the model);
    `diff` is a subcommand with its own formats; a format a command has not is a usage error."""
    tiny = str(TOPO / "tiny.yaml")
    assert cabling(tiny) == cabling("sheet", tiny) == cabling("--format", "csv", tiny)
    assert cabling("diff", tiny, tiny).strip() == "no cabling changes"
    for args in (("diff", tiny, tiny, "--format", "pdf"), ("sheet", tiny, "--format", "text"), ("diff", tiny),
                 (tiny, "--format", "xlsx")):
        r = runner.invoke(app, ["cabling", *args])
        assert r.exit_code == 2 and "Error:" in r.output and "Traceback" not in r.output, (args, r.output)


@pytest.mark.parametrize("catalogue, words", [
    ("catalogue/nope.yaml", "cannot read the cable catalogue"),
    ("../../etc/passwd", "outside the model's directory"),
])
def test_validate_refuses_what_loom_cabling_would(tmp_path, catalogue, words):
    """Issue 35: a `cabling:` naming a catalogue that is not there passed `loom validate`; only
    `loom cabling` refused it.  validate runs every whole-model rule a later command applies."""
    model = tmp_path / "tiny.yaml"
    model.write_text((Path(__file__).parent.parent / "topology" / "tiny.yaml").read_text()
                     .replace("catalogue: catalogue/nvidia-hdr.yaml", f"catalogue: {catalogue}"))
    r = CliRunner().invoke(app, ["validate", str(model)])
    assert r.exit_code == 1 and words in r.output and "valid (" not in r.output, r.output


@pytest.mark.parametrize("fmt", ["csv", "labels", "html", "xlsx", "text"])
def test_every_format_written_to_a_file_says_so(tmp_path, fmt):
    """`--out FILE`: the file holds the document and the command says what it wrote (it used to
    for xlsx alone, and was silent for the other formats)."""
    tiny = TOPO / "tiny.yaml"
    if fmt != "text":
        sheet = tmp_path / f"sheet.{fmt}"
        said = cabling("sheet", str(tiny), "--format", fmt, "--out", str(sheet))
        assert f"wrote {sheet} (" in said and "cables)" in said and sheet.stat().st_size > 0
    grown = tmp_path / "tiny.yaml"
    grown.write_text(tiny.read_text().replace("count: 9,", "count: 10,", 1))  # one node more
    change = tmp_path / f"change.{fmt}"
    said = cabling("diff", str(tiny), str(grown), "--format", fmt, "--out", str(change))
    assert f"wrote {change} (" in said and "change(s))" in said and change.stat().st_size > 0
