"""Host settings: derivation, inventory, fact parsers, and `loom host check` on planted facts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric
from loom.host import derive
from loom.host.facts import parse_lspci, parse_numactl, parse_topo
from loom.render.inventory import inventory

TOPO = Path(__file__).parent.parent / "topology"
FACTS = Path(__file__).parent / "facts" / "ff2-a100"
runner = CliRunner()


def test_fire_flyer_inventory_lists_every_host_with_zone_rack_and_numa_correct_nccl():
    f = load_fabric(TOPO / "fire-flyer-2.yaml")
    files = inventory(f)
    hosts = yaml.safe_load(files["hosts.yml"])["all"]["children"]
    assert len(hosts["nodetype_a100_pcie"]["hosts"]) == 1200 and len(hosts["role_storage"]["hosts"]) == 180
    assert set(hosts["zone_z0"]["hosts"]) >= {"st000", "z0-c000"} and "z1-c000" in hosts["zone_z1"]["hosts"]
    assert hosts["subnet_managers"]["hosts"] == {"z0-m00": None}
    for n in f.nodes:
        hv = yaml.safe_load(files[f"host_vars/{n.name}.yml"])
        assert hv["loom_rack"] == n.rack and hv["loom_zones"] == list(n.zones)
    gv = yaml.safe_load(files["group_vars/nodetype_a100_pcie.yml"])
    assert gv["host_tuning_nccl_env"]["NCCL_IB_HCA"] == "mlx5_0:1"
    assert gv["host_tuning_nccl_env"]["NCCL_IB_SL"] == "2" and gv["host_tuning_nccl_env"]["NCCL_IB_TC"] == "64"
    assert gv["host_tuning_nic_numa"] == {"mlx5_0": 0} and gv["host_tuning_nic_irq_cpus"] == {"mlx5_0": "0-31"}
    numa = {p["gpu"]: p["numa"] for p in gv["host_tuning_gpu_nic_pairs"]}
    assert numa == {"gpu0": 0, "gpu1": 0, "gpu2": 0, "gpu3": 0, "gpu4": 1, "gpu5": 1, "gpu6": 1, "gpu7": 1}


def with_bus_ids(model, node_type: str, gpus: list[str], nics: list[str]):
    """The model with these PCI addresses given to the node type's GPUs and NICs."""
    nt = model.node_types[node_type]
    nt = nt.model_copy(update={"gpus": [g.model_copy(update={"bus_id": a}) for g, a in zip(nt.gpus, gpus)],
                               "nics": [n.model_copy(update={"bus_id": a}) for n, a in zip(nt.nics, nics)]})
    return model.model_copy(update={"node_types": {**model.node_types, node_type: nt}})


def test_four_plane_node_pairs_each_nic_with_the_gpu_on_its_pcie_switch():
    model = load_fabric(TOPO / "roce-4plane.yaml").model
    intent = derive(model, "gpu8-nic8")
    assert [(p.gpu, p.nic, p.distance) for p in intent.pairs] == [(f"gpu{i}", f"eth{i}", "PIX") for i in range(8)]
    assert intent.env["NCCL_NET_GDR_LEVEL"] == "PIX"
    # no bus_ids in the model: no topology file of guessed addresses (NCCL reads sysfs itself)
    assert intent.topology_xml == "" and "NCCL_TOPO_FILE" not in intent.env and intent.relaxed_ordering == {}
    located = derive(with_bus_ids(model, "gpu8-nic8", [f"0000:{0x11 + 2 * i:02x}:00.0" for i in range(8)],
                                  [f"0000:{0x12 + 2 * i:02x}:00.0" for i in range(8)]), "gpu8-nic8")
    assert located.topology_xml.count("<net ") == 8 and located.topology_xml.count('class="0x060400"') == 8
    assert located.env["NCCL_TOPO_FILE"] == "/etc/loom/nccl-topo.xml" and located.relaxed_ordering["eth0"] == "0000:12:00.0"


def test_nodes_without_gpus_get_no_nccl_settings():
    intent = derive(load_fabric(TOPO / "fire-flyer-2.yaml").model, "storage")
    assert intent.env == {} and intent.topology_xml == "" and intent.pairs == ()


def test_parsers_on_sample_outputs():
    # the 2-GPU listing of seed 004, as printed
    topo = parse_topo("\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\t\nGPU0\tX\tNV2\t0-23\tN/A\t\nGPU1\tNV2\tX\t0-23\tN/A\t\n")
    assert topo["matrix"]["GPU0"]["GPU1"] == "NV2" and topo["cpu_affinity"]["GPU1"] == "0-23"
    assert topo["numa"]["GPU0"] is None
    a100 = parse_topo((FACTS / "nvidia-smi-topo.txt").read_text())
    assert a100["nics"] == {"NIC0": "mlx5_0"} and a100["matrix"]["GPU0"]["GPU1"] == "NV12"
    assert a100["matrix"]["GPU5"]["NIC0"] == "SYS" and a100["numa"]["GPU6"] == 1
    pci = parse_lspci((FACTS / "lspci-vvv.txt").read_text())
    assert pci["0000:30:00.0"]["relaxed_ordering"] is True and pci["0000:30:00.0"]["numa"] == 0
    assert parse_numactl((FACTS / "numactl-H.txt").read_text())[1][:2] == [32, 33]


