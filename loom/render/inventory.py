"""The Ansible inventory of a fabric: `hosts.yml` (groups by role, zone, plane, rack, node type,
and `subnet_managers`), `group_vars/nodetype_<type>.yml` with the host settings derived for the
node type, `host_vars/<host>.yml` with what is the host's own (zone, rack, RU, fabric ports; serial, asset
tag and port MACs when NetBox records them, see docs/netbox.md),
and for the subnet managers of an InfiniBand fabric what the `opensm` role installs:
`group_vars/subnet_managers.yml` (QoS options, where the tables are), `files/lfts.dump`,
`files/guid2lid` and `loom_sm_priority` (15, the master) in the SM host's host_vars.
An Ethernet fabric's switches form the `frr_switches` group, the hosts of its SSH target
(`loom.fabrics.ethernet.ssh`), each with its plane, zone, rack, ASN and loopback; `ansible_host` is
the site's to add (a management address Loom does not know).  The host-tuning play leaves them out."""

from __future__ import annotations

from collections import defaultdict

import yaml

from loom.expand import Fabric
from loom.host import derive


class _Dumper(yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper):
    """Multi-line strings (options files, NCCL topology) as literal blocks, readable in a diff.
    libyaml's emitter where PyYAML has it: 3.5× faster (fire-flyer-2's 1,411 files: 1.24 →
    0.35 s), the same text for every reference fabric; only strings no model holds (long
    quoted ones with escapes) can fold at other places, to the same values."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None))


def _dump(data) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=True, default_flow_style=False, width=120)


def networkd(configs, node: int) -> dict:
    """Ethernet planes (`configs`: the fabric's `RoceConfigs`, None on InfiniBand): the host's NIC
    addressing and per-NIC source routing for host_tuning."""
    if configs is None:
        return {}
    files = configs.host(node)
    return {"host_tuning_networkd": {k: v for k, v in files.items() if k.endswith(".network")}}


def _asset(fabric: Fabric, name: str) -> dict:
    """Serial and asset tag NetBox records for the host (`loom netbox import`), if any."""
    a = fabric.assets.get(name)
    return {f"loom_{k}": v for k, v in (("serial", a.serial), ("asset_tag", a.asset_tag)) if v} if a else {}


def _mac(fabric: Fabric, name: str, port: str) -> dict:
    a = fabric.assets.get(name)
    return {"mac": a.macs[port]} if a and port in a.macs else {}


def inventory(fabric: Fabric) -> dict[str, str]:
    """Relative path → file text."""
    groups: dict[str, set[str]] = defaultdict(set)
    host_vars = {}
    ports = defaultdict(list)
    for p in fabric.ports:
        ports[p.node].append(p)
    from loom.render.roce import RoceConfigs

    from loom.expand.partitions import memberships
    from loom.host.partitions import host_partitions

    configs = RoceConfigs(fabric) if fabric.technology == "ethernet" else None
    parts = memberships(fabric)
    for n in fabric.nodes:
        groups[f"role_{n.role}"].add(n.name)
        groups[f"nodetype_{n.node_type}".replace("-", "_")].add(n.name)
        groups[f"rack_{n.rack}"].add(n.name)
        for z in n.zones:
            groups[f"zone_{z}"].add(n.name)
        for p in ports[n.index]:
            groups[f"plane_{p.plane}"].add(n.name)
        host_vars[n.name] = networkd(configs, n.index) | {
            "loom_fabric": fabric.name, "loom_node_type": n.node_type, "loom_role": n.role, "loom_zones": list(n.zones),
            "loom_rack": n.rack, "loom_ru": n.ru,
            "loom_ports": [{"nic": p.nic, "port": p.port, "plane": p.plane, "zone": p.zone,
                            **({"lid": p.lid, "guid": f"0x{p.guid:016x}"} if fabric.technology == "infiniband"
                               else {"address": p.address}),
                            **_mac(fabric, n.name, f"{p.nic}/{p.port}")} for p in ports[n.index]],
        } | _asset(fabric, n.name) | host_partitions(parts, n.name)
    if fabric.technology == "ethernet":
        for sw in fabric.switches:
            groups["frr_switches"].add(sw.name)
            host_vars[sw.name] = {"loom_fabric": fabric.name, "loom_role": sw.role, "loom_zone": sw.zone,
                                  "loom_plane": sw.plane, "loom_rack": sw.rack, "loom_ru": sw.ru, "loom_asn": sw.asn,
                                  "loom_loopback": sw.loopback} | _asset(fabric, sw.name)
    files: dict[str, str] = {}
    if fabric.model.subnet_manager:
        groups["subnet_managers"].add(fabric.model.subnet_manager)
        if fabric.technology == "infiniband":
            host_vars[fabric.model.subnet_manager]["loom_sm_priority"] = 15
            files |= subnet_manager_files(fabric)
    files["hosts.yml"] = _dump({"all": {"children": {g: {"hosts": {h: None for h in sorted(hs)}}
                                                      for g, hs in sorted(groups.items())}}})
    for name, vars_ in host_vars.items():
        files[f"host_vars/{name}.yml"] = _dump(vars_)
    for nt in sorted({n.node_type for n in fabric.nodes}):
        intent = derive(fabric.model, nt)
        files[f"group_vars/nodetype_{nt.replace('-', '_')}.yml"] = _dump({
            "host_tuning_gpus": len(fabric.model.node_types[nt].gpus),  # 0: the role leaves the NVIDIA settings out
            "host_tuning_nccl_env": intent.env,
            "host_tuning_topology_xml": intent.topology_xml,
            "host_tuning_gpu_nic_pairs": [{"gpu": p.gpu, "nic": p.nic, "distance": p.distance, "numa": p.numa, "cpus": p.cpus}
                                          for p in intent.pairs],
            "host_tuning_nic_irq_cpus": intent.nic_cpus,
            "host_tuning_nic_numa": intent.nic_numa,
            "host_tuning_relaxed_ordering": intent.relaxed_ordering,
            "host_tuning_memlock": intent.memlock,
        })
    return files


def subnet_manager_files(fabric: Fabric) -> dict[str, str]:
    """The opensm role's inputs: the tables `loom route` computes (OpenSM's file engine), the
    pinned LIDs, the QoS options of the model's traffic classes (`qos FALSE` without) and,
    with partitions, OpenSM's `partitions.conf`."""
    from loom.qos import plan_qos
    from loom.render.opensm_qos import options_conf
    from loom.render.opensm import guid2lid, lfts_dump
    from loom.render.partitions import partitions_conf
    from loom.routing import route

    tables = route(fabric)[0]
    qos = plan_qos(fabric.model)
    partitions = partitions_conf(fabric)
    return {
        "group_vars/subnet_managers.yml": _dump({
            "opensm_qos_options": options_conf(fabric.name, fabric.model, qos),
            "opensm_lfts_src": "{{ inventory_dir }}/files/lfts.dump",
            "opensm_guid2lid_src": "{{ inventory_dir }}/files/guid2lid",
            **({"opensm_partitions_src": "{{ inventory_dir }}/files/partitions.conf"} if partitions else {}),
        }),
        "files/lfts.dump": lfts_dump(tables),
        "files/guid2lid": guid2lid(tables),
        **({"files/partitions.conf": partitions} if partitions else {}),
    }
