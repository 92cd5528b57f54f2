"""The embedded simulated fabric as long-running daemons: ibsim plus an OpenSM subnet manager
(file routing engine, LIDs pinned by Loom's guid2lid), tracked by PID files in a state
directory so `loom sim up/down/status`, `loom plan` and `loom apply` can find them again.

State directory: `$LOOM_STATE_DIR/<fabric>` (default `.loom/sim/<fabric>` under the current
directory).  It holds the net file, PID files, the ibsim socket name, OpenSM's cache/log
directory `osm/` (with `lfts.dump`, the file OpenSM's `-U` reads), the apply lock, the audit
log and the last plan.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from loom.expand import Fabric
from loom.render.ibsim import ibsim_net

from .files import write_atomic
from .sim import SimError, client_env, sm_host, start_ibsim, tools_missing


def state_dir(fabric_name: str) -> Path:
    root = Path(os.environ.get("LOOM_STATE_DIR", ".loom/sim"))
    return (root / fabric_name).resolve()


def alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


@dataclass
class Daemons:
    """The daemons of one fabric's simulation, found through its state directory."""

    dir: Path

    @classmethod
    def of(cls, fabric_name: str) -> "Daemons":
        return cls(state_dir(fabric_name))

    # ------------------------------------------------------------------ files
    @property
    def osm(self) -> Path:
        return self.dir / "osm"

    @property
    def lfts_file(self) -> Path:
        return self.osm / "lfts.dump"

    @property
    def conf_file(self) -> Path:
        """OpenSM's options file (`-F`): loom writes only the QoS options into it."""
        return self.osm / "opensm.conf"

    @property
    def log(self) -> Path:
        return self.osm / "osm.log"

    def _read(self, name: str) -> str | None:
        p = self.dir / name
        return p.read_text().strip() if p.exists() else None

    def pid(self, name: str) -> int | None:
        v = self._read(f"{name}.pid")
        return int(v) if v else None

    @property
    def sock(self) -> str | None:
        return self._read("ibsim.sock")

    @property
    def sm_host(self) -> str | None:
        return self._read("sm_host")

    def env(self) -> dict:
        return client_env(self.sock or "", self.sm_host or "", OSM_TMP_DIR=str(self.osm), OSM_CACHE_DIR=str(self.osm))

    # ------------------------------------------------------------------ status
    def status(self) -> dict:
        ib, sm = self.pid("ibsim"), self.pid("opensm")
        log = self.log.read_text(errors="replace") if self.log.exists() else ""
        return {
            "state_dir": str(self.dir),
            "ibsim": {"pid": ib, "running": alive(ib), "socket": self.sock},
            "opensm": {"pid": sm, "running": alive(sm), "sm_host": self.sm_host},
            "subnet_up": "SUBNET UP" in log,
            "sweeps": log.count("SUBNET UP"),
            "routing_engine": engines_in(log)[-1] if engines_in(log) else None,
        }

    def up_and_running(self) -> bool:
        s = self.status()
        return s["ibsim"]["running"] and s["opensm"]["running"] and s["subnet_up"]

    # ------------------------------------------------------------------ lifecycle
    def cabled_as(self, fabric: Fabric) -> bool:
        """Is the running simulation cabled as this model says?"""
        net = self.dir / "fabric.net"
        return net.exists() and net.read_text() == ibsim_net(fabric, 0)

    def start(self, fabric: Fabric, guid2lid: str, conf: str = "qos FALSE\n", timeout: float = 120) -> str:
        """Bring the fabric up (idempotent): 'already up', 'started', or 're-cabled' when it runs
        with other cabling (the technician's work: ibsim restarts with the model's cables and
        OpenSM reloads the tables it last had, so what was applied stays applied)."""
        if self.up_and_running():
            if self.cabled_as(fabric):
                return "already up"
            self.stop()
            self.osm.mkdir(parents=True, exist_ok=True)
            self._start_ibsim(fabric, timeout)
            write_atomic(self.osm / "guid2lid", guid2lid)
            self.start_opensm(timeout)
            return "re-cabled"
        missing = tools_missing()
        if missing:
            raise SimError(f"simulator tools missing: {', '.join(missing)} (run `make setup`)")
        self.stop()  # clear a half-up state
        self.osm.mkdir(parents=True, exist_ok=True)
        self._start_ibsim(fabric, timeout)
        write_atomic(self.osm / "guid2lid", guid2lid)
        write_atomic(self.conf_file, conf)
        self.start_opensm(timeout)
        return "started"

    def _start_ibsim(self, fabric: Fabric, timeout: float) -> None:
        sock = f"loom-{fabric.name}-{uuid.uuid4().hex[:8]}"
        write_atomic(self.dir / "ibsim.sock", sock + "\n")
        write_atomic(self.dir / "sm_host", sm_host(fabric, 0) + "\n")
        proc = start_ibsim(fabric, 0, self.dir, sock, timeout)
        write_atomic(self.dir / "ibsim.pid", f"{proc.pid}\n")

    def start_opensm(self, timeout: float = 120) -> str:
        """Start OpenSM as a daemon and wait for its first sweep; return the engine it used."""
        before = self.sweeps()
        args = ["opensm", "-s", "0", "-d2", "-D", "0x43", "-F", str(self.conf_file), "-R", "file", "-U", str(self.lfts_file),
                "-f", str(self.log), "--dump_files_dir", str(self.osm)]
        with open(self.dir / "opensm.out", "ab") as out:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self.dir,
                                    env=self.env(), start_new_session=True)
        write_atomic(self.dir / "opensm.pid", f"{proc.pid}\n")
        return self.wait_sweep(before, timeout)

    def sweeps(self) -> int:
        return self.log.read_text(errors="replace").count("SUBNET UP") if self.log.exists() else 0

    def wait_sweep(self, before: int, timeout: float) -> str:
        """Wait for a sweep after `before` completed ones; return the routing engine it used."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.sweeps() > before:
                return engines_in(self.log.read_text(errors="replace"))[-1]
            if not alive(self.pid("opensm")):
                raise SimError(f"OpenSM died; see {self.log}")
            time.sleep(0.05)
        raise SimError(f"OpenSM did not finish a sweep within {timeout:.0f}s; see {self.log}")

    def reload(self, timeout: float = 120) -> str:
        """Make OpenSM re-read its files (SIGHUP → heavy sweep); return the engine it used."""
        pid = self.pid("opensm")
        if not alive(pid):
            raise SimError("OpenSM is not running")
        before = self.sweeps()
        os.kill(pid, signal.SIGHUP)
        return self.wait_sweep(before, timeout)

    def stop(self) -> list[str]:
        """Stop OpenSM then ibsim (SIGTERM, then SIGKILL); remove their PID files."""
        stopped = []
        for name in ("opensm", "ibsim"):
            pid = self.pid(name)
            if alive(pid):
                _terminate(pid)
                stopped.append(f"{name} (pid {pid})")
            (self.dir / f"{name}.pid").unlink(missing_ok=True)
        return stopped

    def kill_opensm(self) -> None:
        """Kill OpenSM without cleanup (tests use it to play a crash)."""
        pid = self.pid("opensm")
        if alive(pid):
            os.killpg(pid, signal.SIGKILL)
            _reap(pid)

    # ------------------------------------------------------------------ reading the fabric
    def dump_fts(self) -> str:
        res = subprocess.run(["dump_fts"], cwd=self.dir, env=self.env(), capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise SimError(f"dump_fts failed: {res.stderr.strip()[-300:]}")
        return res.stdout

    def audit(self, record: dict) -> None:
        with open(self.dir / "audit.log", "a") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")


def engines_in(log: str) -> list[str]:
    return [l.split("osm_ucast_mgr_process: ")[1].split(" tables configured")[0]
            for l in log.splitlines() if "tables configured" in l]


def _terminate(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.05)
    if alive(pid):
        os.killpg(pid, signal.SIGKILL)
    _reap(pid)


def _reap(pid: int) -> None:
    """Collect the exit status if the process is our child (otherwise init does it)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
