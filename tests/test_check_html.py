"""`loom check --format html`: the fabric drawn with each link coloured by its load against its
bound, links down and drained marked, a histogram per level — rendered in headless Chromium."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.render.check_html import DOWN, DRAINED, OVER

TOPO = Path(__file__).parent.parent / "topology"
TINY = TOPO / "tiny.yaml"
runner = CliRunner()


def _link(html: str, cable: str) -> str:
    """The SVG element drawing `cable` (a line, or an inter-zone arc)."""
    found = re.findall(rf'<(?:line|path)[^>]*data-cable="{re.escape(cable)}"[^>]*>', html)
    assert len(found) == 1, f"{cable}: {found}"
    return found[0]


def _overloaded_dump(tmp_path: Path) -> Path:
    """tiny's own tables with every destination z0-leaf0 sends up routed out of port 5 (legal:
    up, then down; 4 up-ports share what one carries now)."""
    r = runner.invoke(app, ["route", str(TINY), "--out", str(tmp_path / "r")])
    assert r.exit_code == 0, r.output
    lines, mine = [], False
    for line in (tmp_path / "r" / "lfts.dump").read_text().splitlines():
        if line.startswith("Unicast"):
            mine = "'z0-leaf0'" in line
        elif mine and re.match(r"0x[0-9a-f]+ 00[5-8] ", line):
            line = line[:7] + "005" + line[10:]
        lines.append(line)
    out = tmp_path / "overloaded.dump"
    out.write_text("\n".join(lines) + "\n")
    return out


def test_planted_overload_is_red_in_chromium(tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.fail("chromium is not installed — run `make setup`")
    r = runner.invoke(app, ["check", str(TINY), "--lfts", str(_overloaded_dump(tmp_path)), "--format", "html",
                            "--ebb-samples", "0"])
    assert r.exit_code == 1, r.output  # over its bound: the check fails, the page says so
    html = tmp_path / "check.html"
    html.write_text(r.output)
    flags = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", html.as_uri()], capture_output=True, text=True, timeout=120).stdout
    assert '<span id="verdict" class="fail">FAIL</span>' in dom
    assert f'stroke="{OVER}"' in _link(dom, "z0-leaf0/5")
    for port in (6, 7, 8):  # the other up-ports carry nothing now
        assert f'stroke="{OVER}"' not in _link(dom, f"z0-leaf0/{port}")
    assert sum(f'stroke="{OVER}"' in _link(dom, f"z1-leaf{k}/{p}") for k in range(4) for p in (5, 6, 7, 8)) == 0
    # the table of links over bound names it, the leaf_up histogram has an "over" bar
    assert re.search(r"<td>z0-leaf0/5</td><td>leaf_up</td>", dom)
    over_bar = re.search(r'data-level="leaf_up".*?class="bar over" data-count="(\d+)"', dom)
    assert over_bar and int(over_bar.group(1)) >= 1
    png = tmp_path / "shot.png"
    shot = subprocess.run([*flags, f"--screenshot={png}", "--window-size=1200,1000", html.as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and png.stat().st_size > 10_000


def test_intact_fabric_has_no_red_link():
    r = runner.invoke(app, ["check", str(TINY), "--format", "html", "--ebb-samples", "0"])
    assert r.exit_code == 0, r.output
    assert f'stroke="{OVER}"' not in r.output.split('<g class="legend">')[0]
    assert '<span id="verdict" class="pass">pass</span>' in r.output
    assert len(re.findall(r'data-cable="[^"]+"', r.output)) == 4 * 2 * 4 + 1  # leaf up-links and the inter-zone link


def test_down_and_drained_links_are_marked(tmp_path, monkeypatch):
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    model = tmp_path / "tiny.yaml"
    zone = "leaf_down: 4, leaf_up: 4}"
    model.write_text(TINY.read_text().replace(zone, zone[:-1] + ", missing_links: [{leaf: 1, up_port: 0}]}", 1))
    state = tmp_path / "state"
    monkeypatch.setenv("LOOM_STATE_DIR", str(state))
    (state / "tiny").mkdir(parents=True)
    (state / "tiny" / "watch.drained.json").write_text(json.dumps({"drained": {"z0-leaf2/6": {"seen": ["symbol errors 120/h"]}}}))
    r = runner.invoke(app, ["check", str(model), "--format", "html", "--ebb-samples", "0"])
    html = r.output
    down, drained = _link(html, "z0-leaf1/5"), _link(html, "z0-leaf2/6")
    assert f'stroke="{DOWN[0]}"' in down and f'stroke-dasharray="{DOWN[1]}"' in down
    assert f'stroke="{DRAINED[0]}"' in drained and f'stroke-dasharray="{DRAINED[1]}"' in drained
    assert "<td>z0-leaf1/5</td><td>model</td>" in html
    assert "<td>z0-leaf2/6</td><td>symbol errors 120/h</td>" in html
    # the ssh target's watcher drained nothing: only the declared link is marked
    r = runner.invoke(app, ["check", str(model), "--format", "html", "--ebb-samples", "0", "--target", "ssh"])
    assert f'stroke="{DRAINED[0]}"' not in _link(r.output, "z0-leaf2/6")
