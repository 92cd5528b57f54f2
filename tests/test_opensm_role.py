"""The opensm role against `loom inventory`'s output, on this machine with every path in a tmp
dir (ansible_connection local): check mode shows Loom's full options, the tables, guid2lid and
a unit whose files exist; converging writes what `loom apply --target ssh` writes (the same
renderer) and keeps the site's own settings; a second run changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from loom.render.sm_host import SmPaths, managed_block, merge

from .simfabric import TINY, loom

ROOT = Path(__file__).parent.parent
pytestmark = pytest.mark.slow
SITE = "# this site's own settings\nlog_flags 0x03\nqos FALSE\n"


def playbook(inv: Path, extra: Path, *args: str) -> subprocess.CompletedProcess:
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_ROLES_PATH": str(ROOT / "ansible" / "roles")}
    return subprocess.run([str(bin_dir / "ansible-playbook"), "-i", str(inv), str(ROOT / "ansible" / "site.yml"),
                           "--limit", "subnet_managers", "--tags", "opensm", "-e", f"@{extra}", *args],
                          env=env, capture_output=True, text=True, timeout=300)


def test_role_check_diff_then_converge_to_what_apply_writes(tmp_path):
    inv = tmp_path / "inv"
    code, out = loom("inventory", TINY, "--out", str(inv))
    assert code == 0, out
    root = tmp_path / "root"
    paths = SmPaths(conf=f"{root}/etc/opensm/opensm.conf", lfts=f"{root}/etc/opensm/loom-lfts.dump",
                    cache_dir=f"{root}/var/cache/opensm", log=f"{root}/var/log/opensm.log", pidfile=f"{root}/run/opensm.pid")
    extra = tmp_path / "local.yml"
    extra.write_text(yaml.safe_dump({
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
        "opensm_install": False, "opensm_runtime": False, "opensm_unit_dir": f"{root}/etc/systemd/system/opensm.service.d",
        "opensm_conf_path": paths.conf, "opensm_lfts_path": paths.lfts, "opensm_cache_dir": paths.cache_dir,
        "opensm_log_path": paths.log, "opensm_pidfile": paths.pidfile}))
    Path(paths.conf).parent.mkdir(parents=True)
    Path(paths.conf).write_text(SITE)

    check = playbook(inv, extra, "--check", "--diff")
    assert check.returncode == 0, check.stdout[-3000:] + check.stderr[-2000:]
    lfts, g2l = (inv / "files" / "lfts.dump").read_text(), (inv / "files" / "guid2lid").read_text()
    for shown in ("routing_engine file", f"lfts_file {paths.lfts}", "honor_guid2lid_file TRUE", "sm_priority 15",
                  "qos_vlarb_low", "qos_swe_sl2vl", "+#loom# qos FALSE", lfts.splitlines()[0], g2l.splitlines()[0],
                  f"ExecStart=/usr/sbin/opensm -F {paths.conf} -f {paths.log}"):
        assert shown in check.stdout, f"{shown!r} not in the check-mode diff"
    assert Path(paths.conf).read_text() == SITE and not Path(paths.lfts).exists()  # check mode changed nothing

    run = playbook(inv, extra)
    assert run.returncode == 0, run.stdout[-3000:]
    qos = yaml.safe_load((inv / "group_vars" / "subnet_managers.yml").read_text())["opensm_qos_options"]
    conf = Path(paths.conf).read_text()
    assert conf == merge(SITE, managed_block(paths, 15, qos))  # what the SSH target writes
    assert "log_flags 0x03\n" in conf  # the site's setting kept
    assert Path(paths.lfts).read_text() == lfts and Path(paths.guid2lid).read_text() == g2l
    unit = (root / "etc/systemd/system/opensm.service.d/loom.conf").read_text()
    named = [w for line in unit.splitlines() if line.startswith("ExecStart=/") for w in line.split() if w.startswith("/")]
    assert named and all(Path(f).exists() for f in named if f != paths.log)
    assert f"Environment=OSM_CACHE_DIR={paths.cache_dir}" in unit

    again = playbook(inv, extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-2000:]
