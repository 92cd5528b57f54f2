"""The embedded simulated fabric as long-running daemons: ibsim plus an OpenSM subnet manager
(file routing engine, LIDs pinned by Loom's guid2lid), tracked by PID files in a state
directory so `loom sim up/down/status`, `loom plan` and `loom apply` can find them again.

State directory: `$LOOM_STATE_DIR/<fabric>` (default `.loom/sim/<fabric>` under the current
directory).  It holds the net file, PID files ("PID START-TIME PROGRAM": a daemon is signalled
only while all three match), the ibsim socket name, OpenSM's cache/log directory `osm/` (with
`lfts.dump`, the file OpenSM's `-U` reads), the fabric lock, the apply journal, the audit log
and the last plan.

Faults end fast: every wait also watches ibsim, every external command has a timeout, and a
dead daemon is named in the error.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loom.expand import Fabric
from loom.model.names import natural
from loom.render.ibsim import ibsim_net

from loom.files import remove_temps, write_atomic
from loom.push.state import no_state, sim_state_dir as state_dir
from loom.push.procs import ProcessRef
from .sim import SimError, client_env, sm_host, start_ibsim, tools_missing

READ_TIMEOUT = 120  # seconds for one dump_fts of the whole fabric (0.7 s on two zones)
HEALTH_EVERY = 0.2  # seconds between looks at the daemons' health while waiting for a sweep
SWEPT = b"SUBNET UP"  # what OpenSM's log says at the end of every sweep
CLIENT_PREFIX = "loom-client-"


def alive(pid: int | None) -> bool:
    """Does a (non-zombie) process with this pid exist?  Tests use it on pids they hold."""
    return bool(pid) and ProcessRef.of(pid, "").start is not None


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
    def partitions_file(self) -> Path:
        """OpenSM's partitions (`-P`); absent: OpenSM's default, every port full in 0x7fff."""
        return self.osm / "partitions.conf"

    @property
    def guid2lid_file(self) -> Path:
        return self.osm / "guid2lid"

    @property
    def log(self) -> Path:
        return self.osm / "osm.log"

    def _read(self, name: str) -> str | None:
        """A small record of the daemons (PID file, socket, host); bytes that are no UTF-8 read as
        U+FFFD, which no reader takes for a pid or a path."""
        p = self.dir / name
        return p.read_text(errors="replace").strip() if p.exists() else None

    def proc(self, name: str) -> ProcessRef | None:
        """The daemon `name` ("ibsim", "opensm") if its PID file names a process that runs it."""
        ref = ProcessRef.parse(self._read(f"{name}.pid") or "", name)
        return ref if ref and ref.alive() else None

    def pid(self, name: str) -> int | None:
        ref = self.proc(name)
        return ref.pid if ref else None

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
        ib, sm = self.proc("ibsim"), self.proc("opensm")
        log = self.log.read_text(errors="replace") if self.log.exists() else ""
        return {
            "state_dir": str(self.dir),
            "ibsim": {"pid": ib and ib.pid, "running": ib is not None, "socket": self.sock},
            "opensm": {"pid": sm and sm.pid, "running": sm is not None, "sm_host": self.sm_host},
            "subnet_up": ib is not None and sm is not None and "SUBNET UP" in log,
            "sweeps": log.count("SUBNET UP"),
            "routing_engine": engines_in(log)[-1] if engines_in(log) else None,
        }

    def dead(self) -> list[str] | None:
        """The daemons started and no longer running (killed, crashed): their PID file stands
        (`stop` removes it) but names no running process, as `proc` (and so `status`) judges it.
        None when neither was started: a fabric never up, or stopped by `loom sim down`."""
        started = [name for name in ("ibsim", "opensm") if (self.dir / f"{name}.pid").exists()]
        return [name for name in started if self.proc(name) is None] if started else None

    def up_and_running(self) -> bool:
        return self.status()["subnet_up"]

    def fabric_down(self) -> bool:
        """The fabric itself is gone (ibsim not running): nothing can be read or pushed."""
        return self.proc("ibsim") is None

    def health(self) -> None:
        """Raise SimError naming the daemon that is down."""
        if self.fabric_down():
            log, where = self.dir / "ibsim.log", no_state(self.dir)
            raise SimError("ibsim (the simulated fabric) is not running" + _panic(log) + (f"; see {log}" if log.exists() else "")
                           + (f" ({where})" if where else "") + "; `loom sim up` starts it")
        if self.proc("opensm") is None:
            raise SimError(f"OpenSM is not running; see {self.log}; `loom sim up` restarts it")

    # ------------------------------------------------------------------ lifecycle
    def cabled_as(self, fabric: Fabric) -> bool:
        """Is the running simulation cabled as this model says?"""
        net = self.dir / "fabric.net"
        return net.exists() and net.read_text() == ibsim_net(fabric, 0)

    def start(self, fabric: Fabric, guid2lid: str, conf: str = "qos FALSE\n", timeout: float = 120) -> str:
        """Bring the fabric up (idempotent): 'already up', 'started', or 're-cabled' when it runs
        with other cabling (the technician's work: ibsim restarts with the model's cables and
        OpenSM reloads the tables it last had, so what was applied stays applied).
        The caller holds the fabric lock and has settled any interrupted apply."""
        if self.up_and_running():
            if self.cabled_as(fabric):
                return "already up"
            self.stop()
            self.osm.mkdir(parents=True, exist_ok=True)
            self._start_ibsim(fabric, timeout)
            write_atomic(self.guid2lid_file, guid2lid)
            self.start_opensm(timeout)
            return "re-cabled"
        missing = tools_missing()
        if missing:
            raise SimError(f"simulator tools missing: {', '.join(missing)} (run `make setup`)")
        self.stop()  # clear a half-up state
        self.osm.mkdir(parents=True, exist_ok=True)
        write_atomic(self.guid2lid_file, guid2lid)
        if not self.conf_file.exists():
            write_atomic(self.conf_file, conf)
        self._start_ibsim(fabric, timeout)
        self.start_opensm(timeout)
        return "started"

    def _start_ibsim(self, fabric: Fabric, timeout: float) -> None:
        sock = f"loom-{fabric.name}-{uuid.uuid4().hex[:8]}"
        write_atomic(self.dir / "ibsim.sock", sock + "\n")
        write_atomic(self.dir / "sm_host", sm_host(fabric, 0) + "\n")
        proc = start_ibsim(fabric, 0, self.dir, sock, timeout)
        write_atomic(self.dir / "ibsim.pid", ProcessRef.of(proc.pid, "ibsim").line())

    def start_opensm(self, timeout: float = 120) -> str:
        """Start OpenSM as a daemon and wait for its first sweep; return the engine it used.
        A new OpenSM programs every LFT block and QoS table on every port (it knows nothing of
        what they hold), which is how `push` repairs drift made directly on a switch.
        Log flags 0x03 (errors, info: the engine line and the traps the watcher follows): with
        0x40 OpenSM writes ~57 MB of dump files on every sweep of a two-zone fabric, which
        nothing reads from a running SM and which slowed each sweep (and so each watcher event)."""
        before = self.sweeps()
        args = ["opensm", "-s", "0", "-d2", "-D", "0x03", "-F", str(self.conf_file), "-R", "file", "-U", str(self.lfts_file),
                "-P", str(self.partitions_file), "-f", str(self.log), "--dump_files_dir", str(self.osm)]
        with open(self.dir / "opensm.out", "ab") as out:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=self.dir,
                                    env=self.env(), start_new_session=True)
        write_atomic(self.dir / "opensm.pid", ProcessRef.of(proc.pid, "opensm").line())
        return self.wait_sweep(before, timeout)

    def sweeps(self) -> int:
        return self.log.read_text(errors="replace").count("SUBNET UP") if self.log.exists() else 0

    def wait_sweep(self, before: int, timeout: float) -> str:
        """Wait for a sweep after `before` completed ones; return the routing engine it used.
        Asked every 10 ms: a watcher's reroute waits here for half a second, and at 50 ms it
        noticed the sweep 25 ms late on average (the log is a few kilobytes per sweep)."""
        if not self.await_sweeps(before, timeout):
            raise SimError(f"OpenSM did not finish a sweep within {timeout:.0f}s; see {self.log}")
        return engines_in(self.log.read_text(errors="replace"))[-1]

    def await_sweeps(self, count: int, timeout: float) -> bool:
        """Wait until more than `count` sweeps are finished; False if not within `timeout`.
        Looked at every 10 ms, but only in the log written since the wait began, and the daemons'
        health every `HEALTH_EVERY`: a full apply waits here ~5 s while OpenSM and ibsim need
        both cores, and reading the whole log and /proc at each look took 0.7 s of CPU from them."""
        deadline, healthy_until = time.monotonic() + timeout, 0.0
        seen = self.log.read_bytes() if self.log.exists() else b""
        start, before = len(seen), seen.count(SWEPT)
        while self._sweeps_from(start, before) <= count:
            now = time.monotonic()
            if now > deadline:
                return False
            if now >= healthy_until:
                self.health()
                healthy_until = now + HEALTH_EVERY
            time.sleep(0.01)
        return True

    def _sweeps_from(self, offset: int, before: int) -> int:
        """`sweeps()`, knowing that the log's first `offset` bytes hold `before` of them: only
        what came after is read (all of it if the log was started anew), from a few bytes before
        `offset` — a line written in two pieces may have split the mark there, and a whole mark
        cannot fit in those few bytes, so none is counted twice."""
        try:
            with open(self.log, "rb") as f:
                if f.seek(0, os.SEEK_END) < offset:
                    return self.sweeps()
                f.seek(max(0, offset - len(SWEPT) + 1))
                return before + f.read().count(SWEPT)
        except FileNotFoundError:
            return 0

    def reload(self, timeout: float = 120) -> str:
        """Make OpenSM re-read its files (SIGHUP → heavy sweep); return the engine it used.
        OpenSM then sends only what differs from what it believes the switches hold."""
        self.health()
        before = self.sweeps()
        os.kill(self.pid("opensm"), signal.SIGHUP)
        return self.wait_sweep(before, timeout)

    def push(self, timeout: float = 120) -> str:
        """Load the input files onto every switch and port, whatever OpenSM believed they hold:
        restart OpenSM (see `start_opensm`).  Return the routing engine it used."""
        if self.fabric_down():
            self.health()
        self._stop_one("opensm")
        return self.start_opensm(timeout)

    def stop(self) -> list[str]:
        """Stop OpenSM then ibsim (SIGTERM, then SIGKILL); remove their PID files.  A PID file
        naming another program or a process started later (pid reused) is removed, not signalled."""
        stopped = [s for s in (self._stop_one("opensm"), self._stop_one("ibsim")) if s]
        self.clean_leftovers()
        return stopped

    def _stop_one(self, name: str) -> str | None:
        ref = self.proc(name)
        if ref:
            _terminate(ref)
        (self.dir / f"{name}.pid").unlink(missing_ok=True)
        return f"{name} (pid {ref.pid})" if ref else None

    def clean_leftovers(self) -> None:
        """Temp files of killed writers, and the `sys-<pid>` trees umad2sim leaves in the cwd of
        a daemon or client (its scratch directory) that did not exit cleanly."""
        for d in (self.dir, self.osm):
            if d.exists():
                remove_temps(d)
        for tree in self.dir.glob("sys-*"):
            pid = tree.name[4:]
            if pid.isdigit() and not alive(int(pid)):
                shutil.rmtree(tree, ignore_errors=True)
        for scratch in Path(tempfile.gettempdir()).glob(f"{CLIENT_PREFIX}*-*"):
            pid = scratch.name[len(CLIENT_PREFIX):].split("-")[0]
            if pid.isdigit() and not alive(int(pid)):
                shutil.rmtree(scratch, ignore_errors=True)

    def kill(self, name: str) -> None:
        """Kill a daemon without cleanup (tests use it to play a crash)."""
        ref = self.proc(name)
        if ref:
            os.killpg(ref.pid, signal.SIGKILL)
            deadline = time.monotonic() + 5
            while ref.alive() and time.monotonic() < deadline:  # SIGKILL is delivered, not instant
                _reap(ref.pid)
                time.sleep(0.01)

    # ------------------------------------------------------------------ reading the fabric
    def client(self, args: list[str]) -> subprocess.CompletedProcess:
        """Run a diagnostic tool (dump_fts, ibnetdiscover, ...) as a client of the fabric from
        the subnet manager's port; SimError when it fails or hangs."""
        if self.fabric_down():
            self.health()
        try:
            with client_dir() as cwd:
                res = subprocess.run(args, cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=READ_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise SimError(f"{args[0]} did not finish within {READ_TIMEOUT}s (is ibsim answering?)") from None
        if res.returncode != 0:
            raise SimError(f"{args[0]} failed (exit {res.returncode}): {res.stderr.strip()[-300:]}")
        return res

    def dump_fts(self, expect: int | None = None) -> str:
        """Every switch's LFT as OpenSM's dump format (read over the fabric, not from OpenSM).
        `expect`: how many switches must answer (default: all of the simulation's; fewer when
        the caller knows some are down)."""
        res = self.client(["dump_fts"])
        # dump_fts exits 0 when it could not read some switches (it only warns): count them
        want, got = expect if expect is not None else self._switches(), res.stdout.count("Unicast lids [")
        if got < want:
            silent = sorted(set(self._switch_names()) - set(re.findall(r"^Unicast lids \[.*\('?([^()']*)'?\):$", res.stdout, re.M)),
                            key=natural)
            warned = res.stderr.strip()[-300:]
            raise SimError(f"dump_fts read the tables of {got} of {want} switches; no answer from "
                           f"{', '.join(silent[:8]) or 'switches the dump does not name'}"
                           + (f" and {len(silent) - 8} more" if len(silent) > 8 else "")
                           + f": down? `loom mark down MODEL {silent[0] if silent else 'SWITCH'} --reason ...` routes around "
                           "it, or bring it back (`loom sim link up MODEL SWITCH`), then plan again"
                           + (f" (dump_fts: {warned})" if warned else ""))
        return res.stdout

    def _switch_names(self) -> list[str]:
        """Switches of the running simulation, by name (its net file)."""
        net = self.dir / "fabric.net"
        return re.findall(r'^Switch\s+\d+\s+"([^"]+)"', net.read_text(), re.M) if net.exists() else []

    def _switches(self) -> int:
        return len(self._switch_names())


@contextmanager
def client_dir():
    """A scratch working directory for a short-lived simulator client: umad2sim writes a
    `sys-<pid>` tree into its client's cwd, which must neither fill nor depend on the state
    directory (a full or read-only state disk must not stop loom from reading the fabric)."""
    with tempfile.TemporaryDirectory(prefix=f"{CLIENT_PREFIX}{os.getpid()}-") as d:
        yield d


def _panic(log: Path) -> str:
    """ibsim's own last words when it gave up (`ibpanic: ...`, e.g. a client that died while
    ibsim connected back to it), so the error says why the fabric went, not only that it did."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            tail = f.read().decode(errors="replace")
    except OSError:
        return ""
    said = [l.strip() for l in tail.splitlines() if "ibpanic" in l]
    return f" (it stopped with: {said[-1][:200]})" if said else ""


def engines_in(log: str) -> list[str]:
    return [l.split("osm_ucast_mgr_process: ")[1].split(" tables configured")[0]
            for l in log.splitlines() if "tables configured" in l]


def _terminate(ref: ProcessRef) -> None:
    try:
        os.killpg(ref.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 10
    while ref.alive() and time.monotonic() < deadline:
        _reap(ref.pid)
        time.sleep(0.05)
    if ref.alive():
        os.killpg(ref.pid, signal.SIGKILL)
    _reap(ref.pid)


def _reap(pid: int) -> None:
    """Collect the exit status if the process is our child (otherwise init does it)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
