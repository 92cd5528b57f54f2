"""The target interface without daemons: bad inventories and unreachable hosts end with a
message naming the file, field or host (no traceback), and the plan's target is checked on apply."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from loom.push.errors import PlanError
from loom.fabrics.infiniband.inventory import host_from_dict
from loom.render.sm_host import SmPaths, managed_block, managed_part, merge, qos_part, site_part

from .simfabric import TINY, loom
from .sshfabric import free_port


def inventory(tmp_path: Path, hosts: dict) -> Path:
    d = tmp_path / "inv"
    d.mkdir()
    (d / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"subnet_managers": {"hosts": hosts}}}}))
    return d


@pytest.mark.parametrize("hosts,message", [
    ({"nosuch": None}, "subnet manager 'nosuch' is not a node of tiny"),
    ({"mgmt0": {"loom_sm_priority": 99}}, "loom_sm_priority 99 of 'mgmt0' is not 0-15"),
    ({"mgmt0": {"ansible_host": "-oProxyCommand=x"}}, "is not a usable host name"),
    ({"mgmt0": {"opensm_lfts_path": "relative/lfts"}}, "opensm_lfts_path 'relative/lfts' must be an absolute path"),
    ({"mgmt0": {"ansible_port": 70000}}, "ssh port 70000 of 'mgmt0' is not 1-65535"),
])
def test_bad_inventory_is_refused_by_name(tmp_path, monkeypatch, hosts, message):
    monkeypatch.setenv("LOOM_SSH_STATE_DIR", str(tmp_path / "state"))
    code, out = loom("plan", TINY, "--target", "ssh", "--inventory", str(inventory(tmp_path, hosts)))
    assert code == 1 and message in " ".join(out.split()), out


def test_missing_inventory_and_unknown_target(tmp_path):
    code, out = loom("plan", TINY, "--target", "ssh", "--inventory", str(tmp_path / "none"))
    assert code == 1 and "hosts.yml does not exist" in out, out
    code, out = loom("plan", TINY, "--target", "ftp")
    assert code == 1 and "unknown target 'ftp'" in out, out


def test_unreachable_host_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOM_SSH_STATE_DIR", str(tmp_path / "state"))
    cfg = tmp_path / "ssh_config"
    cfg.write_text(f"Host mgmt0\n  HostName 127.0.0.1\n  Port {free_port()}\n  ConnectTimeout 3\n")
    code, out = loom("plan", TINY, "--target", "ssh", "--inventory", str(inventory(tmp_path, {"mgmt0": None})),
                     "--ssh-config", str(cfg))
    assert code == 1 and "mgmt0: ssh cannot reach mgmt0" in " ".join(out.split()), out


def test_plan_naming_an_unknown_target_is_refused(tmp_path, monkeypatch):
    from loom.push.planfile import content_digest
    from loom.fabrics.infiniband.targets import target_of_plan

    plan = {"fabric": "tiny", "state_dir": str(tmp_path / "tiny"), "target": {"kind": "telnet"}}
    with pytest.raises(PlanError, match="unknown target 'telnet'"):
        target_of_plan({**plan, "plan_sha256": content_digest(plan)})
    (tmp_path / "tiny").mkdir()
    with pytest.raises(PlanError, match="no target.json written by loom"):
        target_of_plan({**plan, "target": {"kind": "ssh"}})


def test_host_from_a_plan_is_checked():
    good = {"name": "mgmt0", "ca": "mgmt0-hca0", "priority": 15, "paths": {"conf": "/etc/opensm/opensm.conf"}}
    assert host_from_dict(good, "p").paths.conf == "/etc/opensm/opensm.conf"
    with pytest.raises(PlanError, match="unknown OpenSM paths"):
        host_from_dict({**good, "paths": {"keyfile": "/root/.ssh/id_rsa"}}, "p")


def test_options_block_keeps_the_site_and_round_trips():
    p = SmPaths()
    site = "# site\nsm_priority 3\nlog_flags 0x03\nqos FALSE\n"
    qos = "qos TRUE\nqos_max_vls 4\n"
    conf = merge(site, managed_block(p, 15, qos))
    assert "#loom# sm_priority 3\n" in conf and "#loom# qos FALSE\n" in conf and "log_flags 0x03\n" in conf
    assert site_part(conf) == site and qos_part(conf, p, 15) == qos
    assert merge(conf, managed_block(p, 15, qos)) == conf  # merging again changes nothing
    assert qos_part(site, p, 15) is None and managed_part(site) is None
    edited = conf.replace("routing_engine file", "routing_engine minhop")
    assert qos_part(edited, p, 15) != qos  # an edited block differs from any plan: it is rewritten
