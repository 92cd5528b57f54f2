"""`loom show MODEL` names the leaves with free node-facing ports, in text and JSON (issue 37:
it said "8 free ports" for the fabric but not where a technician can plug a new node)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from loom.cli import app
from loom.expand import SWITCH, load_fabric

TINY = Path(__file__).resolve().parent.parent / "topology" / "tiny.yaml"


def show(model: Path, *args: str):
    r = CliRunner().invoke(app, ["show", str(model), *args])
    assert r.exit_code == 0, r.output
    return r.stdout


def free_ports_by_set(model: Path) -> dict[str, int]:
    """The same figure counted another way: each leaf's node-facing port numbers minus the
    numbers a cable ends on."""
    f = load_fabric(model)
    down = {z.name: z.edge_down for z in f.model.zones}
    used: dict[int, set[int]] = {}
    c = f.cables
    for kind, dev, port in ((c.a_kind, c.a_dev, c.a_port), (c.b_kind, c.b_dev, c.b_port)):
        for k, d, p in zip(kind.tolist(), dev.tolist(), port.tolist()):
            if k == SWITCH:
                used.setdefault(d, set()).add(p)
    out = {}
    for i, s in enumerate(f.switches):
        if s.edge is not None:
            free = set(range(1, down[s.zone] + 1)) - used.get(i, set())
            if free:
                out[s.name] = len(free)
    return out


def test_free_ports_per_leaf_in_json_and_text(tmp_path):
    cap = json.loads(show(TINY, "--json"))["capacity"]
    assert cap["free_by_leaf"] == free_ports_by_set(TINY)
    assert sum(cap["free_by_leaf"].values()) == cap["free"] > 0
    text = show(TINY)
    assert f"free node-facing ports on {len(cap['free_by_leaf'])} leaves: " in text
    assert all(f"{leaf} {n}" in text for leaf, n in cap["free_by_leaf"].items())


def test_a_removed_node_frees_a_port_on_its_leaf(tmp_path):
    smaller = tmp_path / "tiny.yaml"
    text = TINY.read_text()
    assert "count: 9, zones: [z0]" in text
    smaller.write_text(text.replace("count: 9, zones: [z0]", "count: 8, zones: [z0]", 1))
    before = json.loads(show(TINY, "--json"))["capacity"]
    after = json.loads(show(smaller, "--json"))["capacity"]
    assert after["free"] == before["free"] + 1
    assert after["free_by_leaf"] == free_ports_by_set(smaller)
    assert sum(after["free_by_leaf"].values()) == after["free"]


def test_a_full_fabric_says_nothing_of_free_leaves():
    full = Path(__file__).resolve().parent.parent / "topology" / "roce-lab.yaml"
    cap = json.loads(show(full, "--json"))["capacity"]
    assert (cap["free"] == 0) is (cap["free_by_leaf"] == {})
    assert ("free node-facing ports on" in show(full)) is bool(cap["free_by_leaf"])
