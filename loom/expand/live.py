"""The fabric as it was found: `ibnetdiscover`'s topology file as typed data.

A subnet manager host (or the simulator) answers `ibnetdiscover` with every node it reaches —
switches (`Switch N "S-<guid>"`), channel adapters (`Ca N "H-<guid>"`), routers (`Rt`) — and,
per port, the far end: `[3] "S-<guid>"[5]  # "desc" lid 1032 4xHDR`.  Each link is listed
from both ends; here it appears once.  Nothing of the model is needed to read it: mapping the
nodes found to the model's names is `loom.checks.cabling`'s job.

The file may come from the floor (a technician's `ibnetdiscover > fabric.topo`), so a line that
is not in the format is refused with its number, never guessed at.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Gb/s per lane of each InfiniBand speed name ibnetdiscover prints.
LANE_GBPS = {"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200}

# port numbers and counts have at most 3 digits (an InfiniBand node has at most 254 ports)
_NODE = re.compile(r'^(Switch|Ca|Rt)\s+(\d{1,3})\s+"([SHR])-([0-9a-fA-F]{1,16})"\s*(?:#\s*"(.*?)")?')
_PORT = re.compile(r'^\[(\d{1,3})\](?:\(([0-9a-fA-F]{1,16})\))?\s*"([SHR])-([0-9a-fA-F]{1,16})"\[(\d{1,3})\]'
                   r'(?:\(([0-9a-fA-F]{1,16})\))?(.*)$')
_RATE = re.compile(r"\b(\d{1,2})x([A-Z]+\d*)\b")
_SKIP = re.compile(r"^\s*(?:$|#|vendid=|devid=|sysimgguid=|switchguid=|caguid=|rtguid=)")


class TopologyError(ValueError):
    """A topology file that is not ibnetdiscover's format; the message names the line."""


@dataclass(frozen=True)
class LiveNode:
    guid: int  # node GUID
    kind: str  # switch | ca | router
    ports: int
    desc: str  # NodeDescription (hostname and device for a CA, the name set on a switch)


@dataclass(frozen=True)
class LiveLink:
    a: tuple[int, int]  # (node GUID, port), the lower of the two ends
    b: tuple[int, int]
    width: int  # lanes (4 for 4x)
    speed: str  # HDR, NDR, ...

    @property
    def gbps(self) -> float:
        return self.width * LANE_GBPS.get(self.speed, 0)


@dataclass
class LiveFabric:
    nodes: dict[int, LiveNode] = field(default_factory=dict)
    links: list[LiveLink] = field(default_factory=list)
    port_guids: dict[tuple[int, int], int] = field(default_factory=dict)  # (CA node GUID, port) → port GUID


def parse_ibnetdiscover(text: str, source: str = "ibnetdiscover") -> LiveFabric:
    """The nodes and links of a topology file; TopologyError naming the line for anything that
    is not ibnetdiscover's: a malformed line, a node listed twice, a port beyond its node's
    count, no node at all (an empty file is not "every cable missing")."""
    live = LiveFabric()
    seen: dict[tuple[tuple[int, int], tuple[int, int]], LiveLink] = {}
    node: LiveNode | None = None
    first: dict[int, int] = {}  # node GUID → the line that listed it
    for n, line in enumerate(text.splitlines(), 1):
        if _SKIP.match(line):
            continue
        m = _NODE.match(line)
        if m:
            kind = {"Switch": "switch", "Ca": "ca", "Rt": "router"}[m.group(1)]
            node = LiveNode(int(m.group(4), 16), kind, int(m.group(2)), m.group(5) or "")
            if node.guid in first:
                raise TopologyError(f"{source}, line {n}: node GUID {node.guid:#018x} is listed again (first on line "
                                    f"{first[node.guid]}): two devices with one GUID, or two files joined; give one "
                                    "`ibnetdiscover` output")
            first[node.guid] = n
            live.nodes[node.guid] = node
            continue
        m = _PORT.match(line)
        if not m or node is None:
            raise TopologyError(f"{source}, line {n}: not an ibnetdiscover node or port line; give the output of "
                                "`ibnetdiscover` (without -p/-g options)")
        port, own_guid, far, far_port = int(m.group(1)), m.group(2), int(m.group(4), 16), int(m.group(5))
        if not 1 <= port <= node.ports:
            raise TopologyError(f"{source}, line {n}: port {port} of a {node.ports}-port node; give the output of "
                                "`ibnetdiscover` as it printed it")
        if own_guid and node.kind == "ca":
            live.port_guids[(node.guid, port)] = int(own_guid, 16)
        if m.group(6) and m.group(3) == "H":
            live.port_guids[(far, far_port)] = int(m.group(6), 16)
        rate = _RATE.findall(m.group(7))
        width, speed = (int(rate[-1][0]), rate[-1][1]) if rate else (0, "")
        ends = tuple(sorted([(node.guid, port), (far, far_port)]))
        if ends not in seen:
            seen[ends] = LiveLink(ends[0], ends[1], width, speed)
    if not live.nodes:
        raise TopologyError(f"{source}: no node in it (an empty or truncated file); give the output of `ibnetdiscover`")
    live.links = list(seen.values())
    return live
