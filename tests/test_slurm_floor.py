"""`loom slurm` beyond the tree: nodes.conf (`NodeName=` lines from the node types) loaded by a
real slurmctld, and `--from-discover` — the tree drawn from an `ibnetdiscover` dump of the fabric
as cabled (tests/facts/tiny.ibnetdiscover, taken on the simulated tiny fabric), identical to the
model's when the floor matches it, and following the floor where it differs (a node on another
leaf, a leaf without uplinks, a node unplugged, a host the model does not have)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.model.hostlist import expand

from . import slurmctld
from .test_discover import SAVED, as_found_on_the_floor
from .test_slurm import _scontrol_switches

TINY = Path(__file__).parent.parent / "topology/tiny.yaml"
runner = CliRunner()


def slurm(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    out = tmp_path / "slurm"
    r = runner.invoke(app, ["slurm", str(TINY), "--out", str(out), *args])
    assert "Traceback" not in r.output, r.output
    return r.exit_code, r.output, out


def _far_end(line: str) -> str:
    return line[line.index('"'):]


def moved_cables(text: str) -> str:
    """The dump with z0-c00 and z0-c01 swapped at the leaf end (c00 now on z0-leaf1, c01 on z0-leaf0),
    z1-leaf2's four uplinks unplugged, z0-c02 unplugged, and a host the model does not have on
    z0-leaf2's free port 4."""
    lines = text.splitlines()
    at = {k: next(i for i, l in enumerate(lines) if l.startswith("[1]") and f'# "{k}-hca0" lid' in l) for k in ("z0-c00", "z0-c01")}
    ca = {k: next(i for i, l in enumerate(lines) if l.startswith("Ca") and f'"{k}-hca0"' in l) + 1 for k in ("z0-c00", "z0-c01")}
    for pair in (at, ca):
        a, b = pair["z0-c00"], pair["z0-c01"]
        ea, eb = _far_end(lines[a]), _far_end(lines[b])
        lines[a], lines[b] = lines[a].replace(ea, eb), lines[b].replace(eb, ea)
    leaf = "S-0002c90200000009"  # z1-leaf2
    out, node = [], ""
    skip_next = False
    for line in lines:
        if skip_next:
            skip_next = False
            continue
        if line.startswith(("Switch", "Ca")):
            node = line
            if '"z0-c02-hca0"' in line:
                skip_next = True  # its one port line
                continue
        port = re.match(r"^\[(\d+)\]", line)
        if port and leaf in node and int(port.group(1)) >= 5:
            continue
        if re.search(rf'"{leaf}"\[[5-8]\]', line) or '# "z0-c02-hca0" lid' in line:
            continue
        out.append(line)
        if port and '"z0-leaf2" base' in node and port.group(1) == "3":
            out.append('[4]\t"H-00aa000000000010"[1](aa000000000011) \t\t# "newhost mlx5_0" lid 99 4xHDR')
    out += ["", 'Ca\t1 "H-00aa000000000010"\t\t# "newhost mlx5_0"',
            '[1](aa000000000011) \t"S-0002c90200000003"[4]\t\t# lid 99 lmc 0 "z0-leaf2" lid 1026 4xHDR', ""]
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("floor", [False, True])
def test_the_floor_as_planned_gives_the_model_tree(tmp_path, floor):
    """As the simulator names things, and as real hardware does (vendor GUIDs, `host mlx5_0`,
    switches all named alike): identified as `loom discover` identifies them."""
    dump = tmp_path / "fabric.topo"
    dump.write_text(as_found_on_the_floor(SAVED.read_text()) if floor else SAVED.read_text())
    code, said, found = slurm(tmp_path / "found", "--from-discover", str(dump))
    assert code == 0 and "has every scheduled node where the model has it" in said, said
    code, _, model = slurm(tmp_path / "model")
    assert code == 0
    for name in ("topology.conf", "topology.yaml", "nodes.conf"):
        a, b = (d.joinpath(name).read_text().splitlines() for d in (found, model))
        assert [l for l in a if not l.startswith("#")] == [l for l in b if not l.startswith("#")], name
    assert f"from the fabric as found ({dump})" in (found / "topology.conf").read_text()


def test_the_tree_follows_the_floor_and_slurmctld_loads_it_with_the_nodes(tmp_path):
    if slurmctld.missing():
        pytest.fail(f"Slurm missing: {slurmctld.missing()} — run `make setup`")
    dump = tmp_path / "fabric.topo"
    dump.write_text(moved_cables(SAVED.read_text()))
    code, said, out = slurm(tmp_path, "--from-discover", str(dump))
    assert code == 0, said
    assert "2 node(s) under other leaves than the model says: z0-c00 under z0-leaf1 (the model: z0-leaf0); " \
           "z0-c01 under z0-leaf0 (the model: z0-leaf1)" in said, said
    assert "1 scheduled node(s) not found" in said and "z0-c02" in said, said
    assert "1 host(s) found that the model does not have: left out: newhost mlx5_0" in said, said
    assert "1 leaf switch(es) with no link up into their zone: under the root on their own: z1-leaf2" in said, said
    nodes = (out / "nodes.conf").read_text()
    assert "NodeName=z0-c[00-08],z1-c[00-08] CPUs=16 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=1 " \
           "Gres=gpu:2 Feature=compute State=UNKNOWN" in nodes
    # the harness gives every node NodeAddr=127.0.0.1 (no DNS here): one line per node, the rest Loom's
    per_node = []
    for line in nodes.splitlines():
        if line.startswith("NodeName="):
            names, rest = line.split(" ", 1)
            per_node += [f"NodeName={n} NodeAddr=127.0.0.1 {rest}" for n in expand(names.split("=", 1)[1])]
    # the recipe (docs/slurm.md): slurmctld runs on the model's tree; the floor's replaces it, `scontrol reconfigure`
    assert slurm(tmp_path / "model")[0] == 0
    ctld = tmp_path / "ctld"
    with slurmctld.slurmctld(ctld, [], (tmp_path / "model/slurm/topology.conf").read_text(),
                             includes={"gres-types.conf": "GresTypes=gpu\n", "nodes.conf": "\n".join(per_node) + "\n"}) as sc:
        before = _scontrol_switches(sc("show", "topology").stdout)
        (ctld / "topology.conf").write_text((out / "topology.conf").read_text())
        assert sc("reconfigure").returncode == 0
        shown, node = sc("show", "topology"), sc("show", "node", "z0-c03")
    assert shown.returncode == 0 and node.returncode == 0, shown.stderr + node.stderr
    assert sorted(expand(before["z0-leaf0"]["Nodes"])) == ["z0-c00", "z0-c04", "z0-c08"]
    got = _scontrol_switches(shown.stdout)
    assert sorted(expand(got["z0-leaf1"]["Nodes"])) == ["z0-c00", "z0-c05"]
    assert sorted(expand(got["z0-leaf0"]["Nodes"])) == ["z0-c01", "z0-c04", "z0-c08"]
    assert sorted(expand(got["z0-leaf2"]["Nodes"])) == ["z0-c06"]  # z0-c02 unplugged
    assert "z1-leaf2" not in expand(got["z1"]["Switches"]) and "z1-leaf2" in expand(got["tiny"]["Switches"])
    for field in ("CPUTot=16", "Sockets=2", "CoresPerSocket=8", "ThreadsPerCore=1", "Gres=gpu:2", "AvailableFeatures=compute"):
        assert field in node.stdout, (field, node.stdout)
