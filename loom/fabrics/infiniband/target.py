"""Where plan and apply send things: one small interface, one module per target, found by kind
in `targets.py` — as routing engines sit behind `loom.routing` (what a change *is* never
depends on where it goes).

    sim   the embedded simulated fabric (`loom sim up`; `SimTarget`, this module), the default
    ssh   the fabric's subnet-manager hosts, a master and its standbys (`loom.fabrics.infiniband.ssh`)

A target answers for one InfiniBand subnet.  Everything plan and apply (and later watchers) do
goes through these methods; the local state directory `dir` holds the fabric lock, the apply
journal, the audit log and what was applied last, whatever the target.

Input files are named by role, not path: "lfts" (OpenSM's `-U` / `lfts_file`), "conf" (Loom's
QoS options — on an SSH host merged into the site's options file, see `loom.render.sm_host`) and
"guid2lid" (pinned LIDs) and "partitions" (OpenSM's partitions.conf, `loom.fabrics.infiniband.pkeys`).
`None` means "absent" when read and "remove" when written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from loom.expand import Fabric
from loom.routing.subnet import Subnet

from .daemon import Daemons
from .qos_readback import read_qos
from loom.push.errors import TargetError

from .sminfo import SmPort

INPUTS = ("lfts", "conf", "guid2lid", "partitions")


class Target(Protocol):
    """What plan and apply need from a fabric's subnet manager(s)."""

    kind: str
    dir: Path  # local state: lock, journal, audit log, last applied

    def spec(self) -> dict:
        """JSON a plan records to find this target again (hosts, paths; never keys or secrets)."""

    def where(self) -> str:
        """Where the inputs live, for messages."""

    def health(self) -> None:
        """Raise TargetError naming what is down."""

    def subnet_managers(self) -> tuple[SmPort, list[SmPort]]:
        """The master subnet manager and every SM port, asked of the fabric (SMInfo, `sminfo.py`);
        TargetError naming them when none or several are master (plan and apply refuse)."""

    def fabric_down(self) -> bool:
        """Is the fabric unreachable, so nothing can be read or pushed (a restore only writes)?"""

    def bring_up(self, model: str) -> str:
        """What the user does to get the subnet managed again, for a message (per target)."""

    def cabled_as(self, fabric: Fabric) -> bool:
        """Is the fabric cabled as `fabric` says (as far as the target can tell)?"""

    def missing_cables(self, design: Fabric) -> list[str]:
        """The design's cables (IDs) that are not up now: the observed part of the fabric as it
        stands (`loom.fabrics.infiniband.observed`); TargetError if cabled otherwise than the design."""

    def read_lfts(self, expect: int | None = None) -> str:
        """Every switch's LFT read over the fabric, in OpenSM's dump format (`dump_fts`); fewer
        than all switches answering is an error, unless `expect` says how many are in service."""

    def read_qos(self, sn: Subnet) -> dict:
        """SL2VL and VLArb of every cabled port, by directed route from the master's port."""

    def read_ports(self, fabric: Fabric, sn: Subnet) -> dict:
        """Port counters, state, active width and speed of both ends of every cable of `sn`'s
        plane (`loom.fabrics.infiniband.port_counters.read_ports`: what the health checks judge)."""

    def sm_ca(self) -> str:
        """The CA whose port the master's OpenSM uses (directed routes start there)."""

    def smp(self, jobs: list[dict], what: str, every: bool = True) -> list[dict]:
        """Answer `loom.fabrics.infiniband.madquery` jobs from the master's port (a change's read-back of the
        blocks it touched, the watcher's port states); a job without an answer raises
        TargetError naming it, or with `every=False` is left out of the answers."""

    def read_inputs(self) -> dict[str, str | None]:
        """The master's current input files {"lfts", "conf", "guid2lid", "partitions"}."""

    def kept_inputs(self) -> dict[str, str | Path | None]:
        """The master's input files as an apply's journal keeps them: a local file (the
        simulator's) by its path, to be hard-linked instead of read and copied; a remote one
        as its text (`read_inputs`)."""

    def write_inputs(self, files: dict[str, str | None]) -> None:
        """Write input files on every SM host, all or nothing per host, each atomically."""

    def push(self, timeout: float) -> str:
        """Make the master program the fabric from its inputs and wait for the sweep; return
        the routing engine OpenSM used ("file" unless it rejected the tables)."""

    def reload(self, timeout: float) -> str:
        """Make the master re-read its inputs (SIGHUP) and wait for the sweep: it sends only what
        differs from what it programmed.  For table changes only (the watcher's)."""

    def sweeps(self) -> int:
        """How many sweeps the master's OpenSM has finished (`SUBNET UP` in its log)."""

    def await_sweeps(self, count: int, timeout: float) -> bool:
        """Wait until the master has finished more than `count` sweeps; False if it has not
        within `timeout` seconds."""

    def standby_drift(self, files: dict[str, str | None]) -> list[str]:
        """Standby hosts whose input files differ from `files` (one line each)."""

    def clean_leftovers(self) -> None:
        """Remove what killed writers or clients left behind."""

    def run(self, args: list[str], timeout: float = 120) -> str:
        """Run a read-only command where the master's port is (discovery); return its stdout."""

    def close(self) -> None:
        """Release connections (the SSH target's multiplexed sessions)."""


