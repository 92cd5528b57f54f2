"""What the opensm role leaves on a subnet manager's root filesystem: exactly what
`loom apply --target ssh` writes (the same renderer, loom.render.sm_host), the site's settings kept.
Files are compared by their SHA-256 on the host (testinfra's content_string drops the last newline)."""

import hashlib
from pathlib import Path

from loom.render.sm_host import SmPaths, managed_block, merge, unit

FILES = Path(__file__).parent.parent / "files"
SITE = "# this site's own settings\nlog_flags 0x03\nqos FALSE\n"
QOS = "qos TRUE\nqos_max_vls 4\nqos_sl2vl 0,1,2,0,0,0,0,0,0,0,0,0,0,0,0,0\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_options_are_the_sites_with_looms_block(host):
    conf = host.file("/etc/opensm/opensm.conf")
    assert conf.sha256sum == sha(merge(SITE, managed_block(SmPaths(), 15, QOS)))
    assert "log_flags 0x03\n" in conf.content_string and "#loom# qos FALSE\n" in conf.content_string


def test_tables_and_lids_are_looms(host):
    assert host.file("/etc/opensm/loom-lfts.dump").sha256sum == sha((FILES / "lfts.dump").read_text())
    assert host.file("/var/cache/opensm/guid2lid").sha256sum == sha((FILES / "guid2lid").read_text())


def test_the_unit_runs_opensm_on_those_files(host):
    assert host.file("/etc/systemd/system/opensm.service.d/loom.conf").sha256sum == sha(unit(SmPaths()))
    assert host.file("/etc/opensm/opensm.conf").exists
