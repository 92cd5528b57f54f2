"""The SSH target: the fabric's subnet-manager hosts, a master and its standbys, reached with the
system OpenSSH client — so the user's `ssh_config`, agent, ProxyJump and known_hosts all apply —
over one multiplexed connection per host (ControlMaster; the control sockets live in a private
0700 directory removed at the end).

What runs on the hosts is plain POSIX sh and the tools OpenSM's hosts have: `dump_fts` for the
tables, `python3` with libibmad for QoS by directed route (`loom.push.madquery`, sent as the
command's text: nothing of loom is installed there), `mktemp` + `mv` for atomic writes, and
`systemctl restart opensm` (or the pid file's OpenSM started again as it was, where systemd
does not run it: `loom.push.restart_opensm`) for the push; the sweep is awaited in OpenSM's
log ("SUBNET UP").

Every host gets the same input files (tables, guid2lid, Loom's options block merged into the
host's own options file, `loom.render.sm_host`) before the master reloads, so a failover serves the
same tables; `standby_drift` names standbys that hold other files.  Nothing secret is kept:
the plan records host names, ports, users and paths, never keys; the ssh client gets the
caller's environment (agent socket) but nothing is logged from it.
"""

from __future__ import annotations

import atexit
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from loom.expand import Fabric
from loom.render.sm_host import INVENTORY_VARS, SmPaths, managed_block, merge, qos_part
from loom.routing.subnet import Subnet

from .daemon import engines_in
from .errors import PlanError, TargetError
from .files import TEMP_PREFIX
from .qos_readback import qos_jobs
from .target import INPUTS

CONNECT_TIMEOUT = 10  # seconds for ssh to reach a host
READ_TIMEOUT = 600  # seconds for dump_fts / the QoS read-back on the master
MISSING = 44  # exit code of `_cat` on the host for a file that is not there
SBIN_PATH = 'PATH="$PATH:/usr/sbin:/sbin"'


class SshError(TargetError):
    """A host could not be reached or a command on it failed; the message names host and command."""


def state_dir(fabric_name: str) -> Path:
    """Local state of an SSH target: lock, journal, audit, last applied (`$LOOM_SSH_STATE_DIR`)."""
    return (Path(os.environ.get("LOOM_SSH_STATE_DIR", ".loom/ssh")) / fabric_name).resolve()


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

    def as_dict(self) -> dict:
        return {"name": self.name, "destination": self.destination, "user": self.user, "port": self.port,
                "priority": self.priority, "ca": self.ca, "paths": self.paths.as_dict()}


def _clean(value, what: str, where: str) -> str:
    """A value that reaches an ssh command line: text, no option look-alike, no control characters."""
    if not isinstance(value, str) or not value or value.startswith("-") or any(ord(c) < 32 for c in value):
        raise PlanError(f"{where}: {what} {value!r} is not a usable host name, user or path; fix the inventory "
                        "(subnet_managers group) and run `loom plan` again")
    return value


def host_from_dict(raw: dict, where: str) -> SmHost:
    if not isinstance(raw, dict):
        raise PlanError(f"{where}: a subnet-manager host must be a mapping; run `loom plan` again")
    paths = raw.get("paths") or {}
    if not isinstance(paths, dict) or set(paths) - set(SmPaths().as_dict()):
        raise PlanError(f"{where}: unknown OpenSM paths {sorted(set(paths) - set(SmPaths().as_dict()))}; "
                        f"known: {sorted(SmPaths().as_dict())}")
    for k, v in paths.items():
        if not _clean(v, INVENTORY_VARS[k], where).startswith("/"):
            raise PlanError(f"{where}: {INVENTORY_VARS[k]} {v!r} must be an absolute path; fix the inventory")
    port, prio = raw.get("port"), raw.get("priority", 0)
    if port is not None and not (isinstance(port, int) and 0 < port < 65536):
        raise PlanError(f"{where}: ssh port {port!r} of {raw.get('name')!r} is not 1-65535; fix the inventory")
    if not (isinstance(prio, int) and 0 <= prio <= 15):
        raise PlanError(f"{where}: loom_sm_priority {prio!r} of {raw.get('name')!r} is not 0-15 (OpenSM's range)")
    user = raw.get("user")
    return SmHost(_clean(raw.get("name"), "host", where), _clean(raw.get("destination") or raw.get("name"), "host", where),
                  _clean(user, "user", where) if user is not None else None, port, prio,
                  _clean(raw.get("ca"), "CA", where), SmPaths(**paths))


