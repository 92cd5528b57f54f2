"""`loom discover`: the fabric as built against the model, in rack/RU/port terms (issue 17)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from loom.checks.cabling import compare
from loom.expand import load_fabric, lock_path
from loom.expand.live import TopologyError, parse_ibnetdiscover
from loom.fabrics.infiniband.sim import console

from .simfabric import TINY, TOPO, loom

SAVED = Path(__file__).parent / "facts" / "tiny.ibnetdiscover"  # ibnetdiscover on the tiny simulated fabric

MISWIRE = ['Unlink "z0-leaf1"[5]', 'Unlink "z0-leaf1"[6]',  # two cables swapped at the spine end
           'Link "z0-leaf1"[5] "z0-spine1"[3]', 'Link "z0-leaf1"[6] "z0-spine0"[3]',
           'Unlink "z0-leaf3"[8]',  # one missing
           'Link "z0-leaf2"[4] "z1-leaf2"[4]']  # one extra, between two ports the model leaves free


def as_found_on_the_floor(text: str) -> str:
    """The same fabric as real hardware shows it: vendor GUIDs, generic switch names, hosts named
    `<host> mlx5_<n>`; only the cabling says what is what."""
    text = re.sub(r"0002c902([0-9a-f]{8})", r"7cfe9003\1", text)
    text = re.sub(r"\(2c902([0-9a-f]{8})\)", r"(7cfe9003\1)", text)
    text = re.sub(r'# "z\d-(leaf|spine)\d"', '# "MF0;switch:MQM8700/U1"', text)
    text = re.sub(r"0002c901", "98039b03", text).replace("(2c901", "(98039b03")
    return re.sub(r'"(z\d-c\d\d|st\d\d|mgmt\d)-hca(\d)"', r'"\1 mlx5_\2"', text)


@pytest.mark.sim
def test_a_miswired_simulated_fabric_is_reported_exactly(tiny_up):
    code, out = loom("discover", TINY)
    assert code == 0 and "cabled as the model says — 60 cables checked, 39 devices" in out, out
    console(tiny_up.dir, MISWIRE)
    code, out = loom("discover", TINY, "--json")
    rep = json.loads(out)
    assert code == 1 and rep["counts"] == {"swapped": 2, "missing": 1, "extra": 1}, out
    by_id = {f["cable_id"]: f for f in rep["findings"]}
    assert by_id["z0-leaf1/5"]["action"] == "move the end at z0-spine1 port 3 (rack A01 U39) to z0-spine0 port 3 (rack A01 U40)"
    assert by_id["z0-leaf1/6"]["action"] == "move the end at z0-spine0 port 3 (rack A01 U40) to z0-spine1 port 3 (rack A01 U39)"
    assert by_id["z0-leaf3/8"]["action"] == "cable z0-leaf3 port 8 (rack A01 U41) to z0-spine1 port 8 (rack A01 U39)"
    assert by_id["z0-leaf2/4–z1-leaf2/4"]["kind"] == "extra"
    code, sheet = loom("discover", TINY, "--format", "csv")
    assert code == 1 and sheet.splitlines()[0].startswith("kind,cable_id,action,expected_rack")
    assert len(sheet.splitlines()) == 5


def test_real_guids_and_names_are_identified_by_their_place(tmp_path):
    f = load_fabric(TOPO / "tiny.yaml")
    floor = as_found_on_the_floor(SAVED.read_text())
    rep = compare(f, parse_ibnetdiscover(floor))
    assert rep.clean and len(rep.mapping) == 39, [x.what for x in rep.findings]
    assert rep.guids["z0-leaf0"] == 0x7CFE900300000001


def test_record_keeps_the_real_guids_in_the_lock_file(tmp_path):
    model = tmp_path / "tiny.yaml"
    shutil.copy(TOPO / "tiny.yaml", model)
    shutil.copy(lock_path(TOPO / "tiny.yaml"), lock_path(model))
    shutil.copytree(TOPO / "catalogue", tmp_path / "catalogue")
    saved = tmp_path / "floor.topo"
    saved.write_text(as_found_on_the_floor(SAVED.read_text()))
    code, out = loom("discover", str(model), "--topology", str(saved), "--record")
    assert code == 0 and "recorded 39 GUID(s)" in out, out  # 12 switches + 27 NIC ports
    f = load_fabric(model)
    assert f.switches[f.switch_index["z0-leaf0"]].guid == 0x7CFE900300000001
    assert next(p for p in f.ports if p.ca == "z0-c00-hca0").guid == 0x98039B0300000011
    code, out = loom("lock", str(model), "--check")
    assert code == 0, out
    code, out = loom("discover", str(model), "--topology", str(saved), "--record")
    assert code == 0 and "every GUID found is already recorded" in out, out


def test_slow_links_and_unknown_devices_are_reported():
    f = load_fabric(TOPO / "tiny.yaml")
    text = SAVED.read_text()
    # the leaf-spine cable z1-leaf0 port 5 (to z1-spine0 port 1) trained at EDR; both ends list it
    text = re.sub(r'(\[5\]\s+"S-0002c9020000000b"\[1\].*?)4xHDR', r"\g<1>4xEDR", text)
    text = re.sub(r'(\[1\]\s+"S-0002c90200000007"\[5\].*?)4xHDR', r"\g<1>4xEDR", text)
    text += ('\nCa\t1 "H-00000000deadbe00"\t\t# "intruder mlx5_0"\n'
             '[1](deadbe01) \t"S-0002c90200000003"[4]\t\t# lid 99 lmc 0 "z0-leaf2" lid 1026 4xHDR\n')
    rep = compare(f, parse_ibnetdiscover(text))
    kinds = rep.counts()
    assert kinds == {"speed": 1, "extra": 1, "unknown-device": 1}, [x.what for x in rep.findings]
    speed = next(x for x in rep.findings if x.kind == "speed")
    assert speed.cable_id == "z1-leaf0/5" and "4xEDR (100 Gb/s); the model has 200 Gb/s" in speed.what


def test_a_file_that_is_not_ibnetdiscover_output_is_refused(tmp_path):
    bad = tmp_path / "x.topo"
    bad.write_text("Switch 8 \"S-01\"\nhello world\n")
    with pytest.raises(TopologyError, match="line 2"):
        parse_ibnetdiscover(bad.read_text(), str(bad))
    code, out = loom("discover", TINY, "--topology", str(bad))
    assert code == 2 and "line 2: not an ibnetdiscover node or port line" in out, out
    code, out = loom("discover", TINY, "--format", "yaml")
    assert code == 2 and "must be text, json or csv" in out


def test_discover_without_a_running_fabric_says_how_to_start_it(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    code, out = loom("discover", TINY)
    assert code == 2 and "`loom sim up` starts it" in out and "ibsim.log" not in out, out  # no log to see yet


@pytest.mark.parametrize("text, words", [
    ("", "no node in it"),
    ("# only a comment\n", "no node in it"),
    ('Switch ' + "9" * 5000 + ' "S-01"\n', "line 1: not an ibnetdiscover node or port line"),
    ('Switch 8 "S-01"\n[' + "9" * 5000 + '] "S-02"[1]\n', "line 2: not an ibnetdiscover node or port line"),
    ('Switch 8 "S-01"\n[9] "S-02"[1]\n', "line 2: port 9 of a 8-port node"),
    ('Switch 8 "S-01"\n[1] "S-02"[1]\n\nSwitch 8 "S-01"\n[2] "S-02"[2]\n', "line 4: node GUID 0x0000000000000001 is listed again"),
])
def test_a_hostile_topology_file_is_refused_naming_the_line(tmp_path, text, words):
    """Issue 35: 5,000-digit port fields were a ValueError traceback, an empty file read as
    "every cable missing", duplicate GUIDs merged silently, ports beyond a node's count reported
    as miswiring."""
    bad = tmp_path / "x.topo"
    bad.write_text(text)
    code, out = loom("discover", TINY, "--topology", str(bad))
    assert code == 2 and words in out and "Traceback" not in out, out
