"""The corpus of bad models: each file is a real mistake, and must give its expected message,
name the file and a line, and never a traceback (through the CLI, as a user sees it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric
from loom.model import ModelError

CORPUS = sorted((Path(__file__).parent / "bad_models").glob("*.yaml"))


def expectation(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# expect: "):
            return line.removeprefix("# expect: ")
    raise AssertionError(f"{path} has no '# expect:' line")


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 20


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_bad_model_refused_with_clear_message(path: Path):
    with pytest.raises(ModelError) as info:
        load_fabric(path)
    text = str(info.value)
    assert expectation(path) in text
    assert str(path) in text
    assert "fix:" in text
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert expectation(path) in " ".join(result.output.split())


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_bad_model_points_at_a_line(path: Path):
    with pytest.raises(ModelError) as info:
        load_fabric(path)
    assert all(p.line for p in info.value.problems), [p.render(str(path)) for p in info.value.problems]
