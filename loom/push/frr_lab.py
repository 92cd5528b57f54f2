"""A RoCE plane run live: one network namespace per switch and host, veth pairs for the
cables, FRR (zebra + staticd or bgpd) in each switch namespace started from Loom's own
rendered configuration, hosts configured with Loom's per-NIC routing script.

Side effects only here.  `FrrLab` is a context manager: every daemon and namespace goes on
exit, also when a test fails.  Namespace names carry a per-run prefix, so runs never collide.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from loom.expand import HOST, Fabric
from loom.render.roce import all_switch_links, destinations, host_config, port_name, switch_config
from loom.routing.base import Tables

from .files import write_atomic

FRR = Path("/usr/lib/frr")


class LabError(Exception):
    pass


def sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(args, capture_output=True, text=True, timeout=60)
    if check and res.returncode != 0:
        raise LabError(f"{' '.join(args)}: {res.stderr.strip()[-300:]}")
    return res


def _sockets(directory: str, names: list[str]) -> list[str]:
    """copytree ignore: the daemons' unix sockets."""
    return [n for n in names if not (Path(directory) / n).is_file() and not (Path(directory) / n).is_dir()]


class FrrLab:
    def __init__(self, tables: Tables, workdir: Path) -> None:
        self.t = tables
        self.f: Fabric = tables.subnet.fabric
        self.dir = Path(workdir)
        self.tag = uuid.uuid4().hex[:5]
        self.ns: dict[str, str] = {}  # device name → namespace
        self.daemons: list[Path] = []  # pid files
        # FRR drops to user frr: its files live in a world-readable directory of their own
        self.frr_root = Path(tempfile.mkdtemp(prefix=f"loom-frr-{self.tag}-"))
        os.chmod(self.frr_root, 0o755)

    def netns(self, device: str) -> str:
        return self.ns[device]

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "FrrLab":
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self) -> None:
        if not (FRR / "zebra").exists():
            raise LabError("FRR is not installed (run `make setup`)")
        sn, f = self.t.subnet, self.f
        switches = [sn.switch(r) for r in range(sn.n)]
        nodes = sorted({f.ports[int(sn.lid_port[l])].node for l in sn.ca_lids})
        for name in [s.name for s in switches] + [f.nodes[n].name for n in nodes]:
            ns = f"lm{self.tag}-{name}"
            sh("ip", "netns", "add", ns)
            self.ns[name] = ns
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            for key, val in (("net.ipv4.ip_forward", "1"), ("net.ipv4.fib_multipath_hash_policy", "1"),
                             ("net.ipv4.conf.all.ignore_routes_with_linkdown", "1")):
                sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"{key}={val}")
        self._cables(nodes)
        for n in nodes:
            files = host_config(f, n)
            script = write_atomic(self.dir / "hosts" / f.nodes[n].name / "loom-routes.sh", files["loom-routes.sh"])
            sh("ip", "netns", "exec", self.ns[f.nodes[n].name], "sh", str(script))
        prefixes = destinations(self.t)
        links_of = all_switch_links(f)
        for row in range(sn.n):
            self._frr(row, switch_config(self.t, row, prefixes, links_of))

    def _cables(self, nodes: list[int]) -> None:
        f, c = self.f, self.f.cables
        ifname = {}
        for n in nodes:
            for p in f.ports:
                if p.node == n:
                    ifname[p.index] = p.nic if p.port == 1 else f"{p.nic}p{p.port}"
        for i in range(len(c)):
            if int(c.plane[i]) != self.t.subnet.plane:
                continue
            ends = []
            for end in ("a", "b"):
                kind, dev, port = (int(getattr(c, f"{end}_{x}")[i]) for x in ("kind", "dev", "port"))
                if kind == HOST:
                    ends.append((self.ns[f.nodes[f.ports[dev].node].name], ifname[dev]))
                else:
                    ends.append((self.ns[f.switches[dev].name], port_name(f.switches[dev], port)))
            (na, ia), (nb, ib) = ends
            sh("ip", "link", "add", "name", f"t{self.tag}{i}", "type", "veth", "peer", "name", f"u{self.tag}{i}")
            for tmp, ns, name in ((f"t{self.tag}{i}", na, ia), (f"u{self.tag}{i}", nb, ib)):
                sh("ip", "link", "set", tmp, "netns", ns)
                sh("ip", "-n", ns, "link", "set", tmp, "name", name)
            sh("ip", "-n", na, "link", "set", ia, "up")
            sh("ip", "-n", nb, "link", "set", ib, "up")

    def _frr(self, row: int, files: dict[str, str]) -> None:
        name = self.t.subnet.name(row)
        d = self.frr_root / name
        d.mkdir(parents=True, exist_ok=True)
        for k, v in files.items():
            write_atomic(d / k, v)
        shutil.chown(d, "frr", "frr")
        for p in d.iterdir():
            shutil.chown(p, "frr", "frr")
        daemons = ["zebra", "staticd" if "staticd.conf" in files else "bgpd"]
        for daemon in daemons:
            pid = d / f"{daemon}.pid"
            sh("ip", "netns", "exec", self.ns[name], str(FRR / daemon), "-d", "-f", str(d / f"{daemon}.conf"),
               "-i", str(pid), "-z", str(d / "zserv.api"), "--vty_socket", str(d), "-P", "0",
               "--log", f"file:{d / (daemon + '.log')}")
            self.daemons.append(pid)
            if daemon == "zebra":
                self._wait(lambda: (d / "zserv.api").exists(), f"zebra of {name}")

    def down(self) -> None:
        for pid_file in self.daemons:
            try:
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 5
        for pid_file in self.daemons:
            while time.monotonic() < deadline:
                try:
                    os.kill(int(pid_file.read_text().strip()), 0)
                    time.sleep(0.05)
                except (OSError, ValueError):
                    break
            else:
                try:
                    os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        self.daemons.clear()
        for ns in self.ns.values():
            sh("ip", "netns", "del", ns, check=False)
        self.ns.clear()
        if self.frr_root.exists():  # keep the daemons' logs beside the run for inspection
            shutil.copytree(self.frr_root, self.dir / "frr", dirs_exist_ok=True, ignore=_sockets)
            shutil.rmtree(self.frr_root, ignore_errors=True)

    # ------------------------------------------------------------------ observing
    @staticmethod
    def _wait(cond, what: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if cond():
                return
            time.sleep(0.1)
        raise LabError(f"timed out waiting for {what}")

    def vtysh(self, device: str, daemon: str, command: str) -> str:
        d = self.frr_root / device
        return sh("vtysh", "--vty_socket", str(d), "-d", daemon, "-c", command).stdout

    def bgp_established(self, device: str) -> int:
        data = json.loads(self.vtysh(device, "bgpd", "show bgp summary json") or "{}")
        peers = data.get("ipv4Unicast", {}).get("peers", {})
        return sum(1 for p in peers.values() if p.get("state") == "Established")

    def fib(self, device: str) -> dict[str, set[str]]:
        """Kernel routes of a namespace: prefix → set of next-hop gateways."""
        out = {}
        for r in json.loads(sh("ip", "-n", self.ns[device], "-j", "route").stdout or "[]"):
            dst = r["dst"] if "/" in r["dst"] or r["dst"] == "default" else r["dst"] + "/32"
            gws = {h["gateway"] for h in r.get("nexthops", []) if "gateway" in h}
            if "gateway" in r:
                gws.add(r["gateway"])
            if gws:
                out[dst] = gws
        return out

    def ping(self, src_node: str, src_addr: str, dst_addr: str) -> bool:
        res = sh("ip", "netns", "exec", self.ns[src_node], "ping", "-c", "1", "-W", "1", "-I", src_addr, dst_addr, check=False)
        return res.returncode == 0

    def link_down(self, device: str, ifname: str) -> None:
        sh("ip", "-n", self.ns[device], "link", "set", ifname, "down")

    def wait(self, cond, what: str, timeout: float = 30) -> None:
        self._wait(cond, what, timeout)
