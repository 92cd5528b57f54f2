"""Where plan and apply send an Ethernet fabric's changes: its switches' FRR.  One small
interface (`FrrTarget`), like `loom.fabrics.infiniband.target` for InfiniBand subnet managers; what a
change *is* (`loom.fabrics.ethernet.plan`) never depends on where it goes; `targets.py` finds
one by kind.

    sim   the live simulation (`loom sim up` on an Ethernet model; `FrrSimTarget`, this module)
    ssh   the switches' FRR over SSH, the inventory's `frr_switches` (`loom.fabrics.ethernet.ssh`)

A target answers per switch: its running configuration, its kernel FIB, its BGP sessions, and
a reload with FRR's own `frr-reload.py`.  The local state directory `dir` holds the fabric
lock, the apply journal, the audit log and what was applied last, whatever the target.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from loom.expand import Fabric

from loom.files import remove_temps
from loom.push.state import no_state
from .lab import FrrLab, LabError


class FrrTarget(Protocol):
    """What plan and apply need from an Ethernet fabric's switches."""

    kind: str
    dir: Path

    def spec(self) -> dict:
        """JSON a plan records to find this target again (never keys or secrets)."""

    def where(self) -> str:
        """Where the switches are, for messages."""

    def health(self) -> None:
        """Raise TargetError naming what is down."""

    def cabled_as(self, fabric: Fabric) -> bool:
        """Is the fabric cabled as `fabric` says (as far as the target can tell)?"""

    def switches(self) -> list[str]:
        """The switches the target reaches, by name."""

    def links(self, switch: str) -> str:
        """`ip -j link` of the switch: its interfaces and whether each has a carrier."""

    def running_config(self, switch: str) -> str:
        """`show running-config` of the switch (without its header)."""

    def reload(self, switch: str, config: str) -> None:
        """Make the switch run `config` with frr-reload.py; TargetError when it fails."""

    def fib(self, switch: str) -> dict[str, set[str]]:
        """The switch's kernel routes: prefix → next hops (connected routes left out)."""

    def peers(self, switch: str) -> dict[str, str]:
        """The switch's BGP neighbours: address → state ("Established", ...); {} without bgpd."""

    def neighbours(self, switch: str) -> str:
        """`show bgp neighbors json`: read when a session will not come up, to say why."""

    def clean_leftovers(self) -> None:
        """Remove what killed writers left behind."""

    def close(self) -> None:
        """Release connections."""


class FrrSimTarget:
    """The live simulation: a thin adapter over `FrrLab`."""

    kind = "sim"

    def __init__(self, lab: FrrLab) -> None:
        self.lab = lab
        self.dir = lab.dir

    @classmethod
    def of(cls, fabric_name: str) -> "FrrSimTarget":
        return cls(FrrLab.of(fabric_name))

    def spec(self) -> dict:
        return {"kind": self.kind, "technology": "ethernet"}

    def where(self) -> str:
        return f"the live simulation in {self.dir}"

    def health(self) -> None:
        if not self.lab.state:
            raise LabError(f"the live simulation is not running ({no_state(self.dir) or f'nothing recorded in {self.dir}'}); "
                           "`loom sim up` starts it")
        dead = self.lab.dead()
        if dead:
            raise LabError(f"the live simulation is not up ({', '.join(dead[:3])}{' ...' if len(dead) > 3 else ''} "
                           f"not running); `loom sim up` starts it")

    def cabled_as(self, fabric: Fabric) -> bool:
        return self.lab.cabled_as(fabric)

    def switches(self) -> list[str]:
        return self.lab.switches()

    def links(self, switch: str) -> str:
        return self.lab.links(switch)

    def running_config(self, switch: str) -> str:
        return self.lab.running_config(switch)

    def reload(self, switch: str, config: str) -> None:
        self.lab.reload(switch, config)

    def fib(self, switch: str) -> dict[str, set[str]]:
        return self.lab.fib(switch)

    def peers(self, switch: str) -> dict[str, str]:
        return self.lab.peers(switch)

    def neighbours(self, switch: str) -> str:
        return self.lab.neighbours(switch)

    def clean_leftovers(self) -> None:
        if self.dir.exists():
            remove_temps(self.dir)

    def close(self) -> None:
        pass  # nothing held open: the daemons outlive every command
