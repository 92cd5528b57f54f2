"""The simulated InfiniBand fabric: ibsim carrying Loom's expanded fabric, and the real OpenSM,
infiniband-diags and ibdmchk running against it through umad2sim.

Side effects live here: processes, sockets, files in a work directory.  `SimFabric` is a
context manager that always stops ibsim (tests use it; `loom sim up/down` builds on it).
Every run gets its own ibsim socket name, so parallel runs never talk to each other's fabric.
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from loom.expand import Fabric
from loom.render.ibsim import ibsim_net

from loom.push.errors import TargetError
from loom.files import write_atomic
from loom.push.links import LINKS_DOWN

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"


class SimError(TargetError):
    """The simulator or a tool run against it failed; the message says which and where its log is."""


def tools_missing() -> list[str]:
    need = ["ibsim", "opensm", "dump_fts", "ibdmchk"]
    return [t for t in need if shutil.which(t) is None] + ([] if Path(UMAD2SIM).exists() else [UMAD2SIM])


def minimal_env(**extra: str) -> dict:
    """The environment external programs get: a PATH that finds the sbin tools, a locale and
    `extra` — never the user's whole environment (tokens, passwords, SSH agents)."""
    path = os.environ.get("PATH", "/usr/bin:/bin")
    return {"PATH": ":".join(dict.fromkeys(path.split(":") + ["/usr/sbin", "/sbin"])), "LANG": "C.UTF-8", **extra}


def client_env(sock: str, host: str, **extra: str) -> dict:
    """Environment of a client of the simulated fabric: umad2sim, the CA it attaches to, the socket."""
    return minimal_env(LD_PRELOAD=UMAD2SIM, SIM_HOST=host, IBSIM_SOCKNAME=sock, **extra)


CONSOLE = "ibsim.console"
PROMPT = "sim> "


def open_console(directory: Path) -> int:
    """A fresh FIFO for a new ibsim's stdin, opened read-write (the caller passes it to ibsim
    and closes its own copy); every link of a new ibsim is up, so the record is cleared."""
    path = Path(directory) / CONSOLE
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path, 0o600)
    (Path(directory) / LINKS_DOWN).unlink(missing_ok=True)
    return os.open(path, os.O_RDWR | os.O_CLOEXEC)


