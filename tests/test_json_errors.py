"""`--format json` on an invalid model: a JSON error document on stdout (file, line, field,
message, fix), the same exit code as in text mode, and nothing on stdout in text mode (issue 37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app

TINY = Path(__file__).resolve().parent.parent / "topology" / "tiny.yaml"


@pytest.fixture
def bad(tmp_path):
    """tiny.yaml with a negative leaf count on its first zone (line 46)."""
    text = TINY.read_text()
    assert "leaves: 4," in text
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace("leaves: 4,", "leaves: -4,", 1))
    return path


def run(*args):
    r = CliRunner().invoke(app, [str(a) for a in args])
    assert "Traceback" not in r.output, r.output
    return r


@pytest.mark.parametrize("command", [
    ["check"], ["show"], ["status"], ["plan"], ["discover"], ["whatif", "--fail", "z0-spine0"],
    ["diff", "--base-file", str(TINY)],
], ids=lambda c: c[0])
def test_json_mode_prints_a_json_error_document(bad, command):
    text = run(command[0], bad, *command[1:])
    js = run(command[0], bad, *command[1:], "--format", "json")
    assert js.exit_code == text.exit_code != 0
    assert text.stdout == ""
    doc = json.loads(js.stdout)
    assert "not" in doc["error"] and "valid" in doc["error"]
    first = doc["problems"][0]
    assert first["file"] == str(bad)
    assert first["field"] == "zones[0].leaves"
    assert "leaves: -4," in bad.read_text().splitlines()[first["line"] - 1]
    assert "greater than or equal to 1" in first["message"]
    assert first["fix"]
    assert "zones[0].leaves" in js.stderr  # the text stays on stderr


def test_a_refusal_is_a_json_document_too(tmp_path):
    """Not only model errors: a refusal through `fail`/`input_error` in JSON mode."""
    r = run("discover", TINY, "--topology", tmp_path / "missing.topo", "--format", "json")
    assert r.exit_code != 0
    assert json.loads(r.stdout)["error"]


def test_json_mode_does_not_leak_into_the_next_invocation(bad):
    run("check", bad, "--format", "json")
    assert run("check", bad).stdout == ""
