"""What the opensm role leaves on a subnet manager's root filesystem."""


def test_loom_files_in_place(host):
    assert "qos TRUE" in host.file("/etc/opensm/opensm.conf").content_string
    lfts = host.file("/etc/opensm/loom-lfts.dump").content_string
    assert lfts.startswith("Unicast lids") and "portguid" in lfts
    assert host.file("/var/cache/opensm/guid2lid").content_string.startswith("0x")


def test_opensm_runs_the_file_engine(host):
    drop_in = host.file("/etc/systemd/system/opensm.service.d/loom.conf").content_string
    assert "-R file -U /etc/opensm/loom-lfts.dump" in drop_in and "-F /etc/opensm/opensm.conf" in drop_in