def console(directory: Path, commands: list[str], timeout: float = 10) -> list[str]:
    """Send commands to ibsim; return its answer to each.  Raises SimError when ibsim is not
    listening or refuses a command (the answer names the reason)."""
    path, log = Path(directory) / CONSOLE, Path(directory) / "ibsim.log"
    if not (path.exists() and stat.S_ISFIFO(path.stat().st_mode)):
        raise SimError(f"ibsim in {directory} has no console (started by an older loom?); `loom sim down` and `loom sim up`")
    start = log.stat().st_size if log.exists() else 0
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # ENXIO: nobody reads the FIFO, ibsim is gone
        raise SimError(f"ibsim is not running (nothing reads {path}); `loom sim up` starts it") from None
    try:
        os.write(fd, "".join(c + "\n" for c in commands).encode())
    finally:
        os.close(fd)
    deadline = time.monotonic() + timeout
    while True:
        with open(log, "rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        answers = text.split(PROMPT)
        if len(answers) > len(commands):
            break
        if time.monotonic() > deadline:
            raise SimError(f"ibsim did not answer {commands[len(answers) - 1]!r} within {timeout}s; see {log}")
        time.sleep(0.02)
    answers = [a.strip() for a in answers[:len(commands)]]
    refused = [f"{c}: {a.lstrip('# ')}" for c, a in zip(commands, answers) if a.startswith("#")]
    if refused:
        raise SimError("ibsim refused " + "; ".join(refused))
    return answers


def start_ibsim(fabric: Fabric, plane: int, directory: Path, sock: str, timeout: float) -> subprocess.Popen:
    """Write the net file, start ibsim (limits raised to fit, private socket name, its own
    session so it can be killed as a group, its console on a FIFO) and wait until its socket is open."""
    net = write_atomic(directory / "fabric.net", ibsim_net(fabric, plane))
    switches = sum(1 for s in fabric.switches if s.plane == plane)
    cas = len({p.ca for p in fabric.ports if p.plane == plane})
    ports = sum(s.ports + 1 for s in fabric.switches if s.plane == plane) + 2 * cas
    limits = ["-N", str(max(2048, 2 * (switches + cas))), "-S", str(max(256, 2 * switches)), "-P", str(max(13312, 2 * ports))]
    console_fd = open_console(directory)  # its console: link events (loom sim link down|up)
    try:
        with open(directory / "ibsim.log", "wb") as log:
            proc = subprocess.Popen(["ibsim", "-s", *limits, str(net)], stdin=console_fd, stdout=log,
                                    stderr=subprocess.STDOUT, cwd=directory, start_new_session=True,
                                    env=minimal_env(IBSIM_SOCKNAME=sock))
    finally:
        os.close(console_fd)
    deadline = time.monotonic() + timeout
    while f"@{sock}:ctl" not in Path("/proc/net/unix").read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            raise SimError(f"ibsim did not come up (exit {proc.returncode}); see {directory / 'ibsim.log'}")
        time.sleep(0.05)
    return proc


@dataclass
class OpenSMRun:
    dir: Path
    seconds: float
    engine_used: str  # the engine OpenSM reports in its log ("file", "ftree", "minhop", ...)

    def dump(self, name: str) -> str:
        return (self.dir / name).read_text()


def sm_host(fabric: Fabric, plane: int) -> str:
    """CA the subnet manager runs on: the model's subnet_manager node, else the first CA."""
    ports = [p for p in fabric.ports if p.plane == plane]
    if fabric.model.subnet_manager:
        node = fabric.node_index[fabric.model.subnet_manager]
        mine = [p for p in ports if p.node == node]
        if mine:
            return mine[0].ca
    return ports[0].ca


class SimFabric:
    """ibsim running one plane of a fabric. Use as `with SimFabric(fabric, workdir) as sim:`."""

    def __init__(self, fabric: Fabric, workdir: Path, plane: int = 0) -> None:
        self.fabric = fabric
        self.plane = plane
        self.dir = Path(workdir)
        self.sock = f"loom-{uuid.uuid4().hex[:12]}"
        self.sm_host = sm_host(fabric, plane)
        self.proc: subprocess.Popen | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = 30) -> "SimFabric":
        self.dir.mkdir(parents=True, exist_ok=True)
        self.proc = start_ibsim(self.fabric, self.plane, self.dir, self.sock, timeout)
        return self

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> "SimFabric":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ clients
    def env(self, host: str | None = None) -> dict:
        return client_env(self.sock, host or self.sm_host)

    def run(self, args: list[str], cwd: Path | None = None, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
        res = subprocess.run(args, cwd=cwd or self.dir, env=self.env(), capture_output=True, text=True, timeout=timeout)
        if check and res.returncode != 0:
            raise SimError(f"{' '.join(args)} exited with {res.returncode}: {res.stderr.strip()[-500:]}")
        return res

    def opensm_once(self, name: str, engine: str, lfts: str | None = None, guid2lid: str | None = None,
                    extra: list[str] = ()) -> OpenSMRun:
        """One OpenSM sweep (`-o`) with the given routing engine; dumps land in a fresh dir."""
        d = self.dir / name
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        args = ["opensm", "-o", "-D", "0x43", "-f", str(d / "osm.log"), "-R", engine, "--dump_files_dir", str(d), *extra]
        if lfts is not None:
            write_atomic(d / "lfts.in", lfts)
            args += ["-U", str(d / "lfts.in")]
        if guid2lid is not None:
            write_atomic(d / "guid2lid", guid2lid)
        env = {**self.env(), "OSM_TMP_DIR": str(d), "OSM_CACHE_DIR": str(d)}
        t0 = time.perf_counter()
        res = subprocess.run(args, cwd=d, env=env, capture_output=True, text=True, timeout=900)
        seconds = time.perf_counter() - t0
        log = (d / "osm.log").read_text(errors="replace") if (d / "osm.log").exists() else ""
        used = [l.split("osm_ucast_mgr_process: ")[1].split(" tables configured")[0]
                for l in log.splitlines() if "tables configured" in l]
        if res.returncode != 0 or not used:
            raise SimError(f"opensm -R {engine} failed (rc {res.returncode}); see {d / 'osm.log'}")
        return OpenSMRun(d, seconds, used[-1])

    def dump_fts(self) -> str:
        return self.run(["dump_fts"]).stdout


def ibdmchk(run_dir: Path, extra: tuple[str, ...] = (), timeout: float = 900) -> tuple[bool | None, str, float]:
    """Run ibdmchk on an OpenSM run's dumps → (credit-loop free?, report text, seconds).
    `extra`: more arguments, e.g. `-c path-sl -d sl2vl` for traffic on several VLs.

    ibdmchk segfaults after printing its report (rc 139), so the verdict is read from stdout.
    When the routing leaves CA pairs without a path, ibdmchk stops before the credit-loop
    analysis: the verdict is then None.
    """
    mc = run_dir / "opensm.mcfdbs"
    if not mc.exists():
        mc.write_text("")
    t0 = time.perf_counter()
    res = subprocess.run(["ibdmchk", "-s", "opensm-subnet.lst", "-f", "opensm.fdbs", "-m", "opensm.mcfdbs", *extra],
                         cwd=run_dir, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    out = res.stdout
    if "no credit loops found" in out:
        return True, out, seconds
    if "credit loops in routing" in out.lower() or "-E- credit loop" in out:
        return False, out, seconds
    if "Fail to find a path" in out:
        return None, out, seconds
    raise SimError(f"ibdmchk gave no credit-loop verdict (rc {res.returncode}) in {run_dir}")
