"""The documentation site builds strictly, and the strict build catches what it is for (issue 37):
a broken link, a broken anchor, a page left out of the nav.  A build takes ~1 s."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MKDOCS = [sys.executable, "-m", "mkdocs", "build", "--strict"]


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([*MKDOCS, "--site-dir", str(site)], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_site_builds_strictly(tmp_path):
    res = _build(ROOT, tmp_path / "site")
    assert res.returncode == 0, res.stderr
    for page in ("index.html", "install/index.html", "tutorial/index.html", "runbooks/index.html",
                 "cli/index.html", "model/index.html", "routing/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    assert "loom plan" in (tmp_path / "site" / "cli" / "index.html").read_text()


@pytest.fixture
def copy(tmp_path):
    """The site's sources in a scratch directory, to plant a fault in."""
    shutil.copy(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    return tmp_path


@pytest.mark.parametrize("fault, named", [
    ("[the runbook](runbook.md)", "runbook.md"),
    ("[the dead switch](runbooks.md#a-switch-is-dead-for-ever)", "a-switch-is-dead-for-ever"),
], ids=["page", "anchor"])
def test_a_broken_link_fails_the_build(copy, fault, named):
    page = copy / "docs" / "install.md"
    page.write_text(page.read_text() + f"\nSee {fault}.\n")
    res = _build(copy, copy / "site")
    assert res.returncode != 0
    assert named in res.stderr


def test_a_page_left_out_of_the_nav_fails_the_build(copy):
    (copy / "docs" / "orphan.md").write_text("# Orphan\n")
    res = _build(copy, copy / "site")
    assert res.returncode != 0
    assert "orphan.md" in res.stderr
