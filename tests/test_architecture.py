"""The shape of `loom/` (docs/architecture.md), checked on every run: the import graph has no
cycle, no module reaches for another's private names, stages import only downward, no file
grows past 600 lines, and the command line never decides the fabric's technology itself.

The graph is built here with `ast` (every import, module level or inside a function, since a
lazy import is still a dependency) and networkx (its strongly connected components are the cycles)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

LOOM = Path(__file__).resolve().parent.parent / "loom"

#: the layers from the bottom up: a module may import its own layer and those below it.  Utilities
#: first, then the stages in pipeline order (`loom/pipeline.py`); `checks` sit above `render`
#: because some of them verify rendered configurations; `inputs` reads the files users hand in.
LAYERS = ["process", "files", "progress", "forked", "model", "expand", "native", "routing", "qos", "host", "render", "inputs", "checks",
          "push", "netbox", "fabrics", "pipeline", "cli"]


def _modules() -> dict[str, Path]:
    mods = {}
    for path in LOOM.rglob("*.py"):
        parts = list(path.relative_to(LOOM.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _imports(mods: dict[str, Path]):
    """(importer, imported module, name) for every import of a Loom module by a Loom module."""
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods:
                        yield name, a.name, None
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    if f"{target}.{a.name}" in mods:
                        yield name, f"{target}.{a.name}", None
                    elif target in mods:
                        yield name, target, a.name


@pytest.fixture(scope="module")
def graph():
    mods = _modules()
    edges = list(_imports(mods))
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    g.add_edges_from((a, b) for a, b, _ in edges if a != b)
    return mods, edges, g


def test_no_import_cycle(graph):
    _, _, g = graph
    cycles = [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert cycles == [], cycles


def test_no_module_imports_a_private_name_of_another(graph):
    _, edges, _ = graph
    private = [(a, f"{b}.{n}") for a, b, n in edges if n and n.startswith("_") and a != b]
    assert private == [], private


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "loom"


def test_stages_import_only_downward(graph):
    _, _, g = graph
    upward = [(a, b) for a, b in g.edges if _layer(a) in LAYERS and _layer(b) in LAYERS
              and LAYERS.index(_layer(b)) > LAYERS.index(_layer(a))]
    assert upward == [], upward
    placed = {_layer(m) for m in g.nodes} - {"loom"}
    assert placed <= set(LAYERS), f"modules outside every layer: {placed - set(LAYERS)}; add them to LAYERS"


def test_the_model_imports_nothing_of_the_later_stages(graph):
    _, _, g = graph
    later = [(a, b) for a, b in g.edges if _layer(a) == "model" and _layer(b) not in ("model", "files", "progress")]
    assert later == [], later


def test_no_file_over_600_lines(graph):
    mods, _, _ = graph
    long = {str(p.relative_to(LOOM.parent)): n for p in mods.values() if (n := len(p.read_text().splitlines())) > 600}
    assert long == {}, long


def test_the_command_line_never_tests_the_technology():
    """Commands ask the fabric's backend (`loom.fabrics.backend_for`), chosen in one place."""
    pattern = re.compile(r'is_ethernet|technology\s*[!=]=|"ethernet"|"infiniband"|loom\.fabrics\.(infiniband|ethernet)')
    found = [f"{p.relative_to(LOOM.parent)}:{i}: {line.strip()}" for p in sorted((LOOM / "cli").glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == [], found


def test_a_planted_cycle_and_upward_import_are_caught(tmp_path, monkeypatch):
    """The checks above can fail: a copy of two modules importing each other, one of them a stage
    reaching up, is a cycle and an upward import to this graph."""
    pkg = tmp_path / "loom"
    (pkg / "model").mkdir(parents=True)
    (pkg / "cli").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model" / "__init__.py").write_text("")
    (pkg / "cli" / "__init__.py").write_text("")
    (pkg / "model" / "rules.py").write_text("from loom.cli.common import _fail\n")
    (pkg / "cli" / "common.py").write_text("from loom.model import rules\n\ndef _fail():\n    pass\n")
    monkeypatch.setitem(globals(), "LOOM", pkg)
    mods = _modules()
    edges = list(_imports(mods))
    g = nx.DiGraph((a, b) for a, b, _ in edges if a != b)
    assert [sorted(c) for c in nx.strongly_connected_components(g) if len(c) > 1] == [["loom.cli.common", "loom.model.rules"]]
    assert ("loom.model.rules", "loom.cli.common", "_fail") in edges
    assert ("loom.model.rules", "loom.cli.common") in [(a, b) for a, b in g.edges
                                                       if LAYERS.index(_layer(b)) > LAYERS.index(_layer(a))]


def test_starting_the_command_line_loads_no_numerical_library(tmp_path):
    """`loom --help` (and every command before it runs) imports the command modules only: numpy,
    scipy, networkx, pydantic and Rich load inside the commands that use them (issue 36: `--help`
    in ≤ 0.15 s of CPU, where Rich alone costs ~40 ms)."""
    import subprocess
    import sys

    heavy = ('numpy', 'scipy', 'networkx', 'pydantic', 'rich')
    code = ("import atexit, sys\n"
            f"atexit.register(lambda: print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr))\n"
            "sys.argv = ['loom', '--help']\n"
            "from loom.cli import main\n"
            "main()\n")
    # a cache of its own: a help kept from an earlier run would load nothing at all
    env = {**__import__("os").environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "Usage: loom" in r.stdout, r.stdout + r.stderr
    assert r.stderr.strip().splitlines()[-1] == "[]", r.stderr


def test_validate_loads_only_the_model_and_its_expansion(tmp_path):
    """`loom validate` (issue 36: ≤ 0.4 s of CPU) loads the model, its expansion and the cable
    catalogue, and nothing of routing, checks, rendering or pushing: no scipy, networkx or
    Jinja2.  It also runs numpy's BLAS on one thread (`loom.cli.main`): a second one only spins,
    ~40 ms of CPU per command on two cores."""
    import json
    import os
    import subprocess
    import sys

    code = ("import atexit, json, os, sys\n"
            "atexit.register(lambda: print(json.dumps({'modules': sorted(sys.modules), "
            "'threads': len(os.listdir('/proc/self/task'))}), file=sys.stderr))\n"
            "sys.argv = ['loom', 'validate', 'topology/tiny.yaml']\n"
            "from loom.cli import main\n"
            "main()\n")
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=LOOM.parent, env=env)
    assert r.returncode == 0 and "valid (tiny, infiniband)" in r.stdout, r.stdout + r.stderr
    seen = json.loads(r.stderr.strip().splitlines()[-1])
    heavy = [m for m in seen["modules"] if m.split(".")[0] in ("scipy", "networkx", "jinja2")
             or m.split(".")[:2] in (["loom", s] for s in ("routing", "checks", "push", "fabrics", "qos", "host"))
             or m.startswith("loom.render.") and m != "loom.render.cabling"]
    assert heavy == [], heavy
    assert "numpy" in seen["modules"] and seen["threads"] == 1, seen["threads"]
