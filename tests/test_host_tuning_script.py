"""The host_tuning boot script on a fake sysfs: it acts on the device each NIC's name resolves to
(vendor and driver checked), never on an address from the model, says which NICs are missing and
when the GPUs in sysfs are not the model's count."""

from __future__ import annotations

import subprocess
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

ROLE = Path(__file__).parent.parent / "ansible" / "roles" / "host_tuning"


def script(tmp_path: Path, nics: dict[str, int], gpus: int = 0) -> Path:
    env = Environment(loader=FileSystemLoader(ROLE / "templates"), undefined=StrictUndefined, keep_trailing_newline=True,
                      trim_blocks=True, lstrip_blocks=True)
    path = tmp_path / "loom-host-tuning"
    path.write_text(env.get_template("loom-host-tuning.sh.j2").render(host_tuning_nic_numa=nics,
                                                                                   host_tuning_gpu_nic_pairs=[{}] * gpus))
    path.chmod(0o755)
    return path


def pci_device(sys: Path, addr: str, vendor: str, driver: str, cpus: str, irqs: list[int], cls: str = "0x020700") -> Path:
    dev = sys / "devices" / "pci0000:00" / addr
    (dev / "msi_irqs").mkdir(parents=True)
    (dev / "vendor").write_text(vendor + "\n")
    (dev / "class").write_text(cls + "\n")
    (sys / "bus" / "pci" / "devices").mkdir(parents=True, exist_ok=True)
    (sys / "bus" / "pci" / "devices" / addr).symlink_to(dev)
    (dev / "local_cpulist").write_text(cpus + "\n")
    drv = sys / "bus" / "pci" / "drivers" / driver
    drv.mkdir(parents=True, exist_ok=True)
    (dev / "driver").symlink_to(drv)
    for irq in irqs:
        (dev / "msi_irqs" / str(irq)).write_text("msix\n")
    return dev


def test_boot_script_resolves_nics_in_sysfs(tmp_path):
    sys, proc, bin_dir = tmp_path / "sys", tmp_path / "proc", tmp_path / "bin"
    hca = pci_device(sys, "0000:c1:00.0", "0x15b3", "mlx5_core", "32-63", [101, 102])
    other = pci_device(sys, "0000:05:00.0", "0x8086", "ice", "0-31", [7])
    pci_device(sys, "0000:10:00.0", "0x10de", "nvidia", "0-31", [], cls="0x030200")  # one GPU; the model has two
    for name, dev in (("mlx5_0", hca), ("mlx5_2", other)):
        (sys / "class" / "infiniband" / name).mkdir(parents=True)
        (sys / "class" / "infiniband" / name / "device").symlink_to(dev)
    for irq in (7, 101, 102):
        (proc / "irq" / str(irq)).mkdir(parents=True)
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    for tool in ("setpci", "mlxconfig"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\n')
        (bin_dir / tool).chmod(0o755)
    res = subprocess.run([str(script(tmp_path, {"mlx5_0": 1, "mlx5_1": 1, "mlx5_2": 0}, gpus=2))], capture_output=True, text=True,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "LOOM_SYSFS": str(sys), "LOOM_PROCFS": str(proc)}, timeout=30)
    assert res.returncode == 0, res.stderr
    calls = log.read_text().splitlines()
    assert calls == ["mlxconfig -y -d 0000:c1:00.0 set PCI_WR_ORDERING=1", "setpci -s 0000:c1:00.0 CAP_EXP+8.w=0010:0010"]
    assert (proc / "irq" / "101" / "smp_affinity_list").read_text() == "32-63\n"
    assert not (proc / "irq" / "7" / "smp_affinity_list").exists()  # not a Mellanox device: left alone
    assert "NIC mlx5_1 is not present" in res.stderr and "mlx5_2 (0000:05:00.0) is vendor 0x8086" in res.stderr
    assert "1 NVIDIA GPUs in sysfs, the model's node type has 2" in res.stderr


def test_every_setting_of_the_role_says_why_in_the_file_it_writes():
    """sysctl.d and nccl.conf carry, above each of the role's settings, why it has its value (issue 37:
    NCCL_NET_GDR_LEVEL=SYS was set without a word); a setting the site adds is written as given."""
    import yaml

    env = Environment(loader=FileSystemLoader(ROLE / "templates"), undefined=StrictUndefined, trim_blocks=True,
                      lstrip_blocks=True)
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    sysctl = {**defaults["host_tuning_sysctl"], "net.ipv4.site_own": 1}
    nccl = {"NCCL_IB_HCA": "mlx5_0:1", "NCCL_SOCKET_IFNAME": "^lo,docker", "NCCL_NET_GDR_LEVEL": "SYS",
            "NCCL_TOPO_FILE": "/etc/loom/nccl-topo.xml", "NCCL_IB_SL": 1, "NCCL_IB_TC": 104}
    for template, values, sep in (("sysctl.conf.j2", {"host_tuning_sysctl": sysctl}, " = "),
                                  ("nccl.conf.j2", {"host_tuning_nccl_env": nccl}, "=")):
        lines = env.get_template(template).render(**values).splitlines()
        for key in next(iter(values.values())):
            i = next(n for n, line in enumerate(lines) if line.startswith(key + sep))
            said = lines[i - 1].startswith(f"# {key}: ")
            assert said == (key != "net.ipv4.site_own"), (template, key, lines[i - 1])
    assert "measure with nccl-tests" in env.get_template("nccl.conf.j2").render(host_tuning_nccl_env=nccl)
