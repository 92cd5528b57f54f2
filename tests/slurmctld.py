"""A private slurmctld (Debian 12's Slurm 22.05) for the tests: its own slurm.conf, state
directory, ports and pid file under a temporary directory, stopped by its pid also on failure.

Recipe (REFERENCE.md, verified 2026-11-23): auth/none + cred/none, every node at
NodeAddr=127.0.0.1 (otherwise each name is looked up in DNS), SlurmctldHost = `hostname -s`,
topology.conf beside slurm.conf.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from .load import slack

SLURMCTLD = shutil.which("slurmctld") or "/usr/sbin/slurmctld"
SCONTROL = shutil.which("scontrol") or "/usr/bin/scontrol"


def missing() -> list[str]:
    return [p for p in (SLURMCTLD, SCONTROL) if not os.access(p, os.X_OK)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slurm_conf(d: Path, nodes: list[str]) -> str:
    port = _free_port()
    lines = [
        f"ClusterName=loom{port}", f"SlurmctldHost={socket.gethostname().split('.')[0]}",
        f"SlurmctldPort={port}", f"SlurmdPort={_free_port()}",
        "AuthType=auth/none", "CredType=cred/none", "MpiDefault=none", "MailProg=/bin/true",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none", "SelectType=select/cons_tres",
        "TopologyPlugin=topology/tree", "SlurmUser=root", "ReturnToService=2",
        f"StateSaveLocation={d / 'state'}", f"SlurmdSpoolDir={d / 'spool'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}", f"SlurmctldLogFile={d / 'slurmctld.log'}",
    ]
    lines += [f"NodeName={n} NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN" for n in nodes]
    lines.append("PartitionName=all Nodes=ALL Default=YES State=UP")
    return "\n".join(lines) + "\n"


@contextmanager
def slurmctld(d: Path, nodes: list[str], topology_conf: str, timeout: float = 90.0, includes: dict[str, str] | None = None):
    """Start slurmctld on a generated slurm.conf (with `topology_conf` beside it, and the files
    `includes` names written beside it and included) and yield a function running scontrol
    against it; SIGTERM (then SIGKILL) when the block ends."""
    (d / "state").mkdir(parents=True)
    (d / "spool").mkdir()
    conf = d / "slurm.conf"
    for name, text in (includes or {}).items():
        (d / name).write_text(text)
    conf.write_text(slurm_conf(d, nodes) + "".join(f"Include {d / name}\n" for name in includes or {}))
    (d / "topology.conf").write_text(topology_conf)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    log = open(d / "slurmctld.out", "w")
    proc = subprocess.Popen([SLURMCTLD, "-D", "-i", "-f", str(conf)], stdout=log, stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)

    def scontrol(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([SCONTROL, *args], env=env, capture_output=True, text=True, timeout=30)

    try:
        deadline = time.monotonic() + timeout * slack()
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"slurmctld exited {proc.returncode}: {(d / 'slurmctld.out').read_text()[-2000:]}")
            if scontrol("ping").stdout.count("UP") and scontrol("show", "topology").returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"slurmctld not up after {timeout:.0f}s: {(d / 'slurmctld.out').read_text()[-2000:]}")
            time.sleep(0.5)
        yield scontrol
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        log.close()