def plant(tmp_path: Path, old: str, new: str, file: str = "lspci-vvv.txt") -> Path:
    d = tmp_path / "facts"
    shutil.copytree(FACTS, d)
    text = (d / file).read_text()
    assert old in text
    (d / file).write_text(text.replace(old, new))
    return d


def host_check(facts: Path, host: str = "z0-c000", model: Path = TOPO / "fire-flyer-2.yaml") -> tuple[int, dict]:
    r = runner.invoke(app, ["host", "check", str(model), "--host", host, "--facts", str(facts), "--json"])
    assert "Traceback" not in r.output
    return r.exit_code, json.loads(r.output)


def test_clean_host_passes():
    code, d = host_check(FACTS)
    assert code == 0 and d["ok"] and d["mismatches"] == []


def test_nic_on_the_wrong_numa_node_is_flagged(tmp_path):
    facts = plant(tmp_path, "Mellanox Technologies Device 0007\n\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+\n\tNUMA node: 0",
                  "Mellanox Technologies Device 0007\n\tControl: I/O- Mem+ BusMaster+ SpecCycle- MemWINV- VGASnoop- ParErr- Stepping- SERR- FastB2B- DisINTx+\n\tNUMA node: 1")
    code, d = host_check(facts)
    assert code == 1 and any("mlx5_0" in m and "NUMA node 1" in m for m in d["mismatches"])


def test_relaxed_ordering_off_is_flagged(tmp_path):
    facts = plant(tmp_path, "RlxdOrd+ ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-\n\t\t\tMaxPayload 256 bytes, MaxReadReq 4096",
                  "RlxdOrd- ExtTag+ PhantFunc- AuxPwr- NoSnoop+ FLReset-\n\t\t\tMaxPayload 256 bytes, MaxReadReq 4096")
    code, d = host_check(facts)
    assert code == 1 and d["mismatches"] == ["NIC mlx5_0 (0000:30:00.0): PCIe relaxed ordering is off (DevCtl RlxdOrd-)"]


def test_missing_facts_are_an_error(tmp_path):
    r = runner.invoke(app, ["host", "check", str(TOPO / "fire-flyer-2.yaml"), "--host", "z0-c000", "--facts", str(tmp_path)])
    assert r.exit_code == 2 and "missing fact files" in r.output


def test_storage_node_with_extra_gpus_and_a_missing_nic_is_flagged():
    """A compute node's facts (8 GPUs, one HCA) on a storage node (no GPUs, two HCAs)."""
    code, d = host_check(FACTS, host="st000")
    assert code == 1
    unexpected = [m for m in d["mismatches"] if m.startswith("unexpected GPU at ")]
    assert len(unexpected) == 8 and "NVIDIA" in unexpected[0]
    assert "NIC mlx5_1: missing (lspci shows 1 NICs, the model has 2)" in d["mismatches"]


def test_model_bus_id_is_an_expectation(tmp_path):
    model_text = (TOPO / "fire-flyer-2.yaml").read_text()
    nic = "      - {name: mlx5_0, root_complex: "
    at = model_text.index(nic)  # the a100-pcie node type's HCA comes first
    end = model_text.index("}", at)
    (tmp_path / "ff2.yaml").write_text(model_text[:end] + ", bus_id: '0000:c1:00.0'" + model_text[end:])
    code, d = host_check(FACTS, model=tmp_path / "ff2.yaml")
    assert code == 1
    assert any(m.startswith("NIC mlx5_0: missing (the model expects it at 0000:c1:00.0") for m in d["mismatches"])
    assert any(m.startswith("unexpected NIC at 0000:30:00.0") for m in d["mismatches"])


def test_a_second_function_of_a_nic_is_not_a_second_nic(tmp_path):
    text = (FACTS / "lspci-vvv.txt").read_text()
    block = text[text.index("30:00.0 Infiniband"):]
    block = block[: block.find("\n\n") + 2] if "\n\n" in block else block + "\n"
    d = tmp_path / "facts"
    shutil.copytree(FACTS, d)
    (d / "lspci-vvv.txt").write_text(text.rstrip("\n") + "\n\n" + block.replace("30:00.0", "30:00.1", 1))
    code, out = host_check(d)
    assert code == 0, out


def test_ethernet_inventory_lists_the_switches_for_the_ssh_target(tmp_path):
    """`frr_switches`: every switch, read back by the FRR SSH target as the model's switches,
    with the site's management address taking effect; no switch gets host tuning."""
    from loom.fabrics.ethernet.ssh import inventory_switches

    f = load_fabric(TOPO / "roce-lab.yaml")
    files = inventory(f)
    hosts = yaml.safe_load(files["hosts.yml"])["all"]["children"]
    assert set(hosts["frr_switches"]["hosts"]) == {s.name for s in f.switches}
    first = f.switches[0]
    hv = yaml.safe_load(files[f"host_vars/{first.name}.yml"])
    assert hv["loom_asn"] == first.asn and hv["loom_loopback"] == first.loopback and hv["loom_plane"] == first.plane
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "host_vars" / f"{first.name}.yml").write_text(yaml.safe_dump({**hv, "ansible_host": "10.0.0.7"}))
    switches = {s.name: s for s in inventory_switches(f, tmp_path)}
    assert set(switches) == {s.name for s in f.switches} and switches[first.name].destination == "10.0.0.7"
    site = yaml.safe_load((Path(__file__).parent.parent / "ansible" / "site.yml").read_text())
    assert next(p for p in site if "host_tuning" in p.get("roles", []))["hosts"] == "all:!frr_switches"