class Connection:
    """`ssh` to one host, multiplexed: the first command opens the master connection, the
    next ones reuse it; `close` ends it."""

    def __init__(self, host: SmHost, ssh_config: str | None, control_dir: Path) -> None:
        self.host = host
        self.base = ["ssh", *(["-F", ssh_config] if ssh_config else []), "-o", "BatchMode=yes",
                     "-o", f"ConnectTimeout={CONNECT_TIMEOUT}", "-o", "ControlMaster=auto",
                     "-o", f"ControlPath={control_dir}/%C", "-o", "ControlPersist=300",
                     *(["-p", str(host.port)] if host.port else []), *(["-l", host.user] if host.user else [])]

    def run(self, script: str, stdin: str | None = None, timeout: float = 120, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
        """Run a POSIX sh script on the host; raise SshError unless it exits with one of `ok`."""
        try:
            res = subprocess.run([*self.base, "--", self.host.destination, script], input=stdin, capture_output=True,
                                 text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise SshError(f"{self.host.name}: no answer within {timeout:.0f}s") from None
        if res.returncode == 255:
            raise SshError(f"{self.host.name}: ssh cannot reach {self.host.destination}: {res.stderr.strip()[-300:]}")
        if res.returncode not in ok:
            first = script.split()[0] if script.split() else "sh"
            raise SshError(f"{self.host.name}: `{first} ...` exited with {res.returncode}: {res.stderr.strip()[-300:]}")
        return res

    def close(self) -> None:
        subprocess.run([*self.base, "-O", "exit", "--", self.host.destination], capture_output=True, timeout=10)


def close_all(conns, control: Path) -> None:
    """End the multiplexed connections and remove their control directory (idempotent)."""
    if control.exists():
        for c in conns:
            try:
                c.close()
            except (OSError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(control, ignore_errors=True)


def _in_scratch(command: str) -> str:
    """Run `command` in a private scratch directory on the host, removed afterwards (clients of
    a simulated fabric write `sys-<pid>` trees into their cwd; real hosts lose nothing)."""
    return (f'd=$(mktemp -d) || exit 1; cd "$d" || exit 1; {SBIN_PATH}; export PATH; {command}; rc=$?; '
            f'cd / && rm -rf "$d"; exit $rc')


class SshTarget:
    """The subnet-manager hosts of a fabric over SSH (see the module docstring)."""

    kind = "ssh"

    def __init__(self, fabric_name: str, hosts: list[SmHost], switches: int, dir: Path,
                 ssh_config: str | None = None) -> None:
        if not hosts:
            raise PlanError(f"no subnet-manager hosts for {fabric_name}: name them in the inventory's "
                            "`subnet_managers` group")
        self.fabric = fabric_name
        self.hosts = sorted(hosts, key=lambda h: -h.priority)  # stable: the first of the highest priority leads
        self.master = self.hosts[0]
        self.switches = switches
        self.dir = Path(dir)
        self.ssh_config = ssh_config
        self._control = Path(tempfile.mkdtemp(prefix="loom-ssh-"))
        self._conns = {h.name: Connection(h, ssh_config, self._control) for h in self.hosts}
        atexit.register(self.close)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_spec(cls, fabric_name, spec: dict, dir: Path, where: str = "the plan") -> "SshTarget":
        hosts = spec.get("hosts")
        if not isinstance(hosts, list) or not isinstance(spec.get("switches"), int):
            raise PlanError(f"{where}: its ssh target lacks hosts or switches; run `loom plan` again")
        cfg = spec.get("ssh_config")
        return cls(fabric_name, [host_from_dict(h, where) for h in hosts], spec["switches"], dir,
                   _clean(cfg, "ssh_config", where) if cfg is not None else None)

    @classmethod
    def from_inventory(cls, fabric: Fabric, inventory: Path, ssh_config: str | None = None) -> "SshTarget":
        from .inventory import sm_hosts

        switches = sum(1 for s in fabric.switches if s.plane == 0)
        return cls(fabric.name, sm_hosts(fabric, Path(inventory)), switches, state_dir(fabric.name), ssh_config)

    def spec(self) -> dict:
        return {"kind": self.kind, "ssh_config": self.ssh_config, "switches": self.switches,
                "hosts": [h.as_dict() for h in self.hosts]}

    def where(self) -> str:
        return ", ".join(f"{h.name}:{h.paths.conf}" for h in self.hosts)

    def close(self) -> None:
        close_all(self._conns.values(), self._control)

    def _on(self, host: SmHost) -> Connection:
        return self._conns[host.name]

    # ------------------------------------------------------------------ state of OpenSM
    def _opensm(self, host: SmHost) -> str:
        """'systemd', 'pid' (running from its pid file) or 'down'."""
        pf = shlex.quote(host.paths.pidfile)
        return self._on(host).run(
            "if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet opensm 2>/dev/null; then echo systemd; "
            f"elif [ -r {pf} ] && kill -0 \"$(cat {pf})\" 2>/dev/null; then echo pid; else echo down; fi").stdout.strip()

    def health(self) -> None:
        if self._opensm(self.master) == "down":
            raise SshError(f"OpenSM is not running on the master {self.master.name} (neither `systemctl is-active "
                           f"opensm` nor the process of {self.master.paths.pidfile}); start it there")

    def _log_lines(self, host: SmHost, pattern: str) -> list[str]:
        log = shlex.quote(host.paths.log)
        return self._on(host).run(f"grep -a -- {shlex.quote(pattern)} {log} 2>/dev/null; true").stdout.splitlines()

    def ready(self) -> bool:
        return self._opensm(self.master) != "down" and bool(self._log_lines(self.master, "SUBNET UP"))

    def fabric_down(self) -> bool:
        try:
            self._on(self.master).run("true")
        except SshError:
            return True
        return False

    def cabled_as(self, fabric: Fabric) -> bool:
        """The hosts cannot tell the cabling without a discovery; the plan's read-back catches a
        switch count that differs (`read_lfts`)."""
        return True

    # ------------------------------------------------------------------ reading the fabric
    def read_lfts(self, expect: int | None = None) -> str:
        res = self._on(self.master).run(_in_scratch("dump_fts"), timeout=READ_TIMEOUT)
        got, want = res.stdout.count("Unicast lids ["), expect if expect is not None else self.switches
        if got < want:
            raise SshError(f"{self.master.name}: dump_fts read the tables of {got} of {want} switches: "
                           f"{res.stderr.strip()[-300:]}")
        return res.stdout

    def read_qos(self, sn: Subnet) -> dict:
        answers = self.smp(qos_jobs(sn, self.master.ca), "the QoS read-back")
        return {a["key"]: {"sl2vl": a["sl2vl"], "vlarb": a["vlarb"]} for a in sorted(answers, key=lambda a: a["key"])}

    def sm_ca(self) -> str:
        return self.master.ca

    def smp(self, jobs: list[dict], what: str, every: bool = True) -> list[dict]:
        """Answer SMP queries on the master (`loom.push.madquery`'s code, run by its python3)."""
        from . import madquery

        code = Path(madquery.__file__).read_text()
        script = _in_scratch(f"python3 -c {shlex.quote(code)}")
        res = self._on(self.master).run(script, stdin=json.dumps(jobs), timeout=READ_TIMEOUT)
        try:
            out = json.loads(res.stdout)
        except json.JSONDecodeError:
            raise SshError(f"{self.master.name}: {what} gave no answer: {res.stderr.strip()[-300:]}") from None
        if out["errors"] and every:
            raise SshError(f"{what} on {self.master.name}: {len(out['errors'])} queries got no answer, "
                           f"e.g. {out['errors'][0]}")
        return out["answers"]

    def run(self, args: list[str], timeout: float = 120) -> str:
        return self._on(self.master).run(_in_scratch(shlex.join(args)), timeout=timeout).stdout

    # ------------------------------------------------------------------ input files
    def _remote(self, host: SmHost) -> dict[str, str]:
        return {"lfts": host.paths.lfts, "conf": host.paths.conf, "guid2lid": host.paths.guid2lid}

    def _cat(self, host: SmHost, path: str) -> str | None:
        p = shlex.quote(path)
        res = self._on(host).run(f"if [ -e {p} ]; then cat -- {p}; else exit {MISSING}; fi", ok=(0, MISSING))
        return None if res.returncode == MISSING else res.stdout

    def inputs_of(self, host: SmHost) -> dict[str, str | None]:
        """A host's input files; "conf" is the QoS part of Loom's block (None: no block)."""
        files = {k: self._cat(host, p) for k, p in self._remote(host).items()}
        files["conf"] = qos_part(files["conf"], host.paths, host.priority)
        return files

    def read_inputs(self) -> dict[str, str | None]:
        return self.inputs_of(self.master)

    def write_inputs(self, files: dict[str, str | None]) -> None:
        """Every host, standbys first and the master last: each host's files are staged as temp
        files beside their targets, then renamed together (a host that cannot stage them fails
        before any of its files changed)."""
        for host in reversed(self.hosts):
            self._write_host(host, files)

    def _write_host(self, host: SmHost, files: dict[str, str | None]) -> None:
        conn, remote = self._on(host), self._remote(host)
        texts = dict(files)
        if "conf" in texts:
            site = self._cat(host, host.paths.conf) or ""
            qos = texts["conf"] if texts["conf"] is not None else "qos FALSE\n"
            texts["conf"] = merge(site, managed_block(host.paths, host.priority, qos))
        staged: list[tuple[str, str]] = []
        try:
            for key, text in texts.items():
                if text is None:
                    continue
                p = shlex.quote(remote[key])
                tmp = conn.run(f'umask 022; mkdir -p "$(dirname {p})" && t=$(mktemp {shlex.quote(remote[key] + "." + TEMP_PREFIX)}XXXXXX) '
                               f'&& cat > "$t" && chmod 0644 "$t" && echo "$t"', stdin=text).stdout.strip()
                staged.append((tmp, remote[key]))
        except SshError:
            if staged:
                conn.run("rm -f -- " + " ".join(shlex.quote(t) for t, _ in staged), ok=(0, 1))
            raise
        moves = [f"mv -f -- {shlex.quote(t)} {shlex.quote(p)}" for t, p in staged]
        removes = [f"rm -f -- {shlex.quote(remote[k])}" for k, v in texts.items() if v is None]
        conn.run(" && ".join(moves + removes) or "true")

    def standby_drift(self, files: dict[str, str | None]) -> list[str]:
        out = []
        for host in self.hosts[1:]:
            theirs = self.inputs_of(host)
            differ = [k for k in INPUTS if k in files and theirs[k] != files[k]]
            if differ:
                out.append(f"{host.name}: {', '.join(differ)} differ from the master's")
        return out

    def clean_leftovers(self) -> None:
        for host in self.hosts:
            temps = " ".join(f"{shlex.quote(p + '.' + TEMP_PREFIX)}*" for p in self._remote(host).values())
            try:
                self._on(host).run(f"rm -f -- {temps}")
            except SshError:
                pass  # an unreachable standby keeps its temp files until the next run

    # ------------------------------------------------------------------ reload
    def push(self, timeout: float) -> str:
        """Restart the master's OpenSM on its inputs — `systemctl restart opensm`, or the process
        of its pid file started again as it was (`restart_opensm`) where systemd does not run
        it — and wait for the new OpenSM's sweep.  A restart, not a reload: a new OpenSM programs
        every LFT block and QoS table (a reloaded one left VLArb tables as they were)."""
        from . import restart_opensm

        how = self._opensm(self.master)
        if how == "down":
            self.health()
        before = len(self._log_lines(self.master, "SUBNET UP"))
        code = Path(restart_opensm.__file__).read_text()
        self._on(self.master).run("systemctl restart opensm" if how == "systemd" else
                                  f"python3 -c {shlex.quote(code)} {shlex.quote(self.master.paths.pidfile)}")
        return self._await_sweep(before, timeout)

    def reload(self, timeout: float) -> str:
        """SIGHUP to the master's OpenSM (its pid file), then wait for its sweep."""
        self.health()
        before = len(self._log_lines(self.master, "SUBNET UP"))
        self._on(self.master).run(f"kill -HUP \"$(cat {shlex.quote(self.master.paths.pidfile)})\"")
        return self._await_sweep(before, timeout)

    def _await_sweep(self, before: int, timeout: float) -> str:
        """The engine of the first sweep finished after `before` SUBNET UP lines."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self._log_lines(self.master, "SUBNET UP")) > before:
                engines = engines_in("\n".join(self._log_lines(self.master, "tables configured")))
                return engines[-1] if engines else "?"
            self.health()
            time.sleep(0.2)
        raise SshError(f"OpenSM on {self.master.name} did not finish a sweep within {timeout:.0f}s; see {self.master.paths.log}")