class SimTarget:
    """The embedded simulated fabric: a thin adapter over `Daemons` (ibsim + one OpenSM)."""

    kind = "sim"

    def __init__(self, daemons: Daemons) -> None:
        self.d = daemons
        self.dir = daemons.dir

    @classmethod
    def of(cls, fabric_name: str) -> "SimTarget":
        return cls(Daemons.of(fabric_name))

    def spec(self) -> dict:
        return {"kind": self.kind}

    def where(self) -> str:
        return str(self.d.osm)

    def health(self) -> None:
        self.d.health()

    def subnet_managers(self) -> tuple[SmPort, list[SmPort]]:
        """SMInfo asked from the CA of Loom's OpenSM (its port's LID read locally, by directed
        route) and of every port the SA lists as an SM (another OpenSM a test starts)."""
        from .sminfo import the_master

        ports = self._ports()
        return the_master(ports, f"the simulated fabric {self.dir.name}"), ports

    def _ports(self) -> list[SmPort]:
        from .sminfo import local_lid, parse, script

        own = local_lid(self.run(["smpquery", "-D", "portinfo", "0"]))
        return parse(self.run(["sh", "-c", script([own])]), {own: self.d.sm_host})

    def fabric_down(self) -> bool:
        return self.d.fabric_down()

    def bring_up(self, model: str) -> str:
        return f"run `loom sim up {model}` (it loads the restored inputs, checked)"

    def cabled_as(self, fabric: Fabric) -> bool:
        return self.d.cabled_as(fabric)

    def missing_cables(self, design: Fabric) -> list[str]:
        from loom.push.links import links_down

        from .observed import missing_in_simulation

        return missing_in_simulation(self.d.dir / "fabric.net", links_down(self.dir), design)

    def read_lfts(self, expect: int | None = None) -> str:
        return self.d.dump_fts(expect)

    def read_qos(self, sn: Subnet) -> dict:
        return read_qos(self.d, sn)

    def read_ports(self, fabric: Fabric, sn: Subnet) -> dict:
        from .port_counters import read_ports

        return read_ports(self, fabric, sn)

    def sm_ca(self) -> str:
        return self.d.sm_host

    def smp(self, jobs: list[dict], what: str, every: bool = True) -> list[dict]:
        from loom.progress import counting

        from .qos_readback import madqueries

        self.d.health()
        with counting(f"{what} (queries)", len(jobs)) as advance:
            return madqueries(self.d, jobs, advance, what=what, every=every)

    def _paths(self) -> dict[str, Path]:
        return {"lfts": self.d.lfts_file, "conf": self.d.conf_file, "guid2lid": self.d.guid2lid_file,
                "partitions": self.d.partitions_file}

    def read_inputs(self) -> dict[str, str | None]:
        return {k: p.read_text() if p.exists() else None for k, p in self._paths().items()}

    def kept_inputs(self) -> dict[str, str | Path | None]:
        return {k: p if p.is_file() else None for k, p in self._paths().items()}

    def write_inputs(self, files: dict[str, str | None]) -> None:
        from loom.files import write_all_atomic

        write_all_atomic({self._paths()[k]: v for k, v in files.items()})

    def push(self, timeout: float) -> str:
        return self._swept(self.d.push, timeout)

    def reload(self, timeout: float) -> str:
        return self._swept(self.d.reload, timeout)

    def sweeps(self) -> int:
        return self.d.sweeps()

    def await_sweeps(self, count: int, timeout: float) -> bool:
        return self.d.await_sweeps(count, timeout)

    def _swept(self, push, timeout: float) -> str:
        """`push` (the daemons' restart or reload); a sweep that does not come says who holds the subnet."""
        from .sim import SimError
        from .sminfo import holder

        try:
            return push(timeout)
        except SimError as exc:
            if "did not finish a sweep" not in str(exc):
                raise
            try:
                said = holder(self._ports())
            except TargetError as why:
                said = f"the fabric could not be asked ({why})"
            raise SimError(f"{exc} ({said})") from None

    def standby_drift(self, files: dict[str, str | None]) -> list[str]:
        return []  # one OpenSM: no standbys

    def clean_leftovers(self) -> None:
        self.d.clean_leftovers()

    def close(self) -> None:
        pass  # nothing held open: the daemons outlive every command

    def sweep_log(self) -> Path:
        """OpenSM's log, where each finished sweep says SUBNET UP (the watcher follows it)."""
        return self.d.log

    def run(self, args: list[str], timeout: float = 120) -> str:
        import subprocess

        from .daemon import client_dir
        from .sim import SimError

        self.d.health()
        with client_dir() as cwd:
            res = subprocess.run(args, cwd=cwd, env=self.d.env(), capture_output=True, text=True, timeout=timeout)
        if res.returncode != 0:
            raise SimError(f"{args[0]} exited with {res.returncode}: {res.stderr.strip()[-300:]}")
        return res.stdout
