"""One safe-name grammar: `../`, newlines and `$()` planted in every name field of the reference
models are refused at load, so none reaches a file name, a config line or a script; and every
output path is resolved under the output directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric
from loom.model import ModelError
from loom.model.names import PathEscape, inside, name_problem, pattern_problem
from loom.model.reading import load_yaml

TOPOLOGY = Path(__file__).parent.parent / "topology"
PLANTS = ["../x", "a\nb", "$(id)"]
#: Free text that never reaches a file, path, config or script, and the catalogue's path (a path,
#: not a name: confined to the model's directory, see tests/hostile/catalogue-outside.yaml).
FREE_TEXT = {("description",), ("cabling", "catalogue")}


def _fields(doc, prefix=()):
    """Every string value and every mapping key that names something (under the named mappings)."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if prefix in (("switch_models",), ("node_types",)) or (len(prefix) == 3 and prefix[-1] == "pinned"):
                yield prefix + (k,), "key"
            yield from _fields(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _fields(v, prefix + (i,))
    elif isinstance(doc, str) and prefix not in FREE_TEXT:
        yield prefix, "value"


def _plant(doc, path, how, plant):
    import copy

    doc = copy.deepcopy(doc)
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if how == "key":
        parent[path[-1].replace(path[-1], path[-1] + plant)] = parent.pop(path[-1])
    else:
        parent[path[-1]] = plant if "pattern" not in str(path[-1]) and "naming" not in path else parent[path[-1]] + plant
    return doc


CASES = [(model, path, how) for model in ("tiny", "c4-dualport")
         for path, how in _fields(load_yaml(TOPOLOGY / f"{model}.yaml"))]


def test_every_name_field_is_covered():
    fields = {".".join(str(p) for p in path if not isinstance(p, int)) for _, path, _ in CASES}
    for must in ("name", "zones.name", "node_groups.name", "node_groups.name_pattern", "node_types.compute", "switch_models.SW8",
                 "node_types.compute.nics.name", "qos.classes.env_sl", "cabling.site", "subnet_manager"):
        assert must in fields, must
    assert len(CASES) > 100


@pytest.mark.parametrize("model,path,how", CASES, ids=lambda v: v if isinstance(v, str) else ".".join(map(str, v)))
def test_planted_name_is_refused(tmp_path, model, path, how):
    import yaml

    doc = load_yaml(TOPOLOGY / f"{model}.yaml")
    for plant in PLANTS:
        file = tmp_path / f"{model}.yaml"
        file.write_text(yaml.safe_dump(_plant(doc, path, how, plant), sort_keys=False, allow_unicode=True))
        with pytest.raises(ModelError):
            load_fabric(file)  # what every command (validate included) calls


@pytest.mark.parametrize("name,ok", [("z0-leaf1", True), ("mlx5_0", True), ("a.b", True), ("..", False), ("a..b", False),
                                     ("../x", False), ("/x", False), ("a b", False), ("a\nb", False), ("$(x)", False),
                                     ("[b]", False), ("-x", False), ("x" * 63, True), ("x" * 64, False), ("é", False)])
def test_name_grammar(name, ok):
    assert (name_problem(name) is None) == ok


@pytest.mark.parametrize("pattern,ok", [("{group}{index:04d}", True), ("{zone}-c{index:02d}", True), ("{index.real}", False),
                                        ("{group.__class__}", False), ("{index[0]}", False), ("{index!r}", False),
                                        ("{index:99d}", False), ("{index:>10}", False), ("{other}", False), ("{", False),
                                        ("{zone:02d}", False)])
def test_pattern_grammar(pattern, ok):
    assert (pattern_problem(pattern, {"group": "g", "index": 0, "zone": "z"}) is None) == ok


def test_inside(tmp_path):
    assert inside(tmp_path, "hosts/a/b.conf") == tmp_path.resolve() / "hosts/a/b.conf"
    for rel in ("../x", "/etc/passwd", "hosts/../../x"):
        with pytest.raises(PathEscape):
            inside(tmp_path, rel)


def test_configs_and_inventory_stay_in_the_output_directory(tmp_path):
    runner = CliRunner()
    out = tmp_path / "out"
    assert runner.invoke(app, ["configs", str(TOPOLOGY / "c4-dualport.yaml"), "--out", str(out)]).exit_code == 0
    assert runner.invoke(app, ["inventory", str(TOPOLOGY / "tiny.yaml"), "--out", str(out / "inv")]).exit_code == 0
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written and all(out in p.parents for p in written)
    script = next(out.rglob("loom-routes.sh")).read_text()
    assert "$(" not in script and "`" not in script
