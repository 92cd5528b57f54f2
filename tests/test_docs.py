"""The generated references are current, and the JSON Schema editors use accepts every model (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import typer
import yaml

from loom.cli import app
from loom.render.cli_doc import cli_reference
from loom.render.model_doc import model_schema

ROOT = Path(__file__).resolve().parent.parent


def test_cli_reference_is_current():
    committed = (ROOT / "docs" / "cli.md").read_text()
    assert committed == cli_reference(typer.main.get_command(app)), "docs/cli.md is stale: run `.venv/bin/loom docs`"


def test_every_command_is_in_the_cli_reference():
    text = (ROOT / "docs" / "cli.md").read_text()
    for name in ("loom check", "loom whatif", "loom discover", "loom watch", "loom sim link down", "loom plan"):
        assert f"## {name}\n" in text


def test_model_schema_is_current():
    assert (ROOT / "docs" / "model.schema.json").read_text() == model_schema(), \
        "docs/model.schema.json is stale: run `.venv/bin/loom docs`"


@pytest.mark.parametrize("model", sorted((ROOT / "topology").glob("*.yaml")), ids=lambda p: p.name)
def test_every_model_validates_against_the_schema_and_names_it(model):
    schema = json.loads((ROOT / "docs" / "model.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(model.read_text()))
    assert model.read_text().startswith("# yaml-language-server: $schema=../docs/model.schema.json\n")


def test_the_schema_catches_a_misspelt_key():
    schema = json.loads((ROOT / "docs" / "model.schema.json").read_text())
    data = yaml.safe_load((ROOT / "topology" / "tiny.yaml").read_text())
    data["zones"][0]["leafs"] = 4
    with pytest.raises(jsonschema.ValidationError, match="leafs"):
        jsonschema.Draft202012Validator(schema).validate(data)
