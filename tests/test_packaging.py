"""Loom installed from its wheel, used outside the checkout (issue 22): templates and cable
catalogues travel as package data, nothing reads the source tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = (tmp / "dist").glob("loom-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # dependencies from the project's environment (no download); loom itself only from the wheel
    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(venv / "bin/pip"), "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300)
    work = tmp / "elsewhere"
    work.mkdir()
    for m in ("tiny.yaml", "c4-dualport.yaml"):
        shutil.copy(ROOT / "topology" / m, work / m)  # no catalogue/ beside them: the shipped one is used
    return venv / "bin", work


def run(installed, *args: str) -> subprocess.CompletedProcess:
    bin_dir, work = installed
    return subprocess.run([str(bin_dir / "loom"), *args], cwd=work, capture_output=True, text=True, timeout=300)


def test_the_wheel_runs_outside_the_checkout(installed):
    bin_dir, work = installed
    where = subprocess.run([str(bin_dir / "python"), "-c", "import loom; print(loom.__file__)"], cwd=work,
                           capture_output=True, text=True, check=True).stdout
    assert str(bin_dir.parent) in where and str(ROOT) not in where
    assert run(installed, "--version").stdout.strip() == "loom 0.1.0"
    source = subprocess.run([str(bin_dir / "python"), "-c", "from loom.fabrics.infiniband.compiled import SOURCE; "
                             "from loom.routing.kernels import SOURCE as WALK; print(SOURCE.is_file(), WALK.is_file())"],
                            cwd=work, capture_output=True, text=True, check=True).stdout
    assert source.split() == ["True", "True"]  # the C loops travel as source, built where they run
    res = run(installed, "check", "tiny.yaml", "--ebb-samples", "0")
    assert res.returncode == 0, res.stdout + res.stderr
    res = run(installed, "cabling", "tiny.yaml", "--format", "html", "--out", "tiny.html")
    assert res.returncode == 0 and "<html" in (work / "tiny.html").read_text(), res.stderr
    res = run(installed, "configs", "c4-dualport.yaml", "--out", "cfg")
    assert res.returncode == 0, res.stderr
    assert any((work / "cfg").rglob("frr.conf"))
