"""An Ethernet fabric run live: one network namespace per switch and host, veth pairs for the
cables (named as the renderer names the ports), FRR in each switch namespace, and each host
configured with Loom's per-NIC source-routing script — every plane at once.

Side effects only here.  The simulation outlives the command that starts it (`loom sim up`,
`status`, `down`, like the InfiniBand simulator in `loom.fabrics.infiniband.daemon`): `frr-lab.json` in the
fabric's state directory records the run's namespaces and each daemon as a `ProcessRef`, so
later commands find them and never signal a process that merely reuses a pid.  Namespace
names carry a per-run tag, so runs (and engineers) never collide.  The daemons' own files
(configs, PID files, vty sockets, logs) live in a world-readable runtime directory, because
FRR drops to user `frr`; `down` copies the logs into the state directory.

FRR starts with the switch's startup configuration — the one Loom applied last, else the
bootstrap (interfaces and loopback, no routing: a switch freshly racked) — loaded with
`vtysh -b`, as FRR's own init does; `loom apply` then reloads it with `frr-reload.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

from loom.expand import HOST, Fabric
from loom.render.frr_intent import interface_names
from loom.render.roce import host_config, host_ifname

from loom.push.errors import TargetError
from .answers import bgp_peers, kernel_routes
from loom.files import write_atomic
from loom.push.links import LINKS_DOWN
from loom.push.procs import ProcessRef

FRR = Path("/usr/lib/frr")
FRR_RELOAD = FRR / "frr-reload.py"
STATE = "frr-lab.json"
#: A switch runs zebra and ~1-3 routing daemons: ~30 MB measured (REFERENCE.md: 40 switches, 1.3 GB).
MB_PER_SWITCH = 32
#: The most switches and hosts `loom sim up` runs on this kind of machine (2 cores, shared).
MAX_SWITCHES, MAX_HOSTS = 64, 128
LAB_MODEL = "topology/roce-lab.yaml"
SYSCTLS = ("net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1", "net.ipv4.fib_multipath_hash_policy=1",
           "net.ipv4.conf.all.ignore_routes_with_linkdown=1")


class LabError(TargetError):
    """The live simulation or a tool run in it failed; the message names which and where to look."""


def sh(*args: str, check: bool = True, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    try:
        res = subprocess.run(args, capture_output=True, text=True, errors="replace", timeout=timeout, input=stdin)
    except subprocess.TimeoutExpired:
        raise LabError(f"{' '.join(args[:4])} did not finish within {timeout:.0f}s") from None
    if check and res.returncode != 0:
        raise LabError(f"{' '.join(args[:6])}: {(res.stderr or res.stdout).strip()[-300:]}")
    return res


def too_big(fabric: Fabric) -> str | None:
    """Why the fabric cannot run live here (None: it can), with the size it would need."""
    switches = len(fabric.switches)
    hosts = len({p.node for p in fabric.ports})
    if switches <= MAX_SWITCHES and hosts <= MAX_HOSTS:
        return None
    return (f"{fabric.name} is too big to run live: {switches:,} switches and {hosts:,} hosts would need "
            f"{switches:,} FRR instances (~{switches * MB_PER_SWITCH / 1024:,.1f} GB) and {switches + hosts:,} network "
            f"namespaces; the simulation runs at most {MAX_SWITCHES} switches and {MAX_HOSTS} hosts — use the lab "
            f"model {LAB_MODEL} (2 planes × 4 spines × 8 leaves) or a model of that size")


def needed_daemons(config: str) -> list[str]:
    """The FRR daemons a configuration needs (zebra always)."""
    out = ["zebra"]
    if re.search(r"^router bgp ", config, re.M):
        out.append("bgpd")
    if re.search(r"^ip route ", config, re.M):
        out.append("staticd")
    if re.search(r"^\s*bfd\b", config, re.M):
        out.append("bfdd")
    return out


def cable_ends(f: Fabric) -> list[tuple[tuple[str, str], tuple[str, str]]]:
    """Every cable as its two ends (device, interface), switch ports named as the renderer names them."""
    c, names = f.cables, interface_names(f)
    out = []
    for i in range(len(c)):
        ends = []
        for end in ("a", "b"):
            kind, dev, port = (int(getattr(c, f"{end}_{x}")[i]) for x in ("kind", "dev", "port"))
            if kind == HOST:
                ends.append((f.nodes[f.ports[dev].node].name, host_ifname(f.ports[dev])))
            else:
                ends.append((f.switches[dev].name, names[(dev, port)]))
        out.append((ends[0], ends[1]))
    return out


def cabling_digest(fabric: Fabric) -> str:
    """What the live simulation is cabled as (its devices and cable ends)."""
    return hashlib.sha256(json.dumps(cable_ends(fabric)).encode()).hexdigest()


class FrrLab:
    """The live simulation of one Ethernet fabric, found through its state directory."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)

    @classmethod
    def of(cls, fabric_name: str) -> "FrrLab":
        from loom.push.state import sim_state_dir as state_dir

        return cls(state_dir(fabric_name))

    # ------------------------------------------------------------------ state
    @property
    def state(self) -> dict:
        try:
            return json.loads((self.dir / STATE).read_text())
        except (OSError, json.JSONDecodeError):
            return {}

    @property
    def tag(self) -> str | None:
        return self.state.get("tag")

    def netns(self, device: str) -> str:
        try:
            return self.state["namespaces"][device]
        except KeyError:
            raise LabError(f"{device} is not part of the live simulation in {self.dir}") from None

    def runtime(self, device: str) -> Path:
        return Path(self.state["runtime"]) / device

    def switches(self) -> list[str]:
        return list(self.state.get("daemons", {}))

    def _refs(self) -> list[tuple[str, ProcessRef]]:
        return [(dev, ProcessRef.parse(line, line.split()[-1]))
                for dev, lines in self.state.get("daemons", {}).items() for line in lines]

    def dead(self) -> list[str]:
        """Daemons of the run that no longer run ("lab-leaf0 bgpd"); namespaces gone count too."""
        if not self.state:
            return ["the simulation (not started)"]
        out = [f"{dev} {ref.name}" for dev, ref in self._refs() if not ref.alive()]
        have = set(sh("ip", "netns", "list").stdout.split())
        out += [f"namespace {ns}" for ns in self.state["namespaces"].values() if ns not in have]
        return out

    def is_up(self) -> bool:
        return not self.dead()

    def status(self) -> dict:
        s = self.state
        dead = self.dead()
        return {"state_dir": str(self.dir), "tag": s.get("tag"), "runtime": s.get("runtime"),
                "switches": len(s.get("daemons", {})), "hosts": len(s.get("hosts", [])),
                "daemons": sum(len(v) for v in s.get("daemons", {}).values()), "up": bool(s) and not dead,
                "down": dead if s else []}

    def cabled_as(self, fabric: Fabric) -> bool:
        return self.state.get("cabling_sha256") == cabling_digest(fabric)

    # ------------------------------------------------------------------ lifecycle
    def up(self, fabric: Fabric, startup: dict[str, str], daemons: dict[str, list[str]], timeout: float = 60) -> str:
        """Bring the fabric up (idempotent): 'already up', 'started' or 're-cabled'.  `startup`:
        switch → configuration FRR starts with; `daemons`: switch → daemons to run.  Anything
        half-started is stopped again when a step fails.  The caller holds the fabric lock."""
        problem = too_big(fabric)
        if problem:
            raise LabError(problem)
        if not (FRR / "zebra").exists():
            raise LabError("FRR is not installed (run `make setup`)")
        what = "started"
        if self.state:
            if self.is_up() and self.cabled_as(fabric):
                return "already up"
            what = "re-cabled" if self.is_up() else "started"
            self.down()
        tag = uuid.uuid4().hex[:6]
        runtime = Path(tempfile.mkdtemp(prefix=f"loom-frr-{tag}-"))
        os.chmod(runtime, 0o755)
        hosts = sorted({fabric.nodes[p.node].name for p in fabric.ports})
        devices = [s.name for s in fabric.switches] + hosts
        state = {"fabric": fabric.name, "tag": tag, "runtime": str(runtime), "cabling_sha256": cabling_digest(fabric),
                 "namespaces": {d: f"lm{tag}-{i}" for i, d in enumerate(devices)}, "hosts": hosts, "daemons": {}}
        self.dir.mkdir(parents=True, exist_ok=True)
        write_atomic(self.dir / STATE, json.dumps(state, indent=1))
        (self.dir / LINKS_DOWN).unlink(missing_ok=True)  # every cable of a new lab is in
        try:
            self._namespaces(state["namespaces"])
            self._cables(fabric, state["namespaces"])
            for node in {p.node for p in fabric.ports}:
                name = fabric.nodes[node].name
                script = write_atomic(self.dir / "hosts" / name / "loom-routes.sh", host_config(fabric, node)["loom-routes.sh"])
                sh("ip", "netns", "exec", state["namespaces"][name], "sh", str(script))
            for s in fabric.switches:
                state["daemons"][s.name] = self._start_frr(s.name, state, startup[s.name], daemons[s.name], timeout)
                write_atomic(self.dir / STATE, json.dumps(state, indent=1))
        except BaseException:
            self.down()
            raise
        return what

    def _namespaces(self, namespaces: dict[str, str]) -> None:
        sh("ip", "-batch", "-", stdin="".join(f"netns add {ns}\n" for ns in namespaces.values()))
        for ns in namespaces.values():
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", *SYSCTLS)

    def _cables(self, f: Fabric, namespaces: dict[str, str]) -> None:
        """One veth pair per cable, both ends created in their namespaces under their final names."""
        ups: dict[str, list[str]] = {}
        batch = []
        for (da, ia), (db, ib) in cable_ends(f):
            na, nb = namespaces[da], namespaces[db]
            batch.append(f"link add name {ia} netns {na} type veth peer name {ib} netns {nb}\n")
            ups.setdefault(na, []).append(ia)
            ups.setdefault(nb, []).append(ib)
        sh("ip", "-batch", "-", stdin="".join(batch))
        for ns, ifs in ups.items():
            sh("ip", "-n", ns, "-batch", "-", stdin="".join(f"link set {i} up\n" for i in ifs))

    def _start_frr(self, name: str, state: dict, startup: str, daemons: list[str], timeout: float) -> list[str]:
        """Start the switch's daemons on empty configurations, then load its startup
        configuration into them all with `vtysh -b` (FRR's integrated configuration)."""
        d = Path(state["runtime"]) / name
        d.mkdir()
        write_atomic(d / "frr.conf", startup)
        write_atomic(d / "vtysh.conf", "service integrated-vtysh-config\n")
        write_atomic(d / "empty.conf", "")
        shutil.chown(d, "frr", "frr")
        for p in d.iterdir():
            shutil.chown(p, "frr", "frr")
        refs = []
        for daemon in daemons:
            pid = d / f"{daemon}.pid"
            sh("ip", "netns", "exec", state["namespaces"][name], str(FRR / daemon), "-d", "-f", str(d / "empty.conf"),
               "-i", str(pid), "-z", str(d / "zserv.api"), "--vty_socket", str(d), "-P", "0",
               "--log", f"file:{d / (daemon + '.log')}")
            self.wait(lambda: pid.exists() and (d / f"{daemon}.vty").exists(), f"{daemon} of {name}", timeout)
            refs.append(ProcessRef.of(int(pid.read_text().strip()), daemon).line().strip())
        res = sh("vtysh", "--vty_socket", str(d), "--config_dir", str(d), "-b", check=False)
        if res.returncode != 0:
            raise LabError(f"FRR of {name} refused its startup configuration {d / 'frr.conf'}: "
                           f"{(res.stdout + res.stderr).strip()[-300:]}")
        return refs

    def down(self) -> list[str]:
        """Stop every daemon (SIGTERM, then SIGKILL), delete the namespaces, keep the logs."""
        state = self.state
        if not state:
            return []
        stopped = []
        refs = [(dev, ref) for dev, ref in self._refs() if ref.alive()]
        for _, ref in refs:
            try:
                os.kill(ref.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        for dev, ref in refs:
            while ref.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            if ref.alive():
                os.kill(ref.pid, signal.SIGKILL)
            stopped.append(f"{dev} {ref.name}")
        have = set(sh("ip", "netns", "list").stdout.split())
        gone = [ns for ns in state.get("namespaces", {}).values() if ns in have]
        if gone:
            sh("ip", "-batch", "-", stdin="".join(f"netns del {ns}\n" for ns in gone), check=False)
        runtime = Path(state.get("runtime", ""))
        if state.get("runtime") and runtime.is_dir():
            shutil.copytree(runtime, self.dir / "frr-logs", dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if not n.endswith((".log", ".conf"))
                                                     and not (Path(d) / n).is_dir()])
            shutil.rmtree(runtime, ignore_errors=True)
        (self.dir / STATE).unlink(missing_ok=True)
        return stopped

    # ------------------------------------------------------------------ observing and changing
    @staticmethod
    def wait(cond, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return
            time.sleep(0.1)
        raise LabError(f"timed out after {timeout:.0f}s waiting for {what}")

    def vtysh(self, device: str, *commands: str, daemon: str | None = None) -> str:
        args = ["vtysh", "--vty_socket", str(self.runtime(device))] + (["-d", daemon] if daemon else [])
        for c in commands:
            args += ["-c", c]
        return sh(*args).stdout

    def running_config(self, device: str) -> str:
        return self.vtysh(device, "show running-config no-header")

    def reload(self, device: str, config: str) -> None:
        """FRR's own `frr-reload.py --reload`: apply the difference between the running
        configuration and `config` (and save it as the switch's frr.conf)."""
        if not FRR_RELOAD.exists():
            raise LabError(f"{FRR_RELOAD} is missing: install Debian's frr-pythontools (make setup)")
        d = self.runtime(device)
        new = write_atomic(d / "loom-desired.conf", config)
        # niced: every switch's daemons share this machine's cores with the reload, and BFD's
        # sub-second timers must keep running through it, as on a switch with its own CPU
        res = sh("nice", "-n", "10", str(FRR_RELOAD), "--reload", "--stdout", "--vty_socket", str(d), "--confdir", str(d), "--rundir", str(d),
                 str(new), check=False, timeout=120)
        if res.returncode != 0:
            raise LabError(f"frr-reload.py failed on {device} (exit {res.returncode}): {_reload_errors(res.stderr)}")

    def peers(self, device: str) -> dict[str, str]:
        """BGP neighbour address → state; {} without bgpd."""
        if "bgpd" not in " ".join(self.state.get("daemons", {}).get(device, [])):
            return {}
        return bgp_peers(self.vtysh(device, "show bgp summary json", daemon="bgpd"), device)

    def neighbours(self, device: str) -> str:
        """`show bgp neighbors json` (read when a session will not come up, to say why)."""
        return self.vtysh(device, "show bgp neighbors json", daemon="bgpd")

    def links(self, device: str) -> str:
        """`ip -j link` of a namespace."""
        return sh("ip", "-n", self.netns(device), "-j", "link").stdout

    def fib(self, device: str) -> dict[str, set[str]]:
        """Kernel routes of a namespace: prefix → set of next-hop gateways (connected routes left out)."""
        return kernel_routes(sh("ip", "-n", self.netns(device), "-j", "route").stdout, device)

    def ping(self, src_node: str, src_addr: str, dst_addr: str) -> bool:
        res = sh("ip", "netns", "exec", self.netns(src_node), "ping", "-c", "1", "-W", "1", "-I", src_addr, dst_addr, check=False)
        return res.returncode == 0

    def link_down(self, device: str, ifname: str) -> None:
        sh("ip", "-n", self.netns(device), "link", "set", ifname, "down")

    def set_cables(self, fabric: Fabric, cables: list[int], up: bool) -> None:
        """Pull or put back cables (`loom sim link`): both ends of each veth down or up, so the
        switches see the carrier go (BFD and BGP then react as they would to a pulled cable)."""
        ends = cable_ends(fabric)
        by_ns: dict[str, list[str]] = {}
        for i in cables:
            for device, ifname in ends[i]:
                by_ns.setdefault(self.netns(device), []).append(ifname)
        word = "up" if up else "down"
        for ns, ifnames in by_ns.items():
            sh("ip", "-n", ns, "-batch", "-", stdin="".join(f"link set {i} {word}\n" for i in ifnames))


def _reload_errors(log: str) -> str:
    """frr-reload.py's complaints, without its INFO log and the command lists it dumps."""
    lines = [l for l in log.splitlines() if l.strip() and " INFO: " not in l and not l.startswith(("[", " ", "'"))]
    return "; ".join(lines[-3:])[-300:] or "no message"


@contextmanager
def running(fabric: Fabric, startup: dict[str, str], directory: Path, timeout: float = 60):
    """`with running(fabric, configs, tmp) as lab:` a live simulation that is always stopped
    (tests).  `startup`: switch → the configuration it starts with."""
    lab = FrrLab(directory)
    try:
        lab.up(fabric, startup, {k: needed_daemons(v) for k, v in startup.items()}, timeout)
        yield lab
    finally:
        lab.down()
