"""`molecule test` for each Ansible role: create (a chroot from a cached debootstrap rootfs),
converge, idempotence (a second run changes nothing), check mode, testinfra verify, destroy."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROLES = Path(__file__).parent.parent / "ansible" / "roles"
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("role", ["host_tuning", "opensm"])
def test_molecule(role):
    if shutil.which("debootstrap") is None and not Path("/usr/sbin/debootstrap").exists():
        pytest.fail("debootstrap is not installed — run `make setup`")
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:/usr/sbin:/sbin:{os.environ['PATH']}", "ANSIBLE_FORCE_COLOR": "0"}
    res = subprocess.run([str(bin_dir / "molecule"), "test"], cwd=ROLES / role, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, (res.stdout + res.stderr)[-6000:]
