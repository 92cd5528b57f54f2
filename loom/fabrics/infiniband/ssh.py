"""The SSH target: the fabric's subnet-manager hosts, a master and its standbys, reached with the
system OpenSSH client — so the user's `ssh_config`, agent, ProxyJump and known_hosts all apply —
over one multiplexed connection per host (ControlMaster; the control sockets live in a private
0700 directory removed at the end).

What runs on the hosts is plain POSIX sh and the tools OpenSM's hosts have: `dump_fts` for the
tables, `python3` with libibumad for QoS by directed route (`loom.fabrics.infiniband.madquery`, sent as the
command's text: nothing of loom is installed there), `mktemp` + `mv` for atomic writes, and
`systemctl restart opensm` (or the pid file's OpenSM started again as it was, where systemd
does not run it: `loom.fabrics.infiniband.restart_opensm`) for the push; the sweep is awaited in OpenSM's
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
import shlex
import time
from pathlib import Path

from loom.expand import Fabric
from loom.render.sm_host import managed_block, merge, qos_part
from loom.routing.subnet import Subnet

from .daemon import engines_in
from loom.push.errors import PlanError, TargetError
from loom.files import TEMP_PREFIX
from loom.push.ssh import Connection, SshError, clean, close_all, control_dir, whole
from loom.push.state import ssh_state_dir as state_dir
from .inventory import SmHost, host_from_dict, sm_hosts
from .qos_readback import qos_answered, qos_jobs
from .target import INPUTS

READ_TIMEOUT = 600  # seconds for dump_fts / the QoS read-back on the master
MISSING = 44  # exit code of `_cat` on the host for a file that is not there
SBIN_PATH = 'PATH="$PATH:/usr/sbin:/sbin"'


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
        self.master = self.hosts[0]  # until the fabric says which is master (`subnet_managers`)
        self.switches = switches
        self.dir = Path(dir)
        self.ssh_config = ssh_config
        self._control = control_dir()
        self._conns = {h.name: Connection(h, ssh_config, self._control) for h in self.hosts}
        atexit.register(self.close)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_spec(cls, fabric_name, spec: dict, dir: Path, where: str = "the plan") -> "SshTarget":
        hosts = spec.get("hosts")
        if not isinstance(hosts, list) or not isinstance(spec.get("switches"), int):
            raise PlanError(f"{where}: its ssh target lacks hosts or switches; run `loom plan` again")
        cfg = spec.get("ssh_config")
        if any(isinstance(h, dict) and h.get("lid") is None for h in hosts):
            raise PlanError(f"{where} was made by an older loom (its SM hosts have no LIDs, where loom asks who is "
                            "master); run `loom plan` again")
        return cls(fabric_name, [host_from_dict(h, where) for h in hosts], spec["switches"], dir,
                   clean(cfg, "ssh_config", where) if cfg is not None else None)

    @classmethod
    def from_inventory(cls, fabric: Fabric, inventory: Path, ssh_config: str | None = None) -> "SshTarget":
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
        """'systemd', 'pid' (running from its pid file; a killed one its parent has not reaped yet,
        a zombie, is not running) or 'down'."""
        pf = shlex.quote(host.paths.pidfile)
        return self._on(host).run(
            "if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet opensm 2>/dev/null; then echo systemd; "
            f"elif [ -r {pf} ] && s=$(ps -o stat= -p \"$(cat {pf})\" 2>/dev/null | tr -d ' ') && [ -n \"$s\" ] && "
            "[ \"${s#Z}\" = \"$s\" ]; then echo pid; else echo down; fi").stdout.strip()

    def health(self) -> None:
        if self._opensm(self.master) == "down":
            raise SshError(f"OpenSM is not running on the master {self.master.name} (neither `systemctl is-active "
                           f"opensm` nor the process of {self.master.paths.pidfile}); start it there")

    def _log_lines(self, host: SmHost, pattern: str) -> list[str]:
        log = shlex.quote(host.paths.log)
        return self._on(host).run(f"grep -a -- {shlex.quote(pattern)} {log} 2>/dev/null; true").stdout.splitlines()

    @property
    def standbys(self) -> list[SmHost]:
        return [h for h in self.hosts if h is not self.master]

    def subnet_managers(self):
        """Ask the fabric who is master (`sminfo.py`: SMInfo of every SM host's port and of every
        port the SA lists as an SM), from the first SM host that answers ssh; the master's host
        is then the one pushed to and read from, the others are its standbys."""
        from .sminfo import the_master

        ports, host = self._ask()
        master = the_master(ports, f"{self.fabric} (asked from {host.name})")
        by_lid = {h.lid: h for h in self.hosts}
        if master.lid not in by_lid:
            raise SshError(f"the master subnet manager of {self.fabric} is {master}, not one of the inventory's SM hosts "
                           f"({', '.join(h.name for h in self.hosts)}): loom pushes only through those; stop that SM or "
                           "add its host to the `subnet_managers` group")
        self.master = by_lid[master.lid]
        return master, ports

    def _ask(self):
        """Every SM port's SMInfo, asked from the first SM host that answers ssh, and that host."""
        from .sminfo import parse, script

        names = {h.lid: h.name for h in self.hosts if h.lid}
        text, errors = None, []
        for host in self.hosts:
            try:
                text = self._on(host).run(_in_scratch(script(list(names))), timeout=READ_TIMEOUT,
                                          what="saquery -s; sminfo LID (each SM port)").stdout
                break
            except SshError as exc:
                errors.append(str(exc))
        if text is None:
            raise SshError("no subnet-manager host answers: " + "; ".join(errors))
        return parse(text, names), host

    def holder(self) -> str:
        """Who holds the subnet now, for a message (a sweep that did not come)."""
        from .sminfo import holder

        try:
            return holder(self._ask()[0])
        except SshError as exc:
            return f"the SM hosts could not be asked ({exc})"

    def fabric_down(self) -> bool:
        try:
            self._on(self.master).run("true")
        except SshError:
            return True
        return False

    def bring_up(self, model: str) -> str:
        hosts = ", ".join(h.name for h in self.hosts)
        return (f"make OpenSM run on an SM host ({hosts}: `systemctl start opensm`, or as the site runs it) and "
                f"check that `ssh` reaches them; the restored inputs are what it loads")

    def cabled_as(self, fabric: Fabric) -> bool:
        """The hosts cannot tell the cabling without a discovery; the plan's read-back catches a
        switch count that differs (`read_lfts`)."""
        return True

    def missing_cables(self, design: Fabric) -> list[str]:
        from .observed import missing_discovered

        return missing_discovered(self.run(["ibnetdiscover"]), design)

    # ------------------------------------------------------------------ reading the fabric
    def read_lfts(self, expect: int | None = None) -> str:
        res = self._on(self.master).run(_in_scratch("dump_fts"), timeout=READ_TIMEOUT, what="dump_fts")
        got, want = res.stdout.count("Unicast lids ["), expect if expect is not None else self.switches
        if got < want:
            raise SshError(f"{self.master.name}: dump_fts read the tables of {got} of {want} switches: "
                           f"{whole(res.stderr) or 'no message'}")
        return res.stdout

    def read_qos(self, sn: Subnet) -> dict:
        return qos_answered(self.smp(qos_jobs(sn, self.master.ca), "the QoS read-back"))

    def sm_ca(self) -> str:
        return self.master.ca

    def read_ports(self, fabric: Fabric, sn: Subnet) -> dict:
        """The port counters by the master's python3 and libibumad, as `smp` answers everything."""
        from .port_counters import read_ports

        return read_ports(self, fabric, sn)

    def smp(self, jobs: list[dict], what: str, every: bool = True) -> list[dict]:
        """Answer SMP queries on the master (`loom.fabrics.infiniband.madquery`'s code, run by its python3)."""
        from . import madquery

        code = Path(madquery.__file__).read_text()
        script = _in_scratch(f"python3 -c {shlex.quote(code)}")
        res = self._on(self.master).run(script, stdin=json.dumps(jobs), timeout=READ_TIMEOUT, what=f"python3 ({what})")
        try:
            out = json.loads(res.stdout)
        except json.JSONDecodeError:
            raise SshError(f"{self.master.name}: {what} gave no answer: {whole(res.stderr) or 'no message'}") from None
        if out["errors"] and every:
            raise SshError(f"{what} on {self.master.name}: {len(out['errors'])} queries got no answer, "
                           f"e.g. {out['errors'][0]}")
        return out["answers"]

    def run(self, args: list[str], timeout: float = 120) -> str:
        return self._on(self.master).run(_in_scratch(shlex.join(args)), timeout=timeout, what=shlex.join(args)).stdout

    # ------------------------------------------------------------------ input files
    def _remote(self, host: SmHost) -> dict[str, str]:
        return {"lfts": host.paths.lfts, "conf": host.paths.conf, "guid2lid": host.paths.guid2lid,
                "partitions": host.paths.partitions}

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

    def kept_inputs(self) -> dict[str, str | None]:
        return self.read_inputs()  # remote: their texts

    def write_inputs(self, files: dict[str, str | None]) -> None:
        """Every host, standbys first and the master last: each host's files are staged as temp
        files beside their targets, then renamed together (a host that cannot stage them fails
        before any of its files changed)."""
        for host in [*reversed(self.standbys), self.master]:
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
        for host in self.standbys:
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
        if how == "down":  # a failover since the master was found (a restore after it): push to the new master
            self._follow_failover(timeout)
            how = self._opensm(self.master)
            if how == "down":
                self.health()
        before = self.sweeps()
        code = Path(restart_opensm.__file__).read_text()
        self._on(self.master).run("systemctl restart opensm" if how == "systemd" else
                                  f"python3 -c {shlex.quote(code)} {shlex.quote(self.master.paths.pidfile)}")
        return self._await_sweep(before, timeout)

    def reload(self, timeout: float) -> str:
        """SIGHUP to the master's OpenSM (its pid file), then wait for its sweep."""
        self.health()
        before = self.sweeps()
        self._on(self.master).run(f"kill -HUP \"$(cat {shlex.quote(self.master.paths.pidfile)})\"")
        return self._await_sweep(before, timeout)

    def _follow_failover(self, timeout: float) -> None:
        """Wait (up to `timeout`, at most a minute) for a standby to take over from a master whose
        OpenSM stopped, and make it the master pushed to; TargetError when none does."""
        deadline = time.monotonic() + min(timeout, 60)
        while True:
            try:
                self.subnet_managers()
                if self._opensm(self.master) != "down":
                    return
            except SshError:
                raise
            except TargetError:
                pass
            if time.monotonic() > deadline:
                self.subnet_managers()  # raises, naming who holds the subnet
                return
            time.sleep(1)

    def sweeps(self) -> int:
        return len(self._log_lines(self.master, "SUBNET UP"))

    def await_sweeps(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.sweeps() <= count:
            if time.monotonic() > deadline:
                return False
            self.health()
            time.sleep(0.2)
        return True

    def _await_sweep(self, before: int, timeout: float) -> str:
        """The engine of the first sweep finished after `before` SUBNET UP lines."""
        if self.await_sweeps(before, timeout):
            engines = engines_in("\n".join(self._log_lines(self.master, "tables configured")))
            return engines[-1] if engines else "?"
        raise SshError(f"OpenSM on {self.master.name} did not finish a sweep within {timeout:.0f}s ({self.holder()}); "
                       f"see {self.master.paths.log} on {self.master.name}")
