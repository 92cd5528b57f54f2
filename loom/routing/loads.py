"""Per-switch port loads, their exact as-built lower bound, and the move that reaches it.

The figure is the one `ibdiagnet -r` reports: destinations routed out of each port.  A switch's
ports fall into *groups* of interchangeable ports: the destinations that may leave by one port
of a group may (by the up/down rule of `UpDown.candidates`) leave by some other port of it —
a leaf's up-ports, a spine's parallel links to one leaf, a core's links into one pod.  On an
intact tree each group is "all these ports, for all these destinations" and the best any
destination routing can do is ceil(destinations / ports).  On a degraded one some destinations
can use only part of a group (a spine lost its link to their leaf), and the best is the smallest
k for which the destinations can be assigned with at most k per port: a bipartite
flow problem (Hall's condition), solved exactly here with networkx on the few distinct port
sets a switch has.  The same bound is computed in total and for each destination role.

`rebalance_switch` is the engine's side: a min-cost flow that reaches every bound at once while
moving as few entries as possible (destinations without a kept hint, then the newest, first).
Cost: O(destinations) per switch plus a flow over (roles × port sets) nodes where needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loom.forked import Forked

from .base import lid_chunks
from .kernels import halves, kernels
from .subnet import TO_SWITCH

#: Every channel adapter together, as a role code: a leaf's up-port that carries one CA
#: destination more than its share carries the leaf's CAs' paths to it (issue 33), even where
#: switch LIDs keep the port's total within its bound.
CA = -1


@dataclass
class PortGroup:
    """One group of interchangeable ports of a switch and what it carries."""

    switch: int
    ports: np.ndarray  # port numbers
    direction: str  # "up" or "down"
    lids: np.ndarray  # destinations whose legal ports lie in this group
    roles: np.ndarray  # their role codes
    patterns: np.ndarray  # bool [distinct legal-port sets, len(ports)]
    pattern: np.ndarray  # index into patterns of each destination
    chosen: np.ndarray  # index into ports of each destination's current port (-1: not in the group)
    ca: np.ndarray  # whether each destination is a channel adapter (not a switch's own LID)
    total_bound: int | None = None  # `bound()`, once computed (it depends on patterns and counts alone)

    def role_codes(self) -> list[int]:
        """The roles present, ascending (`np.unique` by counting: roles are small codes)."""
        return np.flatnonzero(np.bincount(self.roles)).tolist()

    def _of(self, role: int) -> np.ndarray:
        return self.ca if role == CA else self.roles == role

    def loads(self, role: int | None = None) -> np.ndarray:
        """Destinations per port: all, of one role, or every channel adapter (`CA`)."""
        sel = self.chosen >= 0 if role is None else (self.chosen >= 0) & self._of(role)
        return np.bincount(self.chosen[sel], minlength=len(self.ports))

    def counts(self, role: int | None = None) -> np.ndarray:
        pat = self.pattern if role is None else self.pattern[self._of(role)]
        return np.bincount(pat, minlength=len(self.patterns))

    def bound(self, role: int | None = None) -> int:
        """The exact as-built bound (a flow where the legal port sets differ).  For a role: the
        least max-load of that role's destinations while the group stays at its total bound
        (balance in total comes first; on a degraded fabric the two can conflict)."""
        if role is None:
            if self.total_bound is None:  # a flow per call otherwise, and every role's bound asks for it
                self.total_bound = min_max_load(self.patterns, self.counts())
            return self.total_bound
        mine = self.counts(role)
        return min_max_load(self.patterns, mine, self.counts() - mine, self.bound())

    def at_counting_bound(self) -> bool:
        """Every port already at the quick lower bound (`counting_bound`), in total and per
        role: then nothing can do better and no flow needs solving.  Every role at once, as
        rows of one count (a pass per role cost 1 ms a switch, the engine's most common call)."""
        codes = self.role_codes()
        rows, ports, pats = len(codes) + 1, len(self.ports), len(self.patterns)
        rank = 1 + np.searchsorted(codes, self.roles)  # row 0: every role
        ok = self.chosen >= 0
        loads = np.bincount(rank[ok] * ports + self.chosen[ok], minlength=rows * ports).reshape(rows, ports)
        counts = np.bincount(rank * pats + self.pattern, minlength=rows * pats).reshape(rows, pats)
        loads[0], counts[0] = loads[1:].sum(axis=0), counts[1:].sum(axis=0)
        usable = ((counts > 0).astype(np.int64) @ self.patterns > 0).sum(axis=1)
        alone = -(-counts // np.maximum(self.patterns.sum(axis=1), 1))
        bound = np.maximum(-(-counts.sum(axis=1) // np.maximum(usable, 1)), alone.max(axis=1, initial=0))
        return bool((loads.max(axis=1, initial=0) <= bound).all())

    def legal(self) -> bool:
        """Every destination is on one of its legal ports."""
        ok = self.chosen >= 0
        return bool(ok.all() and self.patterns[self.pattern, self.chosen].all())


def into_paths_bound(cas, links, total: int):
    """The most CA-to-CA paths on the worst of `links` links into a subtree holding `cas` of the
    fabric's `total` channel adapters, when each destination enters over one link (the engine's
    design: one up-port index per destination): its CAs spread evenly, ceil(cas / links) on a
    link, each receiving from every CA outside.  Arrays broadcast (a bound per leaf or pod)."""
    return -(-cas // links) * (total - cas)


def counting_bound(patterns: np.ndarray, counts: np.ndarray) -> int:
    """A quick lower bound on `min_max_load`: items over usable ports, and each pattern alone."""
    keep = counts > 0
    if not keep.any():
        return 0
    patterns, counts = patterns[keep], counts[keep]
    return max(-(-int(counts.sum()) // int(patterns.any(axis=0).sum())),
               int(np.max(-(-counts // np.maximum(patterns.sum(axis=1), 1)))))


def min_max_load(patterns: np.ndarray, counts: np.ndarray, others: np.ndarray | None = None, total: int | None = None) -> int:
    """Smallest k such that counts[i] items of legal-port pattern i can be placed with at most
    k per port (0 when there are none); with `others` (more items per pattern) and `total`, at
    the same time as those with at most `total` items per port in all."""
    lo = counting_bound(patterns, counts)
    if others is None and np.count_nonzero(counts) <= 1:
        return lo
    if others is None:
        others, total = np.zeros_like(counts), int(counts.sum())
    # every item, counted or not, may use the same ports: the counted ones go round first and
    # the others fill the least-loaded ports, within `total` whenever any placement is
    live = patterns[counts + others > 0]
    usable = live.any(axis=0)
    if live[:, usable].all() and total * int(usable.sum()) >= int((counts + others).sum()):
        return lo
    key = (patterns.tobytes(), patterns.shape, counts.tobytes(), others.tobytes(), total)
    if key not in _BOUNDS:  # a zone's leaves share their port sets and counts: one search for all
        if len(_BOUNDS) >= 4096:
            _BOUNDS.clear()
        _BOUNDS[key] = _search(patterns, counts, others, lo, total)
    return _BOUNDS[key]


#: min_max_load's searches, by their inputs
_BOUNDS: dict[tuple, int] = {}


def _search(patterns: np.ndarray, counts: np.ndarray, others: np.ndarray, lo: int, total: int) -> int:
    """The least k ≥ lo for which `_assignable` holds (binary search; no port holds more than
    `total` counted items)."""
    hi = max(lo, min(int(counts.sum()), total))
    while lo < hi:
        k = (lo + hi) // 2
        if _assignable(patterns, counts, others, k, total):
            hi = k
        else:
            lo = k + 1
    return lo


def _assignable(patterns: np.ndarray, counts: np.ndarray, others: np.ndarray, k: int, total: int) -> bool:
    """Max flow: source → pattern (its count) → port for the counted items (k each) → port
    (`total` each) → sink, the other items going to the port's total directly; feasible when
    the flow takes every item."""
    # imported here: scipy.sparse costs a plan 0.15 s of start-up, and most bounds are counted
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_flow

    g, p = patterns.shape
    gi, pj = np.nonzero(patterns)
    mine, port, sink = 1 + np.arange(g), 1 + 2 * g + p + np.arange(p), 1 + 2 * g + 2 * p
    theirs, slot = 1 + g + np.arange(g), 1 + 2 * g + np.arange(p)
    src = np.r_[np.zeros(2 * g, np.int64), mine[gi], theirs[gi], slot, port]
    dst = np.r_[mine, theirs, slot[pj], port[pj], port, np.full(p, sink)]
    cap = np.r_[counts, others, counts[gi], others[gi], np.full(p, k), np.full(p, total)].astype(np.int32)
    graph = csr_matrix((cap, (src, dst)), shape=(sink + 1, sink + 1))
    return maximum_flow(graph, 0, sink).flow_value == int(counts.sum() + others.sum())


@dataclass
class DownLoads:
    """What a leaf's choice of up-port does one level up, so that evening out a leaf's up-ports
    does not crowd a spine's port down into another leaf: which switch already carries each
    destination, how many destinations each switch carries down into each target, and the
    into-target bound ceil(destinations delivered at the target / its working up-links)."""

    carries: np.ndarray  # [switch, lid]
    into: np.ndarray  # [switch, target switch]
    cap: np.ndarray  # [switch, target switch]: the bound per link times the links between them
    target: np.ndarray  # [lid] target switch in the zone

    def cost(self, peers: np.ndarray, lids: np.ndarray) -> np.ndarray:
        """[destination, peer]: 0 if sending the destination to the peer adds nothing (already
        carried, or room below the bound into its target), else 1."""
        t = self.target[lids]
        tt = np.maximum(t, 0)[:, None]
        p = peers[None, :]
        cost = (~self.carries[p, lids[:, None]] & (self.into[p, tt] >= self.cap[p, tt])).astype(np.int64)
        cost[t < 0] = 0
        return cost

    def take(self, peer: int, lid: int) -> None:
        if not self.carries[peer, lid] and self.target[lid] >= 0:
            self.carries[peer, lid] = True
            self.into[peer, self.target[lid]] += 1


@dataclass
class IntoPaths:
    """CA-to-CA paths that a spine carries down into a leaf it is cabled to, from the leaves of
    its zone that send the destination up to it, against the bound `checks.subtrees` holds each
    link into a leaf to (ceil(the leaf's CA destinations / its up-links) × the CAs outside it,
    here per spine: times its links into the leaf).  What `even_cas` asks before it moves a
    channel adapter: a leaf's up-port choice decides which link its CAs' traffic enters by."""

    sn: object
    lft: np.ndarray
    weight: np.ndarray  # [switch] channel adapters on it (a source leaf's paths per destination)
    sources: np.ndarray  # leaves with channel adapters
    links: np.ndarray  # [switch, switch] links between them
    ups: np.ndarray  # [leaf] its working up-links
    outside: np.ndarray  # [leaf] the zone's channel adapters outside it

    def room(self, lid: int, source: int, spine: int) -> bool:
        """Whether `source` may send `lid` up to `spine` without the spine's links into the
        destination's leaf carrying more paths than their bound (True where the spine does not
        go down to it: the traffic goes up, and is judged there)."""
        t = int(self.sn.ca_switch[lid])
        if t < 0 or self.links[spine, t] == 0:
            return True  # a switch LID, or a spine that sends it up (another pod, another zone)
        rows = self.sources[self.sources != t]
        at = np.flatnonzero((self.sn.ca_switch == t) | (self.sn.lid_switch == t))  # its CAs and its own LID
        ca = self.sn.ca_switch[at] == t
        via = self.sn.peer_dev[rows[:, None], self.sn.out_port(self.lft[rows][:, at])] == spine  # [source, destination]
        paths = int((via[:, ca] * self.weight[rows][:, None]).sum())
        if self.sn.peer_dev[source, self.sn.out_port(self.lft[source, lid])] != spine:
            paths += int(self.weight[source])
        dests = int(via.any(axis=0).sum()) + (not via[:, at == lid].any())  # each link takes whole destinations
        return paths <= -(-int(ca.sum()) // self.ups[t]) * self.outside[t] * self.links[spine, t] \
            and dests <= -(-len(at) // self.ups[t]) * self.links[spine, t]


def even_cas(lft: np.ndarray, group: PortGroup, priority: np.ndarray, into: IntoPaths, peers: np.ndarray) -> None:
    """After `rebalance_switch` on a leaf's up-ports: channel adapters moved off a port over their
    bound together (`CA`) to one under it — with room there in total and for their role, or in
    exchange for a switch LID there, which carries no CA-to-CA paths — only where the move
    crowds no link into the destination's leaf (`into`).  A switch LID crowding the CAs onto
    fewer ports keeps the total within bound and still puts a leaf's CAs' paths over theirs."""
    if len(group.ports) == 1 or not group.ca.any() or group.ca.all() or not group.legal():
        return
    if (group.ports[group.chosen] != lft[group.switch, group.lids]).any():
        return  # the group's view is not the table's (a repair that left it): nothing to start from
    cap, load_ca = group.bound(CA), group.loads(CA)
    bound, load = group.bound(), group.loads()
    if load_ca.max() <= cap or load.max() > bound:
        return  # at its bound already, or a group the repair left over it (a later pass's)
    roles, chosen = group.roles, group.chosen.copy()
    cap_r = {r: group.bound(r) for r in group.role_codes()}
    load_r = {r: group.loads(r) for r in cap_r}
    order = np.lexsort((-group.lids, priority[group.lids]))  # who moves first: low priority, newest
    for i in order[group.ca[order]]:
        c, r, lid = int(chosen[i]), int(roles[i]), int(group.lids[i])
        if load_ca[c] <= cap:
            continue
        legal = np.flatnonzero(group.patterns[group.pattern[i]])
        for j in legal[np.argsort(load_ca[legal], kind="stable")]:
            if load_ca[j] >= cap or load_r[r][j] >= cap_r[r] or not into.room(lid, group.switch, int(peers[j])):
                continue
            swap = None
            if load[j] >= bound:  # full: a switch LID on j that may take i's place on c
                ks = np.flatnonzero((chosen == j) & ~group.ca & group.patterns[group.pattern, c])
                ks = [k for k in ks if load_r[int(roles[k])][c] < cap_r[int(roles[k])]]
                if not ks:
                    continue
                swap = int(ks[0])
            for x, rr, a, b in ((i, r, c, j), *(((swap, int(roles[swap]), j, c),) if swap is not None else ())):
                chosen[x] = b
                load[a] -= 1
                load[b] += 1
                load_r[rr][a] -= 1
                load_r[rr][b] += 1
                lft[group.switch, group.lids[x]] = group.ports[b]
            load_ca[c] -= 1
            load_ca[j] += 1
            break
    group.chosen = chosen


def rebalance_switch(lft: np.ndarray, group: PortGroup, priority: np.ndarray, down: DownLoads | None = None,
                     peers: np.ndarray | None = None) -> None:
    """Reassign the group's destinations so that every port meets the group's bound in total
    and per role, changing as few entries as possible; `priority[lid]` higher = moves last
    (a move costs 1 + 4 × priority; among equals the newest destination moves).

    Cheap first: single moves from a port over its cap to one with room, against the quick
    counting bounds (reaching those is optimal, and no flow is solved), then against the exact ones; only when single
    moves get stuck does a min-cost flow reassign the group."""
    if group.legal() and (len(group.ports) == 1 or group.at_counting_bound()):
        return  # a single port (a spine's one link down to a leaf) is at its bound by definition
    roles = group.role_codes()
    quick_total = counting_bound(group.patterns, group.counts())
    quick = {r: counting_bound(group.patterns, group.counts(r)) for r in roles}
    if _single_moves(lft, group, quick_total, quick, priority, down, peers):
        return
    bound = group.bound()
    exact = {r: group.bound(r) for r in roles}
    if (bound, exact) != (quick_total, quick) and _single_moves(lft, group, bound, exact, priority, down, peers):
        return
    for extra in range(len(roles) + 2):  # relax per-role bounds only if all cannot hold at once
        flow = _min_cost_assignment(group, bound, {r: b + extra for r, b in exact.items()}, priority)
        if flow is not None:
            _apply(lft, group, flow, priority)
            return


def _single_moves(lft: np.ndarray, group: PortGroup, bound: int, bound_r: dict[int, int], priority: np.ndarray,
                  down: DownLoads | None = None, peers: np.ndarray | None = None) -> bool:
    """Greedy repair; True (and the group updated in place) when every cap holds.  With `down`
    (`peers`: the switch behind each port), a move that crowds a port one level up is taken only
    when no move among the next candidates avoids it."""
    chosen = group.chosen.copy()

    def allowed(rows):
        """[rows, port] the legal ports of those destinations (looked up by pattern: the full
        [destination × port] matrix would be rebuilt for every group)."""
        return group.patterns[group.pattern[rows]]

    # a destination on an illegal port must move: give it its least loaded legal port first
    for i in np.flatnonzero((chosen < 0) | ~group.patterns[group.pattern, np.maximum(chosen, 0)]):
        legal = np.flatnonzero(allowed(i))
        chosen[i] = legal[np.argmin(np.bincount(chosen[chosen >= 0], minlength=len(group.ports))[legal])]
    roles = group.roles
    nr = int(roles.max()) + 1
    cap_r = np.array([bound_r.get(r, 0) for r in range(nr)])
    load = np.bincount(chosen, minlength=len(group.ports))
    load_r = np.zeros((nr, len(group.ports)), np.int64)
    np.add.at(load_r, (roles, chosen), 1)
    order = np.lexsort((-group.lids, priority[group.lids]))  # who moves first: low priority, newest
    for _ in range(4 * len(chosen) + 8):
        over_r = load_r > cap_r[:, None]
        over = load > bound
        if not over.any() and not over_r.any():
            break
        best = _best_move(chosen, allowed, roles, load, load_r, bound, cap_r, over, over_r, order, group.lids, down, peers)
        moves = [best[1:]] if best is not None else _chain(chosen, allowed, roles, load, load_r, bound, cap_r, over, over_r,
                                                           order, lambda rows: np.zeros((len(rows), len(group.ports)), np.int64)
                                                           if down is None else down.cost(peers, group.lids[rows].astype(np.int64)))
        if not moves:
            return False
        for i, j in moves:
            c, r = chosen[i], roles[i]
            load[c] -= 1
            load_r[r, c] -= 1
            load[j] += 1
            load_r[r, j] += 1
            chosen[i] = j
            if down is not None:
                down.take(int(peers[j]), int(group.lids[i]))
    else:
        return False
    changed = chosen != group.chosen
    lft[group.switch, group.lids[changed]] = group.ports[chosen[changed]]
    group.chosen = chosen
    return True


SEEN = 64  # candidates looked at for a move that crowds nothing one level up


def _best_move(chosen, allowed, roles, load, load_r, bound, cap_r, over, over_r, order, lids, down, peers):
    """The next single move (cost, i, j): in `order`, the destinations on a port over a cap that
    have a port with room; among the first `SEEN` of them the first whose best port (least
    crowding one level up, then least loaded, then lowest) crowds nothing, else the first.  All
    candidates at once in numpy: one at a time in Python took 90 s on a fabric routed by minhop."""
    found, rooms = [], []
    start, step = 0, 4 * SEEN
    while start < len(order):  # a few at a time, more each round: the first SEEN usually come early
        part = order[start:start + step]
        start, step = start + step, 2 * step
        part = part[over[chosen[part]] | over_r[roles[part], chosen[part]]]
        r = roles[part]
        room = allowed(part) & (load < bound)[None, :] & (load_r[r] < cap_r[r][:, None])
        room[np.arange(len(part)), chosen[part]] = False
        has = room.any(axis=1)
        found.append(part[has])
        rooms.append(room[has])
        if sum(map(len, found)) >= SEEN:
            break
    cand, room = np.concatenate(found)[:SEEN], np.concatenate(rooms)[:SEEN]
    if not len(cand):
        return None
    cost = np.zeros(room.shape, np.int64) if down is None else down.cost(peers, lids[cand].astype(np.int64))
    key = np.where(room, cost * (int(load.max()) + 1) + load[None, :], np.iinfo(np.int64).max)
    j = key.argmin(axis=1)
    c = cost[np.arange(len(cand)), j]
    k = int(np.argmax(c == 0)) if (c == 0).any() else 0
    return int(c[k]), int(cand[k]), int(j[k])


CHAIN_TRIES = 2048


def _chain(chosen, allowed, roles, load, load_r, bound, cap_r, over, over_r, order, cost) -> list[tuple[int, int]]:
    """Two moves where one cannot do: i leaves an over-full port for a port j that is full in
    total but has room for i's role, and some k of another role leaves j for a port with room;
    the first pair that crowds nothing one level up (`cost(rows)` → [len(rows), port]: 0 where a
    move crowds nothing), else the first pair — looking at no more than `CHAIN_TRIES` pairs once
    one is found (a full search is quartic in the group and took a minute on a zone with a spine
    down; 256 was too few: taking crowding pairs too early left the three-layer tree's plan short
    of a fixed point, which one apply must reach).  The k, m of one (i, j) are judged at once."""
    room_r = (load < bound)[None, :] & (load_r < cap_r[:, None])  # [role, port]: room for one more of the role
    by_port = np.argsort(chosen, kind="stable")
    starts = np.searchsorted(chosen[by_port], np.arange(len(load) + 1))
    first: list[tuple[int, int]] = []
    tries = 0
    for i in order[over[chosen[order]] | over_r[roles[order], chosen[order]]]:
        c, r = chosen[i], roles[i]
        cost_i = None
        for j in np.flatnonzero(allowed(i) & (load_r[r] < cap_r[r])):
            if j == c:
                continue
            ks = by_port[starts[j]:starts[j + 1]]  # on port j, ascending
            ks = ks[roles[ks] != r]
            room = allowed(ks) & room_r[roles[ks]]
            room[:, j] = False
            kk, mm = np.nonzero(room)
            if not len(kk):
                continue
            cost_i = cost(np.array([i]))[0] if cost_i is None else cost_i
            free = np.flatnonzero(cost_i[j] + cost(ks)[kk, mm] == 0)
            if len(free) and free[0] < CHAIN_TRIES - tries:
                return [(int(ks[kk[free[0]]]), int(mm[free[0]])), (int(i), int(j))]
            first = first or [(int(ks[kk[0]]), int(mm[0])), (int(i), int(j))]
            tries += len(kk)
            if tries >= CHAIN_TRIES:
                return first
    return first


def _keys(group: PortGroup, priority: np.ndarray) -> np.ndarray:
    """[destination] (role, legal-port pattern, current port, priority): interchangeable items."""
    return np.stack([group.roles, group.pattern, group.chosen, priority[group.lids]], axis=1)


def _min_cost_assignment(group: PortGroup, bound: int, bound_r: dict[int, int], priority: np.ndarray) -> dict | None:
    import networkx as nx  # only where a switch is rebalanced: importing it costs every command 0.06 s

    g = nx.DiGraph()
    keys, n = np.unique(_keys(group, priority), axis=0, return_counts=True)
    for key, count in zip(map(tuple, keys.tolist()), n.tolist()):
        r, pat, cur, prio = key
        g.add_node(("src",) + key, demand=-count)
        for j in np.flatnonzero(group.patterns[pat]).tolist():
            g.add_edge(("src",) + key, ("rp", r, j), weight=0 if j == cur else 1 + 4 * prio)
    for r, b in bound_r.items():
        for j in range(len(group.ports)):
            g.add_edge(("rp", r, j), ("p", j), capacity=b)
    for j in range(len(group.ports)):
        g.add_edge(("p", j), "sink", capacity=bound)
    g.add_node("sink", demand=len(group.lids))
    try:
        return nx.min_cost_flow(g)
    except nx.NetworkXUnfeasible:
        return None


def _apply(lft: np.ndarray, group: PortGroup, flow: dict, priority: np.ndarray) -> None:
    by_key: dict = {}
    keys = _keys(group, priority)
    for i in np.argsort(group.lids, kind="stable"):  # the oldest (lowest LID) stay
        by_key.setdefault(tuple(keys[i].tolist()), []).append(int(i))
    for key, members in by_key.items():
        take = [(j, n) for (_, _, j), n in flow[("src",) + key].items() if n]
        stay = next((n for j, n in take if j == key[2]), 0)
        movers = members[stay:]
        for j, n in take:
            if j == key[2]:
                continue
            for i in movers[:n]:
                lft[group.switch, group.lids[i]] = group.ports[j]
            movers = movers[n:]


def carried(sn, lft: np.ndarray, lids: np.ndarray, seeds: np.ndarray | None = None) -> np.ndarray:
    """[switch, j] True where a packet to lids[j] from a source switch (`seeds`, bool per switch;
    default: the switches with channel adapters) passes the switch: the entries that carry data
    traffic (balance is about those; a spine's table lists every destination, but only the ones
    leaves send up to it reach it).  By walk.c where it is built (`loom.routing.kernels`), else a
    chunk of LIDs at a time (`lid_chunks`); on a large subnet the second half of the LIDs in a
    thread (C) or a forked child (numpy, `loom.forked`)."""
    if seeds is None:
        seeds = np.bincount(sn.ca_switch[sn.ca_lids], minlength=sn.n) > 0
    native = kernels()
    seeds = np.asarray(seeds)
    if native is not None and seeds.dtype == bool and seeds.shape == (sn.n,) == lft.shape[:1] \
            and (len(lids) == 0 or 0 <= np.min(lids) and np.max(lids) < lft.shape[1]):  # walk.c reads only what is there
        seen = np.empty((sn.n, len(lids)), bool)
        via, columns = _switch_behind(sn), np.ascontiguousarray(lids, np.int64)
        lft, seeds = np.ascontiguousarray(lft), np.ascontiguousarray(seeds)
        halves(len(lids), sn.n * len(lids), lambda lo, hi: native.carried(lft, via, *lft.shape, columns, lo, hi, seeds, len(lids), seen))
        return seen
    half = len(lids) // 2
    other = Forked(lambda: _carried(sn, lft, lids[half:], seeds), sn.n * len(lids))
    try:
        return np.concatenate([_carried(sn, lft, lids[:half], seeds), other.result()], axis=1)
    finally:
        other.close()


def _switch_behind(sn) -> np.ndarray:
    """int16 [switch × 256]: the switch behind the port each table entry names (-1: none)."""
    port = sn.out_port(np.arange(256))
    return np.ascontiguousarray(np.where(sn.peer_kind[:, port] == TO_SWITCH, sn.peer_dev[:, port], -1).astype(np.int16))


def _carried(sn, lft: np.ndarray, lids: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    seen = np.zeros((sn.n, len(lids)), bool)
    seen[seeds, :] = True
    for c in lid_chunks(sn.n, len(lids)):
        frontier = seen[:, c].copy()
        for _ in range(sn.n):
            r, j = np.nonzero(frontier)
            port = sn.out_port(lft[r, lids[c][j]])
            ok = sn.peer_kind[r, port] == TO_SWITCH
            new = np.zeros_like(frontier)
            new[sn.peer_dev[r[ok], port[ok]], j[ok]] = True
            frontier = new & ~seen[:, c]
            if not frontier.any():
                break
            seen[:, c] |= frontier
    return seen
