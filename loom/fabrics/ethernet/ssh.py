"""The SSH target of an Ethernet fabric: its switches' FRR (SONiC's bgp container, or FRR on a
Linux switch), reached with the same transport as the subnet-manager hosts (`loom.push.ssh`:
the system OpenSSH client, the user's ssh_config and agent, one multiplexed connection per
switch, `BatchMode`).

What runs on a switch is `vtysh` (running configuration, BGP summary), `ip -j route` (the
kernel FIB) and FRR's own `frr-reload.py --reload` on a configuration staged with `mktemp`
(removed afterwards).  The switches come from the inventory's `frr_switches` group (hosts.yml,
with group_vars/all.yml, group_vars/frr_switches.yml, host_vars/<switch>.yml; later wins):

    ansible_host, ansible_port, ansible_user    where ssh connects (else the switch's name)
    frr_reload_path                             default /usr/lib/frr/frr-reload.py

The ssh user must be allowed to run vtysh and frr-reload.py (root, or a member of `frrvty`
with write access to FRR's configuration).  Plans record names, ports, users and paths; never keys.
"""

from __future__ import annotations

import atexit
import shlex
from dataclasses import dataclass
from pathlib import Path

from loom.expand import Fabric

from loom.push.errors import PlanError
from loom.files import remove_temps
from .answers import bgp_peers, kernel_routes
from .plan import parallel
from loom.push.ssh import Connection, SshError, clean, close_all, control_dir, read_inventory_yaml
from loom.push.state import ssh_state_dir as state_dir

GROUP = "frr_switches"
RELOAD = "/usr/lib/frr/frr-reload.py"


@dataclass(frozen=True)
class FrrSwitch:
    """One switch as the inventory names it (what `ssh.Connection` needs, and frr-reload's path)."""

    name: str
    destination: str
    user: str | None
    port: int | None
    reload: str = RELOAD

    def as_dict(self) -> dict:
        return {"name": self.name, "destination": self.destination, "user": self.user, "port": self.port,
                "reload": self.reload}


def switch_from_dict(raw: dict, where: str) -> FrrSwitch:
    if not isinstance(raw, dict):
        raise PlanError(f"{where}: a switch must be a mapping; run `loom plan` again")
    port, user = raw.get("port"), raw.get("user")
    if port is not None and not (isinstance(port, int) and 0 < port < 65536):
        raise PlanError(f"{where}: ssh port {port!r} of {raw.get('name')!r} is not 1-65535; fix the inventory")
    reload = clean(raw.get("reload") or RELOAD, "frr_reload_path", where)
    if not reload.startswith("/"):
        raise PlanError(f"{where}: frr_reload_path {reload!r} must be an absolute path; fix the inventory")
    return FrrSwitch(clean(raw.get("name"), "switch", where), clean(raw.get("destination") or raw.get("name"), "host", where),
                     clean(user, "user", where) if user is not None else None, port, reload)


def inventory_switches(fabric: Fabric, inventory: Path) -> list[FrrSwitch]:
    """The switches of the inventory's `frr_switches` group, checked against the model."""
    hosts_file = Path(inventory) / "hosts.yml"
    if not hosts_file.is_file():
        raise PlanError(f"{hosts_file} does not exist: list the switches in its `{GROUP}` group or pass --inventory DIR")
    group = ((read_inventory_yaml(hosts_file).get("all") or {}).get("children") or {}).get(GROUP) or {}
    members = group.get("hosts") or {} if isinstance(group, dict) else {}
    if not members:
        raise PlanError(f"{hosts_file}: no hosts in the `{GROUP}` group; list the fabric's switches there")
    common = read_inventory_yaml(Path(inventory) / "group_vars" / "all.yml") | read_inventory_yaml(Path(inventory) / "group_vars" / f"{GROUP}.yml")
    names = {s.name for s in fabric.switches}
    out = []
    for name, inline in members.items():
        if name not in names:
            raise PlanError(f"{hosts_file}: {name!r} in `{GROUP}` is not a switch of {fabric.name}")
        v = common | read_inventory_yaml(Path(inventory) / "host_vars" / f"{name}.yml") | (inline if isinstance(inline, dict) else {})
        out.append(switch_from_dict({"name": name, "destination": v.get("ansible_host"), "user": v.get("ansible_user"),
                                     "port": v.get("ansible_port"), "reload": v.get("frr_reload_path")}, str(hosts_file)))
    return out


