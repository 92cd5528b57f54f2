"""Deadlock freedom: the channel-dependency graph (CDG) of the forwarding tables is acyclic.

Channels are directed switch-to-switch links.  Channel a→b depends on b→c when some packet
that arrives over a→b is forwarded over b→c (Dally & Seitz): with credit-based flow control a
cycle of such dependencies can fill every buffer on it and stop the fabric (a credit loop).
Which traffic counts: `sources="all"` (the default of `loom check`) follows packets from every
CA port and every switch to every LID, since switches send and receive management traffic
too; `sources="ca"` follows only CA-to-CA paths, which is what ibdmchk analyses.  A routing
can be credit-loop free for CA traffic and still not for switch traffic; `loom check` reports
both verdicts.
With virtual lanes, each VL has its own buffers, so the graph is built per VL from the SL2VL
maps (`vl_of` maps a hop to its VL; one VL until the QoS stage supplies maps).
Cycles are found with a linear-time strongly-connected-components pass
(scipy.sparse.csgraph.connected_components); one offending cycle is extracted with networkx
from the first non-trivial component and printed as switch/port names.
Cost: O(switches × LIDs) to collect dependencies, O(channels + dependencies) for the SCC.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from loom.model.rules import domains
from loom.routing.base import lid_chunks
from loom.routing.kernels import halves, kernels
from loom.routing.loads import carried
from loom.routing.subnet import TO_SWITCH

from .paths import Walk


@dataclass
class Deadlock:
    deadlock_free: bool
    channels: int
    dependencies: int
    cycle: list[str] | None  # hops "switch/port -> switch/port", None when acyclic

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def dependencies(walk: Walk, sources: str = "all", lids: np.ndarray | None = None,
                 zones: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """(from channel ids, to channel ids, channel count): one entry per distinct dependency,
    over packets to `lids` (default: every LID for "all" sources, CA LIDs for "ca"), from sources
    in the switches of `zones` (bool per switch; default: everywhere).  Collected a chunk of
    LIDs at a time into a bitmap: a dependency a→b is fixed by channel a and the port b leaves
    by (b starts where a ends), so switches × ports² bits hold them all and no sort is needed."""
    sn = walk.tables.subnet
    if lids is None:
        lids = walk.valid_lids if sources == "all" else sn.ca_lids
    seeds = None
    if sources == "ca" or zones is not None:
        seeds = ((walk.cas_on_switch > 0) if sources == "ca" else np.ones(sn.n, bool)) & (True if zones is None else zones)
    ports = sn.max_port + 1
    native = kernels()
    if seeds is None and native is not None:  # every switch a source: walk.c, two threads with a bitmap each
        maps: list[np.ndarray] = []
        columns = lids.astype(np.int64)

        lft = np.ascontiguousarray(walk.tables.lft)

        def mark(lo: int, hi: int) -> int:
            seen = np.zeros(sn.n * ports * ports, np.uint8)  # this thread's own (not `maps[-1]` at the call)
            maps.append(seen)
            return native.dependencies(walk.next_switch, lft, *lft.shape, columns, lo, hi, ports, seen)

        halves(len(lids), sn.n * len(lids), mark)
        seen = np.logical_or.reduce(maps)
    else:
        seen = np.zeros(sn.n * ports * ports, bool)
        for c in lid_chunks(sn.n, len(lids)):
            _mark_dependencies(walk, lids[c], seeds, seen)
    key = np.flatnonzero(seen)
    a, port_b = key // ports, key % ports
    t = sn.peer_dev[a // ports, a % ports]
    return a, t * ports + port_b, sn.n * ports


def _mark_dependencies(walk: Walk, lids: np.ndarray, seeds: np.ndarray | None, seen: np.ndarray) -> None:
    """Set seen[channel a × ports + port] for packets to `lids`: switch s forwards d over
    channel a to switch t, which forwards it on to another switch by that port."""
    sn = walk.tables.subnet
    ports = sn.max_port + 1
    nxt, out = walk.next_switch[:, lids], walk.tables.lft[:, lids]  # the chunk's columns: small and close together
    hop = nxt >= 0
    if seeds is not None:
        hop &= carried(sn, walk.tables.lft, lids, seeds)
    # whole columns at once (t = nxt[s, d], then t's own entry for d) rather than index lists of
    # every hop: no int64 (switch, LID) pairs, 40 % less CPU at the LID limit (7.4 s → 4.4 s)
    t = np.maximum(nxt, 0)
    hop &= np.take_along_axis(nxt, t, axis=0) >= 0
    wide = np.int32 if sn.n * ports * ports < 2**31 else np.int64
    key = (np.arange(sn.n, dtype=wide)[:, None] * ports + out) * ports + np.take_along_axis(out, t, axis=0)
    seen[key[hop]] = True


def check_deadlock(walk: Walk, sources: str = "all", lids: np.ndarray | None = None, layers=None) -> Deadlock:
    """Is the channel-dependency graph acyclic?  `lids` restricts it to packets for those
    destinations (one VL's traffic); `sources` as in the module doc.  With `layers`
    ([source domain][destination domain] → VL set, `loom.model.rules.zone_layers`) every VL set is
    its own graph: the verdict holds when each is acyclic, the cycle printed is the first found."""
    if layers is not None:
        parts = [check_layer(walk, sources, lids, layers, k) for k in range(2)]
        bad = [p for p in parts if not p.deadlock_free]
        return Deadlock(not bad, parts[0].channels, sum(p.dependencies for p in parts), bad[0].cycle if bad else None)
    return _check(walk, *dependencies(walk, sources, lids))


def switch_domains(sn) -> np.ndarray:
    """[switch] index of its domain in `loom.model.rules.domains`: its zone, or its BiGraph part."""
    doms = domains(sn.fabric.model)
    return np.array([doms.index((s.zone, s.role if s.role in ("upper", "lower") else None))
                     for s in (sn.switch(i) for i in range(sn.n))])


def check_layer(walk: Walk, sources: str, lids: np.ndarray | None, layers, k: int) -> Deadlock:
    """The graph of VL set k: packets from domain a to domain b (zones, BiGraph parts) where
    layers[a][b] == k."""
    sn = walk.tables.subnet
    if lids is None:
        lids = walk.valid_lids if sources == "all" else sn.ca_lids
    sw_dom = switch_domains(sn)
    owner = np.where(sn.lid_switch >= 0, sn.lid_switch, sn.ca_switch)
    lid_dom = sw_dom[np.maximum(owner[lids], 0)]
    froms, tos = [], []
    n = sn.n * (sn.max_port + 1)
    for b in np.unique(lid_dom):
        src = np.array([layers[int(a)][int(b)] == k for a in sw_dom])
        if src.any():
            fa, ta, n = dependencies(walk, sources, lids[lid_dom == b], src)
            froms.append(fa)
            tos.append(ta)
    a = np.concatenate(froms) if froms else np.zeros(0, np.int64)
    b = np.concatenate(tos) if tos else np.zeros(0, np.int64)
    key = np.unique(a * n + b)
    return _check(walk, key // n, key % n, n)


def _check(walk: Walk, a: np.ndarray, b: np.ndarray, n: int) -> Deadlock:
    sn = walk.tables.subnet
    ports = sn.max_port + 1
    graph = csr_matrix((np.ones(len(a), np.int8), (a, b)), shape=(n, n))
    ncomp, label = connected_components(graph, directed=True, connection="strong")
    sizes = np.bincount(label, minlength=ncomp)
    big = np.flatnonzero(sizes > 1)
    channels = int(np.count_nonzero(sn.peer_kind == TO_SWITCH))
    if len(big) == 0:
        return Deadlock(True, channels, len(a), None)
    import networkx as nx  # only to name a cycle that exists: importing it costs every plan 0.1 s

    members = set(np.flatnonzero(label == big[0]).tolist())
    sub = nx.DiGraph((int(x), int(y)) for x, y in zip(a, b) if int(x) in members and int(y) in members)
    cycle = nx.find_cycle(sub)
    return Deadlock(False, channels, len(a), [_channel_name(sn, int(x), ports) for x, _ in cycle])


def _channel_name(sn, ch: int, ports: int) -> str:
    s, p = divmod(ch, ports)
    peer = int(sn.peer_dev[s, p])
    return f"{sn.name(s)}/{p} -> {sn.name(peer)}/{int(sn.peer_port[s, p])}"
