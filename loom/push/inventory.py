"""The SSH target's hosts from an Ansible inventory directory (what `loom inventory` writes, or a
site's own): the `subnet_managers` group of `hosts.yml`, with variables from
`group_vars/all.yml`, `group_vars/subnet_managers.yml` and `host_vars/<host>.yml` (later wins):

    ansible_host, ansible_port, ansible_user    where ssh connects (else the host name, which
                                                the user's ssh_config may resolve)
    loom_sm_priority                            OpenSM priority 0-15 (default: 15 for the
                                                model's `subnet_manager`, 1 for the others)
    opensm_conf_path, opensm_lfts_path,         where OpenSM's inputs live (Debian's defaults,
    opensm_cache_dir, opensm_log_path,          `loom.render.sm_host.SmPaths`); the opensm role reads
    opensm_pidfile                              the same variables

Every host must be a node of the model with a port on the subnet (its CA is where the QoS
read-back's directed routes start).
"""

from __future__ import annotations

from pathlib import Path

from loom.expand import Fabric
from loom.model import ModelError
from loom.model.reading import load_yaml
from loom.render.sm_host import INVENTORY_VARS

from .errors import PlanError
from .ssh import SmHost, host_from_dict

GROUP = "subnet_managers"


def _yaml(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = load_yaml(path, "inventory file")
    except ModelError as exc:
        raise PlanError(str(exc)) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PlanError(f"{path}: an inventory file must be a mapping; fix it or run `loom inventory` again")
    return data


def _group(hosts_yml: dict, path: Path) -> dict:
    """{host: inline vars} of the subnet_managers group, found at any depth of `children`."""
    def walk(node):
        if not isinstance(node, dict):
            return None
        for name, child in (node.get("children") or {}).items():
            if name == GROUP and isinstance(child, dict):
                return child.get("hosts") or {}
            found = walk(child)
            if found is not None:
                return found
        return None

    found = walk(hosts_yml.get("all", hosts_yml))
    if not found:
        raise PlanError(f"{path}: no hosts in the `{GROUP}` group; add the master and its standbys there")
    return found


def sm_hosts(fabric: Fabric, inventory: Path) -> list[SmHost]:
    """The subnet-manager hosts the inventory names, checked against the model."""
    hosts_file = inventory / "hosts.yml"
    if not hosts_file.is_file():
        raise PlanError(f"{hosts_file} does not exist: write it with `loom inventory` or pass --inventory DIR")
    common = _yaml(inventory / "group_vars" / "all.yml") | _yaml(inventory / "group_vars" / f"{GROUP}.yml")
    out = []
    for name, inline in _group(_yaml(hosts_file), hosts_file).items():
        v = common | _yaml(inventory / "host_vars" / f"{name}.yml") | (inline if isinstance(inline, dict) else {})
        if name not in fabric.node_index:
            raise PlanError(f"{hosts_file}: subnet manager {name!r} is not a node of {fabric.name}; name model nodes there")
        ports = [p for p in fabric.ports if p.node == fabric.node_index[name] and p.plane == 0]
        if not ports:
            raise PlanError(f"{hosts_file}: subnet manager {name!r} has no port on the fabric")
        default_prio = 15 if name == fabric.model.subnet_manager else 1
        out.append(host_from_dict({
            "name": name, "destination": v.get("ansible_host"), "user": v.get("ansible_user"), "port": v.get("ansible_port"),
            "priority": v.get("loom_sm_priority", default_prio), "ca": ports[0].ca,
            "paths": {k: v[var] for k, var in INVENTORY_VARS.items() if var in v}}, str(hosts_file)))
    return out