class FrrSshTarget:
    """An Ethernet fabric's switches over SSH (see the module docstring)."""

    kind = "ssh"

    def __init__(self, switches: list[FrrSwitch], dir: Path, ssh_config: str | None = None) -> None:
        self.by_name = {s.name: s for s in switches}
        self.dir = Path(dir)
        self.ssh_config = ssh_config
        self._control = control_dir()
        self._conns = {s.name: Connection(s, ssh_config, self._control) for s in switches}
        atexit.register(self.close)

    @classmethod
    def from_inventory(cls, fabric: Fabric, inventory: Path, ssh_config: str | None = None) -> "FrrSshTarget":
        return cls(inventory_switches(fabric, inventory), state_dir(fabric.name), ssh_config)

    @classmethod
    def from_spec(cls, spec: dict, dir: Path, where: str = "the plan") -> "FrrSshTarget":
        switches = spec.get("switches")
        if not isinstance(switches, list) or not switches:
            raise PlanError(f"{where}: its ssh target lists no switches; run `loom plan` again")
        cfg = spec.get("ssh_config")
        return cls([switch_from_dict(s, where) for s in switches], dir, clean(cfg, "ssh_config", where) if cfg else None)

    def spec(self) -> dict:
        return {"kind": self.kind, "technology": "ethernet", "ssh_config": self.ssh_config,
                "switches": [s.as_dict() for s in self.by_name.values()]}

    def where(self) -> str:
        return f"{len(self.by_name)} switches over ssh"

    def _run(self, switch: str, script: str, stdin: str | None = None, timeout: float = 120) -> str:
        return self._conns[switch].run(script, stdin=stdin, timeout=timeout).stdout

    def health(self) -> None:
        """Every switch answers and its FRR runs (vtysh reaches zebra)."""
        parallel(lambda s: self._run(s, "vtysh -d zebra -c 'show version' >/dev/null", timeout=30), list(self.by_name))

    def cabled_as(self, fabric: Fabric) -> bool:
        return True  # the FIB read-back catches a switch cabled otherwise (its next hops differ)

    def switches(self) -> list[str]:
        return list(self.by_name)

    def running_config(self, switch: str) -> str:
        return self._run(switch, "vtysh -c 'show running-config no-header'")

    def reload(self, switch: str, config: str) -> None:
        reload = shlex.quote(self.by_name[switch].reload)
        try:
            self._run(switch, f'f=$(mktemp) || exit 1; cat > "$f"; {reload} --reload --stdout "$f" >/dev/null; rc=$?; '
                              f'rm -f "$f"; exit $rc', stdin=config, timeout=300)
        except SshError as exc:
            raise SshError(f"frr-reload.py failed on {switch}: {exc}") from None

    def links(self, switch: str) -> str:
        return self._run(switch, "ip -j link")

    def fib(self, switch: str) -> dict[str, set[str]]:
        return kernel_routes(self._run(switch, "ip -j route"), switch)

    def peers(self, switch: str) -> dict[str, str]:
        res = self._conns[switch].run("vtysh -d bgpd -c 'show bgp summary json'", ok=(0, 1))
        return bgp_peers(res.stdout, switch) if res.returncode == 0 else {}  # 1: no bgpd (static routing, or down)

    def neighbours(self, switch: str) -> str:
        return self._run(switch, "vtysh -d bgpd -c 'show bgp neighbors json'", timeout=30)

    def clean_leftovers(self) -> None:
        if self.dir.exists():
            remove_temps(self.dir)

    def close(self) -> None:
        close_all(self._conns.values(), self._control)
