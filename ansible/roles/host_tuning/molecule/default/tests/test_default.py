"""What host_tuning leaves in a Debian 12 root filesystem (run by molecule through Ansible's chroot connection):
a GPU node (loom-host_tuning) and a GPU-less management node (loom-host_tuning-mgmt)."""

import pytest

GPU_NODE = "loom-host_tuning"


def node(host) -> str:
    """The platform a test runs on: testinfra reaches each by its chroot directory, named for it."""
    return host.backend.get_hostname().rstrip("/").rsplit("/", 1)[-1]


@pytest.fixture
def gpu(host):
    """The tests of a GPU node's settings run on the GPU node only."""
    if node(host) != GPU_NODE:
        pytest.skip("a GPU node's settings")


@pytest.fixture
def gpuless(host):
    """And those of a GPU-less node on the management node only."""
    if node(host) == GPU_NODE:
        pytest.skip("a GPU-less node's settings")


def test_nccl_settings(host, gpu):
    conf = host.file("/etc/nccl.conf")
    assert conf.exists and conf.mode == 0o644
    assert "NCCL_IB_HCA=eth0:1,eth1:1" in conf.content_string
    assert "NCCL_TOPO_FILE=/etc/loom/nccl-topo.xml" in conf.content_string
    lines = conf.content_string.splitlines()  # a non-obvious setting says why, on the line above it
    assert lines[lines.index("NCCL_NET_GDR_LEVEL=PIX") - 1].startswith("# NCCL_NET_GDR_LEVEL: the farthest any GPU")
    assert not any("=" in line for line in lines if line.startswith("#"))  # NCCL reads KEY=VALUE lines
    assert host.file("/etc/loom/nccl.env").content_string == conf.content_string
    assert '<system version="1">' in host.file("/etc/loom/nccl-topo.xml").content_string


def test_kernel_limits_and_modules(host, gpu):
    assert "kernel.numa_balancing = 0" in host.file("/etc/sysctl.d/90-loom.conf").content_string
    assert "memlock    unlimited" in host.file("/etc/security/limits.d/90-loom-rdma.conf").content_string
    assert "PeerMappingOverride" in host.file("/etc/modprobe.d/90-loom.conf").content_string
    assert 'KERNEL=="eth0"' in host.file("/etc/udev/rules.d/90-loom-nic.rules").content_string


def test_relaxed_ordering_at_boot(host, gpu):
    script = host.file("/usr/local/sbin/loom-host-tuning")
    assert script.mode == 0o755
    text = script.content_string
    assert "for nic in eth0 eth1; do" in text and "0000:10:00.0" not in text  # resolved in sysfs, not from the model
    assert 'setpci -s "$addr" CAP_EXP+8.w=0010:0010' in text and "set PCI_WR_ORDERING=1" in text
    unit = host.file("/etc/systemd/system/multi-user.target.wants/loom-host-tuning.service")
    assert unit.is_symlink and unit.linked_to == "/etc/systemd/system/loom-host-tuning.service"


def test_runtime_actions_skipped_in_the_chroot(host):
    # the boot script ran nowhere: it would have needed the NICs' sysfs entries
    assert not host.file("/sys/bus/pci/devices/0000:10:00.0").exists


def test_per_nic_source_routing(host, gpu):
    net = host.file("/etc/systemd/network/10-loom-eth0.network").content_string
    assert "Address=10.0.64.1/31" in net and "[RoutingPolicyRule]" in net and "Table=100" in net


def test_a_gpuless_node_gets_no_nvidia_or_nccl_settings(host, gpuless):
    assert not host.file("/etc/modprobe.d/90-loom.conf").exists  # no nvidia module to give options to
    assert not host.file("/etc/nccl.conf").exists and not host.file("/etc/loom/nccl.env").exists
    assert "kernel.numa_balancing = 0" in host.file("/etc/sysctl.d/90-loom.conf").content_string  # the rest as on any node
