"""The opensm role against `loom inventory`'s output, on this machine with every path in a tmp
dir (ansible_connection local): check mode shows Loom's full options, the tables, guid2lid and
a unit whose files exist; converging writes what `loom apply --target ssh` writes (the same
renderer) and keeps the site's own settings; a second run changes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from loom.render.sm_host import SmPaths, WatchUnit, managed_block, merge, watch_unit

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
    for shown in ("routing_engine file", f"lfts_file {paths.lfts}", "honor_guid2lid_file TRUE", "sm_priority 15", "sweep_on_trap TRUE",
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


def test_role_installs_the_watcher_beside_opensm(tmp_path):
    """opensm_watch: the model directory and inventory copied, and a loom-watch unit that runs
    `loom watch` on them (the renderer's text, paths that exist); off by default."""
    inv = tmp_path / "inv"
    code, out = loom("inventory", TINY, "--out", str(inv))
    assert code == 0, out
    root = tmp_path / "root"
    unit_path = root / "etc/systemd/system/loom-watch.service"
    base = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False,
            "opensm_install": False, "opensm_runtime": False, "opensm_unit_dir": f"{root}/etc/systemd/system/opensm.service.d",
            "opensm_conf_path": f"{root}/etc/opensm/opensm.conf", "opensm_lfts_path": f"{root}/etc/opensm/loom-lfts.dump",
            "opensm_cache_dir": f"{root}/var/cache/opensm", "opensm_log_path": f"{root}/var/log/opensm.log",
            "opensm_watch_unit_path": str(unit_path)}
    extra = tmp_path / "off.yml"
    extra.write_text(yaml.safe_dump(base))
    run = playbook(inv, extra)
    assert run.returncode == 0 and not unit_path.exists(), run.stdout[-3000:]

    # the watcher's model with its lock file and catalogue: the role copies the directory a file
    # at a time (~0.5 s each), and the other 18 models of topology/ are not what is tested
    topology = tmp_path / "topology"
    topology.mkdir()
    for name in ("tiny.yaml", "tiny.lock.json"):
        shutil.copy(ROOT / "topology" / name, topology / name)
    shutil.copytree(ROOT / "topology" / "catalogue", topology / "catalogue")
    spec = WatchUnit(model=f"{root}/etc/loom/topology/tiny.yaml", loom=str(Path(sys.executable).parent / "loom"),
                     inventory=f"{root}/etc/loom/inventory", state_dir=f"{root}/var/lib/loom", interval=2.0, hold_down=30.0)
    extra.write_text(yaml.safe_dump({**base, "opensm_watch": True, "opensm_watch_model": "tiny.yaml",
                                      "opensm_watch_topology_src": str(topology),
                                      "opensm_watch_topology_dir": f"{root}/etc/loom/topology", "opensm_watch_loom": spec.loom,
                                      "opensm_watch_inventory_src": str(inv), "opensm_watch_inventory": spec.inventory,
                                      "opensm_watch_state_dir": spec.state_dir, "opensm_watch_interval": 2,
                                      "opensm_watch_hold_down": 30}))
    run = playbook(inv, extra)
    assert run.returncode == 0, run.stdout[-3000:]
    text = unit_path.read_text()
    assert text == watch_unit(spec)
    exec_line = next(l for l in text.splitlines() if l.startswith("ExecStart="))
    assert f"watch {spec.model} --target ssh --inventory {spec.inventory} --interval 2.0 --hold-down 30.0" in exec_line
    copied = sorted(str(f.relative_to(spec.inventory)) for f in Path(spec.inventory).rglob("*") if f.is_file())
    assert copied == sorted(str(f.relative_to(inv)) for f in inv.rglob("*") if f.is_file())
    model_dir = Path(spec.model).parent
    assert sorted(str(f.relative_to(model_dir)) for f in model_dir.rglob("*") if f.is_file()) == \
        sorted(str(f.relative_to(topology)) for f in topology.rglob("*") if f.is_file())
    # the unit's command works on what the role copied (model, lock file and catalogue)
    check = subprocess.run([spec.loom, "validate", spec.model], capture_output=True, text=True)
    assert check.returncode == 0 and (Path(spec.model).parent / "tiny.lock.json").exists(), check.stdout + check.stderr
    again = playbook(inv, extra)
    assert again.returncode == 0 and "changed=0" in again.stdout, again.stdout[-2000:]
