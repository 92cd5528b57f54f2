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

from dataclasses import dataclass
from pathlib import Path

from loom.expand import Fabric
from loom.render.sm_host import INVENTORY_VARS, SmPaths

from loom.push.errors import PlanError
from loom.push.ssh import clean, read_inventory_yaml

GROUP = "subnet_managers"


@dataclass(frozen=True)
class SmHost:
    """One subnet-manager host as the inventory names it."""

    name: str  # inventory name (a node of the model)
    destination: str  # what ssh connects to (ansible_host, else the name: ssh_config may resolve it)
    user: str | None
    port: int | None
    priority: int  # OpenSM's sm_priority: the highest is the master
    ca: str  # the host's CA in the simulated sense: where directed routes start (QoS read-back)
    paths: SmPaths
    lid: int | None = None  # the LID of its port (pinned by the model): where its SMInfo is asked (`sminfo.py`)

    def as_dict(self) -> dict:
        return {"name": self.name, "destination": self.destination, "user": self.user, "port": self.port,
                "priority": self.priority, "ca": self.ca, "paths": self.paths.as_dict(), "lid": self.lid}


def host_from_dict(raw: dict, where: str) -> SmHost:
    if not isinstance(raw, dict):
        raise PlanError(f"{where}: a subnet-manager host must be a mapping; run `loom plan` again")
    paths = raw.get("paths") or {}
    if not isinstance(paths, dict) or set(paths) - set(SmPaths().as_dict()):
        raise PlanError(f"{where}: unknown OpenSM paths {sorted(set(paths) - set(SmPaths().as_dict()))}; "
                        f"known: {sorted(SmPaths().as_dict())}")
    for k, v in paths.items():
        if not clean(v, INVENTORY_VARS[k], where).startswith("/"):
            raise PlanError(f"{where}: {INVENTORY_VARS[k]} {v!r} must be an absolute path; fix the inventory")
    port, prio = raw.get("port"), raw.get("priority", 0)
    if port is not None and not (isinstance(port, int) and 0 < port < 65536):
        raise PlanError(f"{where}: ssh port {port!r} of {raw.get('name')!r} is not 1-65535; fix the inventory")
    if not (isinstance(prio, int) and 0 <= prio <= 15):
        raise PlanError(f"{where}: loom_sm_priority {prio!r} of {raw.get('name')!r} is not 0-15 (OpenSM's range)")
    user, lid = raw.get("user"), raw.get("lid")
    if lid is not None and not (isinstance(lid, int) and 0 < lid < 0xC000):
        raise PlanError(f"{where}: LID {lid!r} of {raw.get('name')!r} is not a unicast LID; run `loom plan` again")
    return SmHost(clean(raw.get("name"), "host", where), clean(raw.get("destination") or raw.get("name"), "host", where),
                  clean(user, "user", where) if user is not None else None, port, prio,
                  clean(raw.get("ca"), "CA", where), SmPaths(**paths), lid)


def _group(hosts_yml: dict, path: Path) -> dict:
    """{host: inline vars} of the subnet_managers group, found at any depth of `children`."""
    def walk(node):
        if not isinstance(node, dict):
            return None
        children = node.get("children") or {}
        if not isinstance(children, dict):
            raise PlanError(f"{path}: `children` must be a mapping of group names; fix the inventory")
        for name, child in children.items():
            if name == GROUP and isinstance(child, dict):
                return child.get("hosts") or {}
            found = walk(child)
            if found is not None:
                return found
        return None

    found = walk(hosts_yml.get("all", hosts_yml))
    if found is not None and not isinstance(found, dict):
        raise PlanError(f"{path}: the hosts of the `{GROUP}` group must be a mapping (host: variables); fix the inventory")
    if not found:
        raise PlanError(f"{path}: no hosts in the `{GROUP}` group; add the master and its standbys there")
    return found


def sm_hosts(fabric: Fabric, inventory: Path) -> list[SmHost]:
    """The subnet-manager hosts the inventory names, checked against the model."""
    hosts_file = inventory / "hosts.yml"
    if not hosts_file.is_file():
        raise PlanError(f"{hosts_file} does not exist: write it with `loom inventory` or pass --inventory DIR")
    common = read_inventory_yaml(inventory / "group_vars" / "all.yml") | read_inventory_yaml(inventory / "group_vars" / f"{GROUP}.yml")
    out = []
    for name, inline in _group(read_inventory_yaml(hosts_file), hosts_file).items():
        v = common | read_inventory_yaml(inventory / "host_vars" / f"{name}.yml") | (inline if isinstance(inline, dict) else {})
        if name not in fabric.node_index:
            raise PlanError(f"{hosts_file}: subnet manager {name!r} is not a node of {fabric.name}; name model nodes there")
        ports = [p for p in fabric.ports if p.node == fabric.node_index[name] and p.plane == 0]
        if not ports:
            raise PlanError(f"{hosts_file}: subnet manager {name!r} has no port on the fabric")
        default_prio = 15 if name == fabric.model.subnet_manager else 1
        out.append(host_from_dict({
            "name": name, "destination": v.get("ansible_host"), "user": v.get("ansible_user"), "port": v.get("ansible_port"),
            "priority": v.get("loom_sm_priority", default_prio), "ca": ports[0].ca, "lid": ports[0].lid,
            "paths": {k: v[var] for k, var in INVENTORY_VARS.items() if var in v}}, str(hosts_file)))
    return out
