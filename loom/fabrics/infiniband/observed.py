"""What is down in a running InfiniBand fabric: the design cables it does not have up now.

The observed part of the fabric as it stands (`loom.expand.asbuilt`), asked of the target:
- the simulation knows exactly: the cables of its net file (what `loom sim up` cabled) that
  `loom sim link down` has not pulled (`links-down.json`);
- a real fabric is discovered (`ibnetdiscover` where the master's port is) and compared with the
  design (`loom.checks.cabling`): the design cables found on neither end are down.
A cable the design does not have (moved, added, a device renumbered) is not "down": the fabric
is cabled otherwise than the model, which the technician puts right first (`loom cabling diff`);
that is a TargetError naming the first such cables.
"""

from __future__ import annotations

import re
from pathlib import Path

from loom.expand import Fabric
from loom.expand.failures import cable_ends
from loom.push.errors import TargetError

_BLOCK = re.compile(r'^(?:Switch|Hca)\s+\d+\s+"([^"]+)"')
_LINK = re.compile(r'^\[(\d+)\]\s+"([^"]+)"\[(\d+)\]')
_GUID = re.compile(r'^do Guid "([^"]+)" (0x[0-9a-fA-F]+)')


def missing_in_simulation(net: Path, pulled: list[str], design: Fabric, plane: int = 0) -> list[str]:
    """Design cables (IDs) of `plane` that the simulation's net file lacks or that are pulled."""
    ends = cable_ends(design)
    guids = {s.name: s.guid for s in design.switches} | {p.ca: p.ca_guid for p in design.ports}
    cabled: set[int] = set()
    foreign: list[str] = []
    owner = None
    for line in net.read_text().splitlines():
        if m := _BLOCK.match(line):
            owner = m.group(1)
        elif (m := _LINK.match(line)) and owner is not None:
            near, far = (owner, int(m.group(1))), (m.group(2), int(m.group(3)))
            hit = ends.get(near)
            if hit is None or hit[1] != far:
                foreign.append(f"{near[0]}:{near[1]} is cabled to {far[0]}:{far[1]}"
                               + (f", the model has {hit[1][0]}:{hit[1][1]}" if hit else ", the model leaves it empty"))
            else:
                cabled.add(hit[0])
        elif (m := _GUID.match(line)) and guids.get(m.group(1), int(m.group(2), 16)) != int(m.group(2), 16):
            foreign.append(f"{m.group(1)} has GUID {m.group(2)}, the model {guids[m.group(1)]:#018x}")
    if foreign:
        raise TargetError(_recable(foreign, "the simulation"))
    in_plane = {i for i in range(len(design.cables)) if int(design.cables.plane[i]) == plane}
    down = {design.cable_id(i) for i in in_plane - cabled}
    ids = {design.cable_id(i) for i in in_plane}
    return sorted(down | {c for c in pulled if c in ids})


def missing_discovered(discovery: str, design: Fabric) -> list[str]:
    """Design cables (IDs) an `ibnetdiscover` of the fabric did not find on either end."""
    from loom.checks.cabling import compare
    from loom.expand.live import parse_ibnetdiscover

    report = compare(design, parse_ibnetdiscover(discovery, "ibnetdiscover"))
    other = [f.what for f in report.findings if f.kind in ("extra", "miswired", "swapped", "unknown-device")]
    if other:
        raise TargetError(_recable(other, "the discovered fabric"))
    return sorted(f.cable_id for f in report.findings if f.kind == "missing" and f.cable is not None)


def _recable(found: list[str], where: str) -> str:
    shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    return (f"{where} is cabled differently from the model: {shown}. Re-cable first (`loom cabling diff` lists the "
            "moves; `loom sim up MODEL` re-cables the simulation), or put the cabling in the model")
