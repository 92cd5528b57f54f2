"""The CLI's user-visible outputs are those pinned in tests/golden/ (tests/golden.py says what and
how; `python -m tests.golden --write` rewrites them after an intended change). One test per
output, so a failure names the output that changed and shows the change as a unified diff."""

from __future__ import annotations

import difflib

import pytest

from . import golden

SIM = [(model, name) for model, names in golden.SIM_NAMES.items() for name in names]


def same_as_golden(name: str, text: str) -> None:
    path = golden.GOLDEN / name
    assert path.is_file(), f"{name}: no golden file; run `python -m tests.golden --write`"
    want = path.read_text()
    if text != want:
        diff = difflib.unified_diff(want.splitlines(True), text.splitlines(True), f"golden/{name}", "now")
        pytest.fail(f"{name} changed:\n{''.join(diff)}", pytrace=False)


def test_every_golden_file_is_an_output_and_every_output_has_one():
    """A command lost (or added) shows here: its help file has no output (or no file)."""
    names = set(golden.fast_cases()) | {name for _, name in SIM}
    assert {p.name for p in golden.GOLDEN.iterdir()} == names


@pytest.mark.parametrize("name", sorted(golden.fast_cases()))
def test_output(name):
    same_as_golden(name, golden.fast_output(name))


@pytest.fixture(scope="module")
def sim_runs():
    """One simulated fabric per model for the module, brought up on first use."""
    runs = {}

    def run(model: str) -> dict[str, str]:
        if model not in runs:
            runs[model] = golden.sim_outputs(model)
        return runs[model]
    return run


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("model, name", SIM, ids=[name for _, name in SIM])
def test_sim_output(model, name, sim_runs):
    same_as_golden(name, sim_runs(model)[name])


def test_each_invocation_reads_its_own_terminal():
    """The consoles are made again for each command run in one process: one run with FORCE_COLOR
    set (a terminal, as Rich then reads it) fixed the next runs at TERM=dumb's 80 columns, so the
    pinned outputs depended on which test ran before them (seen under pytest-xdist)."""
    golden.invoke(["show", str(golden.MODELS["tiny"])], 0, env={"FORCE_COLOR": "1"})
    assert golden.fast_output("show--tiny.txt") == (golden.GOLDEN / "show--tiny.txt").read_text()
