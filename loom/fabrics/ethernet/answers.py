"""What a switch prints for the Ethernet targets' reads, read: FRR's `show bgp summary json` and
`show bgp neighbors json`, iproute2's `ip -j route` and `ip -j link`.

Both targets read the same text (the simulation from its own daemons, the SSH target from a
device Loom does not control), so each answer is checked against the shape Loom relies on
(pydantic; fields it does not use are ignored) and anything else — not JSON, nested beyond
reason, a field of the wrong type — is a TargetError naming the switch, the command and the
first problem, never a traceback.  `tests/fuzz/surfaces.py` ("switch-output") damages real
answers from the live lab to hold every reader to that.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, TypeAdapter, ValidationError

from loom.push.errors import TargetError


class _Peer(BaseModel):
    state: str | None = None


class _Family(BaseModel):
    peers: dict[str, _Peer] = {}


class _Summary(BaseModel):
    ipv4Unicast: _Family = _Family()


class _Bfd(BaseModel):
    status: str | None = None


class _Neighbour(BaseModel):
    bgpState: str | None = None
    nbrDesc: str | None = None
    lastResetDueTo: str | None = None
    lastNotificationReason: str | None = None
    peerBfdInfo: _Bfd | None = None


class _Via(BaseModel):
    host: str


class _Nexthop(BaseModel):
    gateway: str | None = None
    via: _Via | None = None  # a next hop of another family (an IPv4 route over IPv6, RFC 5549): {"family", "host"}


class _Route(_Nexthop):
    dst: str
    nexthops: list[_Nexthop] = []


class _Link(BaseModel):
    ifname: str
    flags: list[str] = []


_SUMMARY = TypeAdapter(_Summary)
_NEIGHBOURS = TypeAdapter(dict[str, _Neighbour])
_ROUTES = TypeAdapter(list[_Route])
_LINKS = TypeAdapter(list[_Link])


def _read(adapter: TypeAdapter, text: str, command: str, switch: str, empty: str):
    """`text` as `adapter`'s shape; TargetError naming the switch, the command and the problem."""
    try:
        return adapter.validate_python(json.loads(text or empty))
    except json.JSONDecodeError as exc:
        problem = f"no JSON ({exc.msg} at line {exc.lineno}): {text[:80]!r}"
    except RecursionError:
        problem = "JSON nested too deep to read"
    except ValidationError as exc:
        e = exc.errors()[0]
        problem = f"JSON of another shape (at {'.'.join(str(p) for p in e['loc']) or 'the top'}: {e['msg']})"
    except ValueError as exc:  # e.g. an integer of more digits than Python converts (after ValidationError, a subclass)
        problem = f"JSON Loom cannot read ({str(exc)[:80]})"
    run = f"vtysh -c '{command}'" if command.startswith("show") else command
    raise TargetError(f"{switch}: `{command}` printed {problem}; run `{run}` there to see what it prints")


def bgp_peers(summary_json: str, switch: str = "a switch") -> dict[str, str]:
    """Neighbour address → BGP state ("Established", "Active", ...) from `show bgp summary json`."""
    peers = _read(_SUMMARY, summary_json, "show bgp summary json", switch, "{}").ipv4Unicast.peers
    return {addr: p.state or "?" for addr, p in peers.items()}


def sessions_down(neighbors_json: str, switch: str = "a switch", only: set[str] | None = None) -> list[str]:
    """The BGP neighbours not established (of `only`, when given), from `show bgp neighbors
    json`, each with its description (the peer and the local interface), its state and why it
    last went down — what an operator looks at first when a read-back waits for a session in
    vain.  A neighbour of `only` the switch does not have at all is named as not configured."""
    out = []
    read = _read(_NEIGHBOURS, neighbors_json, "show bgp neighbors json", switch, "{}")
    for addr, n in sorted(read.items()):
        if n.bgpState == "Established" or (only is not None and addr not in only):
            continue
        desc = f" ({n.nbrDesc})" if n.nbrDesc else ""
        why = " / ".join(w for w in (n.lastResetDueTo, n.lastNotificationReason) if w)
        bfd = n.peerBfdInfo.status if n.peerBfdInfo else None
        out.append(f"{addr}{desc} {n.bgpState or '?'}" + (f", last reset: {why}" if why else "")
                   + (f", BFD {bfd}" if bfd else ""))
    return out + [f"{addr} not configured on {switch}" for addr in sorted((only or set()) - set(read))]


def kernel_routes(route_json: str, switch: str = "a switch") -> dict[str, set[str]]:
    """prefix → next-hop gateways from `ip -j route` (connected routes, without a gateway, left
    out).  A next hop of the other family (`via`, as unnumbered BGP installs) is kept as its
    address, so such a route reads as a route with other next hops, not as a missing one."""
    out = {}
    for r in _read(_ROUTES, route_json, "ip -j route", switch, "[]"):
        dst = r.dst if "/" in r.dst or r.dst == "default" else r.dst + "/32"
        gws = {h.gateway or h.via.host for h in (r, *r.nexthops) if h.gateway or h.via}
        if gws:
            out[dst] = gws
    return out


def carriers(link_json: str, switch: str = "a switch") -> dict[str, bool]:
    """Interface name → has a carrier (LOWER_UP), from `ip -j link`."""
    return {i.ifname: "LOWER_UP" in i.flags for i in _read(_LINKS, link_json, "ip -j link", switch, "[]")}
