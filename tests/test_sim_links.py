"""Link events in the simulated fabric: `loom sim link down|up` through ibsim's console (issue 17)."""

from __future__ import annotations

import json
import subprocess

import pytest

from .simfabric import TINY, loom

pytestmark = pytest.mark.sim


def cabled(d, switch: str, port: int) -> bool:
    """Does ibnetdiscover (a real client of the simulated fabric) find a cable on switch:port?"""
    res = subprocess.run(["ibnetdiscover"], env=d.env(), capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    block = res.stdout.split(f'"{switch}"')[1].split("\n\n")[0]
    return any(line.startswith(f"[{port}]") for line in block.splitlines())


def test_pull_a_cable_and_put_it_back(tiny_up):
    d = tiny_up
    assert cabled(d, "z0-leaf0", 5)
    code, out = loom("sim", "link", "down", TINY, "z0-leaf0:5")
    assert code == 0 and "link down: z0-leaf0/5" in out, out
    assert not cabled(d, "z0-leaf0", 5) and cabled(d, "z0-leaf0", 7)
    code, out = loom("sim", "status", TINY, "--json")
    assert json.loads(out[out.index("{"):])["links_down"] == ["z0-leaf0/5"]
    code, out = loom("sim", "link", "down", TINY, "z0-spine0:1", "z0-leaf0")  # the same cable from its far end
    assert code == 0 and "already down" in out, out
    code, out = loom("plan", TINY)  # never "No changes" over a pulled cable: it is named and routed around
    assert code == 2 and "observed: z0-leaf0/5" in out, out
    plan = json.loads((d.dir / "last-plan.json").read_text())
    assert plan["as_built"]["cables_down"] == ["z0-leaf0/5"]
    assert all(port != 5 for _, port in plan["desired_lfts"]["z0-leaf0"]["rows"])  # nothing leaves by the pulled cable
    code, out = loom("sim", "link", "up", TINY, "z0-leaf0/5")
    assert code == 0 and "link up: z0-leaf0/5" in out, out
    assert cabled(d, "z0-leaf0", 5)
    assert loom("plan", TINY)[0] in (0, 2)
    events = [json.loads(l)["event"] for l in (d.dir / "audit.log").read_text().splitlines()]
    assert events[-2:] == ["sim link down", "sim link up"]


def test_a_switch_down_pulls_all_its_cables(tiny_up):
    code, out = loom("sim", "link", "down", TINY, "z0-spine1")
    assert code == 0 and out.count("/") == 8, out  # four leaves × two links
    assert not cabled(tiny_up, "z0-leaf2", 6) and not cabled(tiny_up, "z0-leaf2", 8)


@pytest.mark.parametrize("args, words", [
    (["z0-leaf0", "z0-spine0"], "share 2 cables (ports 5, 7 of z0-leaf0); name one as z0-leaf0:PORT"),
    (["z0-leaf0:5", "z0-spine1"], "is cabled to z0-spine0:1, not z0-spine1"),
    (["z0-leaf9:1"], "no switch or NIC named `z0-leaf9`"),
])
def test_bad_link_names_are_refused_before_touching_the_fabric(args, words, tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    code, out = loom("sim", "link", "down", TINY, *args)
    assert code == 2 and words in out, out


def test_link_events_need_a_running_fabric(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_STATE_DIR", str(tmp_path / "state"))
    code, out = loom("sim", "link", "down", TINY, "z0-leaf0:5")
    assert code == 1 and f"is not running (no state in {tmp_path / 'state' / 'tiny'}" in out and "`loom sim up" in out, out
