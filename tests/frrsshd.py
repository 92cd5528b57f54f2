"""The live lab's switches behind one OpenSSH server on 127.0.0.1, for the Ethernet SSH target's
tests: each switch is a `Host` of a private ssh_config (127.0.0.1, a port of its own, so ssh keeps one
multiplexed connection per switch as it would for real switches) whose `SetEnv
LOOM_SWITCH=<switch>` tells the session which switch it is on; the server accepts that variable
and puts wrappers first on PATH that run `vtysh`, `ip` and frr-reload.py against that switch's
FRR and namespace.  Root logs in with a throwaway key (`ip -n` needs it); the server listens on
127.0.0.1 only, on free ports, with its own host key, and is stopped by its pid file, also
when a test fails.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import yaml

from loom.fabrics.ethernet.lab import FRR_RELOAD, FrrLab

from .lifecycle import Started
from .load import wait_for
from .sshfabric import _listening, free_port

MAX_LISTEN = 16  # sshd's MAX_LISTEN_SOCKS
WRAPPERS = {
    "vtysh": 'exec /usr/bin/vtysh --vty_socket "$(cat {map}/$LOOM_SWITCH.vty)" "$@"',
    "ip": 'exec /usr/bin/ip -n "$(cat {map}/$LOOM_SWITCH.ns)" "$@"',
    # niced as the lab's own reloads are (loom.fabrics.ethernet.lab.FrrLab.reload): every switch shares these cores
    "frr-reload": 'd="$(cat {map}/$LOOM_SWITCH.vty)"; exec nice -n 10 {reload} --vty_socket "$d" --confdir "$d" --rundir "$d" "$@"',
}


class SwitchesOverSsh(Started):
    def __init__(self, lab: FrrLab, root: Path) -> None:
        self.lab, self.root = lab, Path(root)
        self.ports = {name: free_port() for name in lab.switches()}
        self.key, self.ssh_config, self.inventory = self.root / "key", self.root / "ssh_config", self.root / "inventory"

    def start(self) -> None:
        r = self.root
        (r / "map").mkdir(parents=True)
        (r / "bin").mkdir()
        for name in self.lab.switches():
            (r / "map" / f"{name}.vty").write_text(str(self.lab.runtime(name)))
            (r / "map" / f"{name}.ns").write_text(self.lab.netns(name))
        for tool, body in WRAPPERS.items():
            (r / "bin" / tool).write_text("#!/bin/sh\n" + body.format(map=r / "map", reload=FRR_RELOAD) + "\n")
            (r / "bin" / tool).chmod(0o755)
        for key in (self.key, r / "hostkey"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        (r / "authorized_keys").write_text(Path(f"{self.key}.pub").read_text())
        ports = list(self.ports.values())
        for i in range(0, len(ports), MAX_LISTEN):  # sshd listens on at most 16 sockets
            (r / f"sshd{i}.conf").write_text(
                "".join(f"Port {p}\n" for p in ports[i:i + MAX_LISTEN]) + f"ListenAddress 127.0.0.1\nHostKey {r / 'hostkey'}\n"
                f"PidFile {r / f'sshd{i}.pid'}\nAuthorizedKeysFile {r / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
                f"PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nAcceptEnv LOOM_SWITCH\n"
                # one server plays every switch: loom opens a connection to each at once, and sshd's
                # default MaxStartups (10:30:100) drops 30 % of the handshakes beyond ten
                # ("kex_exchange_identification: Connection reset by peer"), which real switches,
                # each with its own server, never see
                f"MaxStartups 100\nMaxSessions 100\n"
                f"SetEnv PATH={r / 'bin'}:/usr/bin:/bin:/usr/sbin:/sbin\n")
        self.ssh_config.write_text("".join(
            f"Host {name}\n  HostName 127.0.0.1\n  Port {port}\n  User root\n  IdentityFile {self.key}\n"
            f"  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile {r / 'known_hosts'}\n"
            f"  SetEnv LOOM_SWITCH={name}\n" for name, port in self.ports.items()))
        (self.inventory / "group_vars").mkdir(parents=True)
        (self.inventory / "hosts.yml").write_text(yaml.safe_dump(
            {"all": {"children": {"frr_switches": {"hosts": {n: None for n in self.lab.switches()}}}}}))
        (self.inventory / "group_vars" / "frr_switches.yml").write_text(
            yaml.safe_dump({"frr_reload_path": str(r / "bin" / "frr-reload")}))
        Path("/run/sshd").mkdir(exist_ok=True)
        for conf in sorted(r.glob("sshd*.conf")):
            subprocess.run(["/usr/sbin/sshd", "-f", str(conf), "-E", str(conf.with_suffix(".log"))], check=True)
        wait_for(f"sshd to listen on its ports of 127.0.0.1 (see {r}/sshd*.log)",
                 lambda: all(_listening(p) for p in self.ports.values()), 20)

    def stop(self) -> None:
        for pidfile in self.root.glob("sshd*.pid"):
            try:
                os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
