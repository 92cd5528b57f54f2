"""Who is master, asked of the fabric: the SMInfo attribute of every subnet-manager port.

A log says what an OpenSM once did — "SUBNET UP" stays in it after that OpenSM is killed — so
plan, apply and status ask the ports instead: `sminfo LID` (infiniband-diags) returns the SM
of that port's priority, state (not active, discovering, standby, master), GUID and activity
count, and fails when no SM runs there.  The ports asked are the SM hosts Loom knows (their
LIDs are pinned) and every port the subnet administrator lists as an SM (`saquery -s`), so a
rogue SM Loom does not know is found too.  Exactly one master is the only state a change may
be pushed in: none (the subnet is unmanaged) and two (each programs the switches its way) are
refused with the SMs named.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loom.push.errors import TargetError

STATES = {0: "not active", 1: "discovering", 2: "standby", 3: "master"}
_ANSWER = re.compile(r"sm lid (\d+) sm guid (0x[0-9a-fA-F]+), activity count (\d+) priority (\d+) state (\d+)")
_ASKED = re.compile(r"^loom-sminfo (\d+)$")


@dataclass(frozen=True)
class SmPort:
    """One port's SMInfo, or (state "no SM answering") a known SM port whose SM is gone."""

    lid: int
    name: str  # the SM host Loom knows there, else "LID n"
    guid: str | None = None
    priority: int | None = None
    state: str = "no SM answering"
    activity: int | None = None

    def __str__(self) -> str:
        where = [] if self.name == f"LID {self.lid}" else [f"LID {self.lid}"]  # a port Loom knows no host of
        if self.guid is None:
            return f"{self.name}{f' ({where[0]})' if where else ''}: no SM answering"
        return f"{self.name} ({', '.join([*where, f'GUID {self.guid}', f'priority {self.priority}'])}): {self.state}"

    def as_dict(self) -> dict:
        """What a plan records (the activity count changes every sweep: left out)."""
        return {"name": self.name, "lid": self.lid, "guid": self.guid, "priority": self.priority, "state": self.state}


def script(lids: list[int]) -> str:
    """Shell for the host where SMPs are sent from: the subnet administrator's list of SM ports,
    then `sminfo` of each port (Loom's and the listed), each answer after a marker line."""
    known = " ".join(str(int(l)) for l in sorted(set(lids)))
    return ("listed=$(saquery -s 2>/dev/null | sed -n 's/^[[:space:]]*EndPortLid\\.*\\([0-9][0-9]*\\)$/\\1/p'); "
            f"for l in $(printf '%s\\n' {known} $listed | sort -un); do echo \"loom-sminfo $l\"; "
            "sminfo \"$l\" 2>&1 | grep 'sm lid' || true; done")


def local_lid(portinfo: str) -> int:
    """The LID in `smpquery -D portinfo 0` (the port a client runs on)."""
    m = re.search(r"^Lid:\.*(\d+)\s*$", portinfo, re.M)
    if not m:
        raise TargetError(f"smpquery portinfo of the local port gave no LID: {portinfo.strip()[:200]!r}")
    return int(m.group(1))


def parse(text: str, names: dict[int, str]) -> list[SmPort]:
    """The SM ports of `script`'s output, named by `names` (LID → SM host)."""
    ports: list[SmPort] = []
    lid = None
    for line in text.splitlines():
        if m := _ASKED.match(line.strip()):
            if lid is not None:
                ports.append(SmPort(lid, names.get(lid, f"LID {lid}")))
            lid = int(m.group(1))
        elif (m := _ANSWER.search(line)) and lid is not None:
            sm_lid, guid, activity, priority, state = m.groups()
            ports.append(SmPort(lid, names.get(lid, f"LID {lid}"), f"0x{int(guid, 16):016x}", int(priority),
                                STATES.get(int(state), f"state {state}"), int(activity)))
            lid = None
    if lid is not None:
        ports.append(SmPort(lid, names.get(lid, f"LID {lid}")))
    return ports


def the_master(ports: list[SmPort], where: str) -> SmPort:
    """The one master among `ports`; TargetError naming them all when there is none or several."""
    masters = [p for p in ports if p.state == "master"]
    if len(masters) == 1:
        return masters[0]
    listed = "; ".join(map(str, ports)) or "no SM port answered"
    if not masters:
        raise TargetError(f"no subnet manager is master on {where} ({listed}): the subnet is not managed; "
                          "start OpenSM on an SM host, or wait for a standby to take over")
    raise TargetError(f"{len(masters)} subnet managers are master on {where}: {', '.join(p.name for p in masters)} "
                      f"({listed}); two masters program the switches each their own way — stop the one that "
                      "should not run (a rogue SM, or a restarted one with the wrong priority) before any change")


def holder(ports: list[SmPort]) -> str:
    """Who holds the subnet, as the fabric says, for a message."""
    masters = [p.name for p in ports if p.state == "master"]
    return (f"the fabric says: {' and '.join(masters)} master" if masters else "the fabric says: no SM is master") + \
        f" — {'; '.join(map(str, ports)) or 'no SM port answered'}"
