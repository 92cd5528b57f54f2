"""`loom health` on the simulated tiny fabric (issue 39, step 3): errors that rise between the
two readings are reported and ticketed with the cable's ends and part; a counter reset by
another tool is not; a link brought up at the wrong width is degraded."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from loom.fabrics.infiniband import sim as simmod
from loom.fabrics.infiniband.sim import console
from loom.render.ibsim import ibsim_net

from .simfabric import TINY, TOPO, between_readings, loom

pytestmark = pytest.mark.sim


def test_rising_errors_are_failing_reported_and_ticketed(tiny_up, tmp_path, monkeypatch):
    d = tiny_up
    code, text = loom("health", TINY, "--interval", "0")
    assert code == 0 and "60 links read" in text and "60 healthy" in text, text
    between_readings(monkeypatch, lambda: console(d.dir, ['PerformanceSet "z0-leaf0"[5] PortCounters.SymbolErrorCounter=700',
                                                          'PerformanceSet "z0-leaf1"[5] PortCounters.PortRcvErrors=20']))
    code, text = loom("health", TINY, "--interval", "0.5", "--json")
    assert code == 1, text
    report = json.loads(text[text.index("{"):])
    assert report["verdict"] == "failing" and report["counts"]["failing"] == 1 and report["counts"]["degraded"] == 1
    failing = next(x for x in report["unhealthy"] if x["verdict"] == "failing")
    assert failing["cable"] == "z0-leaf0/5" and failing["ends"][0]["errors_per_hour"]["SymbolErrorCounter"] == 700
    # the ticket: the two unhealthy cables with both ends, part and what was seen
    between_readings(monkeypatch, lambda: console(d.dir, ['PerformanceSet "z0-leaf0"[5] PortCounters.SymbolErrorCounter=1500']))
    code, _ = loom("health", TINY, "--interval", "0.5", "--format", "csv", "--out", str(tmp_path / "ticket.csv"))
    assert code == 1
    rows = list(csv.DictReader(io.StringIO((tmp_path / "ticket.csv").read_text())))
    assert [r["cable_id"] for r in rows] == ["z0-leaf0/5"]  # z0-leaf1/5 stopped rising
    assert rows[0]["a_device"] == "z0-leaf0" and rows[0]["a_port"] == "5" and rows[0]["b_device"].startswith("z0-spine")
    assert rows[0]["part_number"] and rows[0]["length_m"] and "SymbolErrorCounter 800/h" in rows[0]["seen"]


def test_a_counter_reset_by_perfquery_R_is_not_an_error(tiny_up, monkeypatch):
    d = tiny_up
    console(d.dir, ['PerformanceSet "z0-leaf0"[5] PortCounters.SymbolErrorCounter=5000'])
    from .test_port_counters import perfquery

    reset = between_readings(monkeypatch, lambda: perfquery(d, "-R", "1024", "5"))
    code, text = loom("health", TINY, "--interval", "0.5")
    assert reset and code == 0 and "60 healthy" in text, text


@pytest.fixture
def narrow_link(monkeypatch):
    """ibsim brings z0-leaf0/5 up at 1x: both ends' lines in the net file say 1xHDR (with one
    end alone, ibsim renegotiates 4x when OpenSM sets the other end's enabled widths)."""
    def net(fabric, plane=0):
        text = ibsim_net(fabric, plane)
        lines = text.splitlines(keepends=True)
        start = lines.index('Switch 8 "z0-leaf0"\n')
        i = next(i for i in range(start, len(lines)) if lines[i].startswith("[5] "))
        far, port = re.match(r'\[5\] "([^"]+)"\[(\d+)\]', lines[i]).groups()
        j = next(j for j in range(lines.index(f'Switch 8 "{far}"\n'), len(lines)) if lines[j].startswith(f"[{port}] "))
        for k in (i, j):
            lines[k] = lines[k].replace("4xHDR", "1xHDR")
        return "".join(lines)

    monkeypatch.setattr(simmod, "ibsim_net", net)


def test_a_link_up_at_the_wrong_width_is_degraded(narrow_link, tiny_up):
    assert "1xHDR" in (tiny_up.dir / "fabric.net").read_text()
    code, text = loom("health", TINY, "--interval", "0")
    assert code == 1, text
    assert "degraded z0-leaf0/5: z0-leaf0/5 up at 1x HDR, cabled for 4x HDR; z0-spine" in text.replace("  ", " ")
    assert "59 healthy" in text


def test_health_of_an_ethernet_model_is_a_usage_error():
    code, text = loom("health", str(TOPO / "roce-lab.yaml"))
    assert code == 2 and "InfiniBand port counters" in text, text


def test_a_bad_format_is_a_usage_error():
    code, text = loom("health", TINY, "--format", "xml")
    assert code == 2 and "--format" in text


def test_a_ticket_needs_the_cabling_plan_and_says_so_before_reading(tmp_path):
    model = tmp_path / "tiny.yaml"
    model.write_text("".join(l for l in Path(TINY).read_text().splitlines(keepends=True)
                             if not l.startswith(("cabling:", "  site: lab", "  catalogue: catalogue"))))
    code, text = loom("health", str(model), "--format", "csv")  # no simulator runs: refused first
    assert code == 1 and "no `cabling:` section" in text and "fix:" in text, text
