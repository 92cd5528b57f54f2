"""Golden outputs of the CLI: what a user sees, pinned so a refactor of `loom/cli.py` can be shown
to change nothing (tests/test_golden.py compares; this module produces and rewrites).

    python -m tests.golden            # name the outputs that differ from tests/golden/
    python -m tests.golden --write    # (re)write tests/golden/ (review the git diff!)
    python -m tests.golden --fast     # either of the above without the simulated fabric

Pinned: `--help` of the app and of every command and sub-command (found by walking the click
tree, so a command added or lost shows up as a file without output or an output without file);
`check --json`, `whatif --json` and `diff --base HEAD --format json` on an InfiniBand and an
Ethernet model, and the text of `check`, `whatif`, `show MODEL` and `validate`; on the simulated
fabric, `plan` (JSON and text) and `show PLAN --format json`.
JSON outputs are stdout only: stderr carries timings (`route: 0.04s`), which are not pinned.
Each command's exit code is checked against the one it has today (a run with another fails)."""

from __future__ import annotations

import functools
import getpass
import re
import shutil
import socket
import sys
import tempfile
from pathlib import Path

import typer
from typer.testing import CliRunner

from loom.cli import app

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
MODELS = {"tiny": ROOT / "topology" / "tiny.yaml", "roce-lab": ROOT / "topology" / "roce-lab.yaml"}
# A fixed, colourless, 100-column terminal, whatever the caller's: Rich and click read these.
ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb", "FORCE_COLOR": None}

# The sim outputs per model. roce-lab has no `show`: `loom show` reads only InfiniBand plans
# (an Ethernet plan fails with "qos: Field required", exit 1), which is not worth pinning.
SIM_NAMES = {"tiny": ["plan--tiny.json", "plan--tiny.txt", "show--tiny.json"],
             "roce-lab": ["plan--roce-lab.json", "plan--roce-lab.txt"]}


def invoke(args: list[str], code: int, env: dict | None = None, stdout_only: bool = True) -> str:
    """Run `loom ARGS` in-process (prog_name as the installed script names it); fail unless it
    exits with CODE, the exit code it has today."""
    r = CliRunner().invoke(app, args, env={**ENV, **(env or {})}, prog_name="loom")
    if r.exit_code != code:
        raise AssertionError(f"loom {' '.join(args)}: exit {r.exit_code}, expected {code}\n"
                             f"{r.output}{r.exception or ''}")
    return r.stdout if stdout_only else r.output


def normalise(text: str, tmp: Path | None = None) -> str:
    """Replace what varies between runs and machines by a named placeholder. Each rule matches only
    the varying part (a path prefix, a timestamp, the one digest key), never a whole field."""
    rules = [
        *([(re.escape(str(tmp)), "<TMP>")] if tmp else []),  # this run's state and plan directory
        (re.escape(str(ROOT)), "<ROOT>"),  # the checkout (the plan's `model` path)
        (r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:?\d\d|Z)?", "<TIME>"),  # the plan's `created`
        (r'("user": )"' + re.escape(getpass.getuser()) + '"', r'\1"<USER>"'),  # who made the plan
        # FRR in the namespaces starts with the machine's host name: a removed line in the plan
        (r"\bhostname " + re.escape(socket.gethostname()) + r"\b", "hostname <HOST>"),
        # digests over content that holds the above: the whole plan; a running FRR config (host name)
        (r'("(plan|running)_sha256": ")[0-9a-f]{64}"', r'\1<SHA256>"'),
    ]
    for pattern, repl in rules:
        text = re.sub(pattern, repl, text)
    return text


def help_cases() -> dict[str, list[str]]:
    """`help.txt`, `help--plan.txt`, `help--sim--link--down.txt`, ...: the command tree walked."""
    cases = {}

    def walk(cmd, path: list[str]) -> None:
        cases["--".join(["help", *path]) + ".txt"] = [*path, "--help"]
        # a group is what has sub-commands: Typer 0.29 builds on its own copy of click (typer._click),
        # whose TyperGroup is no `click.Group`
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return cases


@functools.cache
def fast_cases() -> dict[str, tuple[list[str], int]]:
    """Name → (arguments, exit code) for every output that needs no simulated fabric."""
    fail = {"tiny": "z0-leaf0/5", "roce-lab": "p0-lab-leaf0/5"}  # one leaf up-link, as tests/test_whatif.py
    cases = {name: (args, 0) for name, args in help_cases().items()}
    for m, path in MODELS.items():
        cases[f"check--{m}.json"] = (["check", str(path), "--json"], 0)
        cases[f"whatif--{m}.json"] = (["whatif", str(path), "--fail", fail[m], "--json"], 0)
        cases[f"diff--{m}.json"] = (["diff", str(path), "--base", "HEAD", "--format", "json"], 0)
        # the text reports too: the refactor moves the code that prints them
        cases[f"check--{m}.txt"] = (["check", str(path)], 0)
        cases[f"whatif--{m}.txt"] = (["whatif", str(path), "--fail", fail[m]], 0)
        cases[f"show--{m}.txt"] = (["show", str(path)], 0)
        cases[f"validate--{m}.txt"] = (["validate", str(path)], 0)
    return cases


def fast_output(name: str) -> str:
    args, code = fast_cases()[name]
    return normalise(invoke(args, code, stdout_only=not name.startswith("help")))


def sim_outputs(model: str) -> dict[str, str]:
    """Up the model's simulated fabric under a private state directory, take its plan (fresh
    fabric: exit 2, changes) and the saved plan as `show` prints it; down again, always."""
    path, tmp = str(MODELS[model]), Path(tempfile.mkdtemp(prefix="loom-golden-")).resolve()
    env, got = {"LOOM_STATE_DIR": str(tmp / "state")}, {}
    try:
        invoke(["sim", "up", path], 0, env)
        got[f"plan--{model}.json"] = invoke(["plan", path, "--format", "json"], 2, env)
        got[f"plan--{model}.txt"] = invoke(["plan", path], 2, env)
        if f"show--{model}.json" in SIM_NAMES[model]:
            invoke(["plan", path, "--out", str(tmp / "plan.json")], 2, env)
            got[f"show--{model}.json"] = invoke(["show", str(tmp / "plan.json"), "--format", "json"], 0, env)
    finally:
        invoke(["sim", "down", "--force", path], 0, env)
        shutil.rmtree(tmp, ignore_errors=True)
    return {name: normalise(text, tmp) for name, text in got.items()}


def outputs(sim: bool = True) -> dict[str, str]:
    """Every pinned output, name → normalised text."""
    got = {name: fast_output(name) for name in fast_cases()}
    for model in SIM_NAMES if sim else ():
        got.update(sim_outputs(model))
    return got


def main(argv: list[str]) -> int:
    got = outputs(sim="--fast" not in argv)
    if "--write" in argv:
        GOLDEN.mkdir(exist_ok=True)
        stale = {p.name for p in GOLDEN.iterdir()} - set(got) if "--fast" not in argv else set()
        for name in stale:
            (GOLDEN / name).unlink()
        for name, text in got.items():
            (GOLDEN / name).write_text(text)
        print(f"wrote {len(got)} outputs to {GOLDEN}" + (f", removed {sorted(stale)}" if stale else ""))
        return 0
    differ = [n for n, t in got.items() if not (GOLDEN / n).is_file() or (GOLDEN / n).read_text() != t]
    print("\n".join(differ) or f"all {len(got)} outputs as in {GOLDEN}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
