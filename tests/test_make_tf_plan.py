"""`make tf-plan` passes tofu's -detailed-exitcode through (issue 37: it exited 0 on changes, so a
pipeline went on past an unreviewed plan).  tofu is a stub here: the recipe is what is tested."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("tofu, make, said", [(0, 0, "no changes"), (2, 2, "changes (tofu plan exit 2)"),
                                              (1, 2, "tofu plan failed (exit 1)")])
def test_tf_plan_exit_code(tmp_path, tofu, make, said):
    stub = tmp_path / "tofu"
    stub.write_text(f"#!/bin/sh\necho \"tofu $*\"\nexit {tofu}\n")
    stub.chmod(0o755)
    r = subprocess.run(["make", "-s", "-o", "tf-init", "-o", "setup", "-o", "tf-tools", "-o", "tf-state", "tf-plan",
                        f"TOFU={stub}", "TF_ENV=", "FABRIC=tiny"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "plan -input=false -detailed-exitcode" in r.stdout  # the stub ran: nothing else was
    assert r.returncode == make, r.stderr
    assert f"make tf-plan: {said}" in r.stdout + r.stderr
