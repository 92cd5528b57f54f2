"""Subnet-manager hosts for the SSH target's tests, made of real parts on 127.0.0.1:

- one ibsim carrying the model's fabric (own socket name);
- a throwaway non-root user (unique name, removed afterwards) that logs in with a throwaway key;
- per SM host an OpenSSH server on 127.0.0.1 on a free port with its own host key, whose
  `SetEnv` attaches the session to the simulated fabric at that host's CA (`SIM_HOST`,
  `IBSIM_SOCKNAME`) and puts `~/simbin` first on PATH: wrappers that run `dump_fts`, `python3`
  and `opensm` with umad2sim preloaded, OpenSM also with `tests/umad_timeouts.c` (built here):
  the kernel's MAD timeouts, which umad2sim lacks (without them a trap 144 that ibsim drops the
  answer to stalls the OpenSM that sent it for ever; see that file).  The user reaches ibsim because its control socket is an
  abstract unix socket (no file permissions); umad2sim writes `sys-<pid>` trees in the cwd, so
  every remote command runs in a scratch directory the user owns;
- per SM host an OpenSM run as that user with the role's files (options with Loom's block, the
  unit's arguments), its own cache/log directory under the user's home and a pid file;
- an ssh_config naming the hosts by their model names (the SSH target resolves them through it)
  and an inventory whose `subnet_managers` group lists them with their paths.

Everything is stopped (by the pids this module started) and removed on exit, also on failure.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.lifecycle import Started
from tests.load import wait_for

from loom.expand import Fabric
from loom.render.sm_host import SmPaths, managed_block, merge
from loom.fabrics.infiniband.sim import UMAD2SIM, SimFabric
from loom.render.opensm import guid2lid
from loom.routing import route

# the site's own settings, which Loom's block must keep: a fast failover (poll the master every
# second, 2 misses) and dumps in the host's directory; its `sm_priority` and `sweep_on_trap FALSE`
# are Loom's keys, commented out by Loom's block (a returning master takes over by the trap 144)
SITE_CONF = "# site settings\nsweep_on_trap FALSE\nsminfo_polling_timeout 1000\npolling_retry_number 2\ndump_files_dir {root}\nsm_priority 3\n"
TIMEOUTS_SRC = Path(__file__).with_name("umad_timeouts.c")
WRAPPED = {"dump_fts": "/usr/sbin/dump_fts", "python3": "/usr/bin/python3", "opensm": "/usr/sbin/opensm",
           "smpquery": "/usr/sbin/smpquery", "ibnetdiscover": "/usr/sbin/ibnetdiscover", "sminfo": "/usr/sbin/sminfo",
           "saquery": "/usr/sbin/saquery"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def log_text(log: Path) -> str:
    return log.read_text(errors="replace") if log.exists() else ""


def sweeps(log: Path) -> int:
    return log_text(log).count("SUBNET UP")


@dataclass
class SmHostRun:
    name: str
    ca: str
    priority: int
    root: Path
    port: int = 0
    sshd: subprocess.Popen | None = None

    @property
    def paths(self) -> SmPaths:
        r = str(self.root)
        return SmPaths(conf=f"{r}/opensm.conf", lfts=f"{r}/loom-lfts.dump", cache_dir=r, log=f"{r}/opensm.log",
                       pidfile=f"{r}/opensm.pid", partitions=f"{r}/partitions.conf")


@dataclass
class SmPair(Started):
    """ibsim + a master and a standby SM host behind sshd, as a context manager."""

    fabric: Fabric
    work: Path
    names: tuple[str, ...]
    user: str = field(default_factory=lambda: f"loomt{uuid.uuid4().hex[:8]}")
    hosts: list[SmHostRun] = field(default_factory=list)
    sim: SimFabric | None = None

    # ------------------------------------------------------------------ set-up
    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        subprocess.run(["useradd", "-m", "-s", "/bin/sh", self.user], check=True, capture_output=True)
        subprocess.run(["usermod", "-p", "*", self.user], check=True, capture_output=True)  # unlocked, no password
        pw = pwd.getpwnam(self.user)
        self.home = Path(pw.pw_dir)
        key = self.work / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        ssh_dir = self.home / ".ssh"
        ssh_dir.mkdir(mode=0o700)
        (ssh_dir / "authorized_keys").write_text(key.with_suffix(".pub").read_text())
        simbin = self.home / "simbin"
        simbin.mkdir()
        timeouts = simbin / "umad_timeouts.so"
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-Werror", "-o", str(timeouts), str(TIMEOUTS_SRC),
                        "-ldl", "-lpthread"], check=True, capture_output=True)
        for tool, path in WRAPPED.items():
            preload = f"'{UMAD2SIM} {timeouts}'" if tool == "opensm" else UMAD2SIM
            (simbin / tool).write_text(f'#!/bin/sh\nLD_PRELOAD={preload} exec {path} "$@"\n')
            (simbin / tool).chmod(0o755)
        self.sim = SimFabric(self.fabric, self.work / "ibsim").start()
        tables = route(self.fabric)[0]
        g2l = guid2lid(tables)
        for i, name in enumerate(self.names):
            ca = next(p.ca for p in self.fabric.ports if p.plane == 0 and self.fabric.nodes[p.node].name == name)
            h = SmHostRun(name, ca, 15 if i == 0 else 1, self.home / name)
            h.root.mkdir()
            paths = h.paths
            Path(paths.conf).write_text(merge(SITE_CONF.format(root=h.root), managed_block(paths, h.priority, "qos FALSE\n")))
            Path(paths.guid2lid).write_text(g2l)
            self.hosts.append(h)
        subprocess.run(["chown", "-R", f"{self.user}:{self.user}", str(self.home)], check=True)
        Path("/run/sshd").mkdir(exist_ok=True)
        known = []
        for h in self.hosts:
            self._start_sshd(h)
            known.append(f"[127.0.0.1]:{h.port} " + (self.work / f"hostkey-{h.name}.pub").read_text().strip())
        (self.work / "known_hosts").write_text("\n".join(known) + "\n")
        self.ssh_config = self.work / "ssh_config"
        self.ssh_config.write_text("".join(
            f"Host {h.name}\n  HostName 127.0.0.1\n  Port {h.port}\n  User {self.user}\n  IdentityFile {key}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {self.work / 'known_hosts'}\n  StrictHostKeyChecking yes\n"
            for h in self.hosts))
        self.inventory = self.work / "inventory"
        self.write_inventory()
        for h in self.hosts:  # the master first: it owns the subnet, the standby then polls it
            self.start_opensm(h)
            wait_for(f"SUBNET UP from {h.name}" if h is self.hosts[0] else f"{h.name} in STANDBY",
                     lambda h=h: sweeps(Path(h.paths.log)) > 0 if h is self.hosts[0]
                     else "Entering STANDBY state" in log_text(Path(h.paths.log)))

    def write_inventory(self) -> None:
        hosts = {}
        for h in self.hosts:
            p = h.paths
            hosts[h.name] = {"loom_sm_priority": h.priority, "opensm_conf_path": p.conf, "opensm_lfts_path": p.lfts,
                             "opensm_cache_dir": p.cache_dir, "opensm_log_path": p.log, "opensm_pidfile": p.pidfile,
                             "opensm_partitions_path": p.partitions}
        self.inventory.mkdir(exist_ok=True)
        (self.inventory / "hosts.yml").write_text(yaml.safe_dump(
            {"all": {"children": {"subnet_managers": {"hosts": hosts}}}}))

    def _start_sshd(self, h: SmHostRun) -> None:
        hostkey = self.work / f"hostkey-{h.name}"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(hostkey)], check=True)
        h.port = free_port()
        conf = self.work / f"sshd-{h.name}.conf"
        conf.write_text(
            f"Port {h.port}\nListenAddress 127.0.0.1\nHostKey {hostkey}\nPidFile {self.work / f'sshd-{h.name}.pid'}\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin no\n"
            f"AllowUsers {self.user}\nAuthorizedKeysFile .ssh/authorized_keys\nMaxSessions 50\nMaxStartups 50\n"
            f"SetEnv SIM_HOST={h.ca} IBSIM_SOCKNAME={self.sim.sock} "
            f"PATH={self.home}/simbin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin\n")
        h.sshd = subprocess.Popen(["/usr/sbin/sshd", "-D", "-f", str(conf), "-E", str(self.work / f"sshd-{h.name}.log")],
                                  start_new_session=True)
        wait_for(f"sshd of {h.name}", lambda: _listening(h.port), 20)

    def start_opensm(self, h: SmHostRun, *extra: str) -> None:
        """OpenSM as the unit of the opensm role runs it (`-F` options, `-f` log), started by the
        user over its own ssh login (so it is the user's process, as a root-run OpenSM is root's),
        with its pid file; `extra` options after the unit's (a test's fault, e.g. `-d0`)."""
        p = h.paths
        cmd = (f"cd {h.root} && OSM_CACHE_DIR={p.cache_dir} OSM_TMP_DIR={p.cache_dir} setsid opensm -F {p.conf} -f {p.log} "
               f"-s 0 -d2 -D 0x43 {' '.join(extra)} >>{h.root}/opensm.out 2>&1 </dev/null & echo $! > {p.pidfile}")
        subprocess.run(["ssh", "-F", str(self.ssh_config), h.name, cmd], check=True, capture_output=True, timeout=30)

    def opensm_pid(self, h: SmHostRun) -> int | None:
        try:
            return int(Path(h.paths.pidfile).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill_opensm(self, h: SmHostRun) -> None:
        pid = self.opensm_pid(h)
        if pid and Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)
            wait_for(f"OpenSM of {h.name} to die", lambda: not Path(f"/proc/{pid}").exists() or
                     Path(f"/proc/{pid}/stat").read_text().split(")")[1].split()[0] == "Z", 10)

    # ------------------------------------------------------------------ reading as root
    def dump_fts(self) -> str:
        return self.sim.run(["dump_fts"]).stdout

    # ------------------------------------------------------------------ tear-down
    def stop(self) -> None:
        for h in self.hosts:
            self.kill_opensm(h)
            if h.sshd and h.sshd.poll() is None:
                os.killpg(h.sshd.pid, signal.SIGTERM)
                h.sshd.wait(10)
        if self.sim:
            self.sim.stop()
        subprocess.run(["userdel", "-r", "-f", self.user], capture_output=True)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def tools_missing() -> list[str]:
    return [t for t in ("/usr/sbin/sshd", "ssh", "useradd", "gcc") if shutil.which(t) is None]
