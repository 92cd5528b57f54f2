"""The up/down structure of a subnet *as it stands*: which switches still reach which, legally.

A fat tree routes every packet up*, then down* (one turn, at the top of its path).  On a
degraded fabric (missing links, a switch down) the question "may switch X send destination d
to neighbour Y?" depends only on the graph that is cabled and up, so it is answered here once,
for the engine (which makes its tables legal with it) and for the checks (which compute each
switch's as-built balance bound from it).  Neither trusts the other: they share the definition
of a legal hop, not each other's results.

For a target switch t (the leaf a CA hangs on, a switch's own LID, or the border leaf where a
destination leaves the zone), within t's zone:
- `down[X, t]`: X reaches t going only down (X = t included);
- `updown[X, t]`: X reaches t going up, then down (includes `down`);
- a switch that reaches t neither way (a spine asked for another spine's LID in a two-layer
  tree) goes to the zone's *turn leaf* and up from there: the only place where a down→up turn
  happens, which keeps one VL free of credit loops (`turn_leaf`).
- `live[X]`: X is in the part of the subnet the subnet manager sees (the component of its
  node, else the component with most channel adapters); anything else is cut off.

Cost: one sparse × dense product per layer: O(links × switches) time, switches² bits memory.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from loom.forked import Forked

from .subnet import LAYER, TO_SWITCH, Subnet


#: `UpDown.hops` between switches with no path in their zone: more than any path has
NOT_CONNECTED = np.iinfo(np.int16).max


@dataclass(frozen=True)
class UpDown:
    sn: Subnet

    @classmethod
    def of(cls, sn: Subnet) -> "UpDown":
        """The one UpDown of `sn`, kept on it: the engine, the checks and the push path ask the
        same subnet the same questions, and its matrices (`hops` alone is switches² floats,
        ~2 s and 100 MB at the LID limit) are then computed once per command, not once per
        asker.  A Subnet is immutable, so what is kept stays right."""
        kept = sn.__dict__.get("_updown")
        if kept is None:
            kept = sn.__dict__["_updown"] = cls(sn)
        return kept

    @cached_property
    def layer(self) -> np.ndarray:
        return np.array([LAYER[self.sn.switch(i).role] for i in range(self.sn.n)], np.int64)

    @cached_property
    def zone(self) -> np.ndarray:
        names = [z.name for z in self.sn.fabric.model.zones]
        return np.array([names.index(self.sn.switch(i).zone) for i in range(self.sn.n)], np.int64)

    @cached_property
    def links(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(switch, port, peer switch) of every cabled switch-to-switch port."""
        rows, cols = np.nonzero(self.sn.peer_kind == TO_SWITCH)
        return rows, cols, self.sn.peer_dev[rows, cols]

    @cached_property
    def _link_rows(self) -> np.ndarray:
        """[switch + 1] where each switch's links start in `links` (sorted by switch)."""
        return np.searchsorted(self.links[0], np.arange(self.sn.n + 1))

    def switch_links(self, x: int) -> tuple[np.ndarray, np.ndarray]:
        """(ports, peer switches) of switch x's cabled switch-to-switch ports, by slice of `links`."""
        _, c, p = self.links
        mine = slice(self._link_rows[x], self._link_rows[x + 1])
        return c[mine], p[mine]

    def _adjacency(self, step: int) -> csr_matrix:
        """[X, Y] 1 where X has a link to Y in its own zone one layer `step` away."""
        r, _, p = self.links
        m = (self.zone[r] == self.zone[p]) & (self.layer[p] == self.layer[r] + step)
        return csr_matrix((np.ones(int(m.sum()), np.int32), (r[m], p[m])), shape=(self.sn.n, self.sn.n))

    @cached_property
    def down(self) -> np.ndarray:
        """[X, t] X reaches t by going only down (itself included)."""
        n = self.sn.n
        reach = np.eye(n, dtype=bool)
        adj = self._adjacency(-1)
        for _ in range(int(self.layer.max(initial=0))):
            reach = np.eye(n, dtype=bool) | (adj @ reach.astype(np.int32) > 0)
        return reach

    @cached_property
    def updown(self) -> np.ndarray:
        """[X, t] X reaches t by going up, then down."""
        reach = self.down.copy()
        adj = self._adjacency(+1)
        for lay in range(int(self.layer.max(initial=0)) - 1, -1, -1):
            rows = np.flatnonzero(self.layer == lay)
            reach[rows] |= adj[rows] @ reach.astype(np.int32) > 0
        return reach

    @cached_property
    def link_count(self) -> np.ndarray:
        """[X, Y] cabled links between two switches (int16, as `hops`: 25 MB at the LID limit)."""
        n = self.sn.n
        r, _, p = self.links
        return np.bincount(r * n + p, minlength=n * n).reshape(n, n).astype(np.int16)

    @cached_property
    def single_down(self) -> np.ndarray:
        """[X] every destination X sends down has exactly one legal port: each child below X is
        cabled to it once and no two children reach a switch downward (a three-layer tree's cores
        and spines with one link per child).  Their down groups are single ports, at their bound
        by definition, so the engine's balance pass leaves them alone."""
        child = (self.zone[:, None] == self.zone[None, :]) & (self.layer[None, :] < self.layer[:, None])
        links = np.where(child, self.link_count, 0)  # [X, child] links between them
        below = csr_matrix((links > 0).astype(np.int32)) @ self.down.astype(np.int32)  # [X, t] children reaching t
        return (links <= 1).all(axis=1) & (below <= 1).all(axis=1)

    @cached_property
    def hops(self) -> np.ndarray:
        """[X, Y] switch-to-switch hops within a zone over working links (NOT_CONNECTED: none),
        as int16: a quarter of the float64 the BFS gives (25 MB, not 99 MB, at the LID limit)."""
        r, _, p = self.links
        m = self.zone[r] == self.zone[p]
        graph = csr_matrix((np.ones(int(m.sum())), (r[m], p[m])), shape=(self.sn.n, self.sn.n))
        dist = shortest_path(graph, unweighted=True, directed=False)
        return np.where(np.isfinite(dist), dist, NOT_CONNECTED).astype(np.int16)

    @cached_property
    def live(self) -> np.ndarray:
        """[X] the switch is in the subnet manager's part of the subnet."""
        sn = self.sn
        r, _, p = self.links
        graph = csr_matrix((np.ones(len(r), np.int8), (r, p)), shape=(sn.n, sn.n))
        _, label = connected_components(graph, directed=False)
        cas = np.bincount(label, weights=np.bincount(sn.ca_switch[sn.ca_lids], minlength=sn.n), minlength=label.max() + 1)
        home = int(np.argmax(cas))
        sm = sn.fabric.model.subnet_manager
        if sm is not None and sm in sn.fabric.node_index:
            node = sn.fabric.node_index[sm]
            leaves = [int(sn.ca_switch[sn.port_lid[p.index]]) for p in sn.fabric.ports
                      if p.node == node and p.plane == sn.plane and sn.port_lid[p.index] > 0]
            leaves = [x for x in leaves if x >= 0]
            if leaves:
                home = int(label[leaves[0]])
        return label == home

    @cached_property
    def live_lids(self) -> np.ndarray:
        """[LID] the LID's owner is live (a live switch, or a CA cabled to one)."""
        sn = self.sn
        out = np.zeros(sn.max_lid + 1, bool)
        sw = sn.lid_switch >= 0
        out[sw] = self.live[sn.lid_switch[sw]]
        ca = sn.ca_switch >= 0
        out[ca] = self.live[sn.ca_switch[ca]]
        return out

    def cut_off(self) -> list[str]:
        """Names of switches and CAs the subnet manager cannot reach, for warnings."""
        sn = self.sn
        down = sn.fabric.down_switches
        names = [sn.name(i) + (" (down)" if int(sn.switches[i]) in down else "") for i in np.flatnonzero(~self.live)]
        lost_ca = [l for l in range(1, sn.max_lid + 1) if sn.lid_port[l] >= 0 and not self.live_lids[l]]
        return names + [sn.lid_name(l) for l in lost_ca]

    @cached_property
    def turn_leaf(self) -> np.ndarray:
        return self._turns[0]

    @cached_property
    def turned(self) -> np.ndarray:
        """[X, t] X reaches t with one turn at a turning leaf (up-down, turn, up-down)."""
        out = self.updown.copy()
        for z in np.unique(self.zone):
            for leaf in self.turn_leaves(int(z)):
                out |= self.updown[:, leaf][:, None] & self.updown[leaf][None, :]
        return out

    def turn_leaves(self, zone: int) -> list[int]:
        """The zone's turning leaves, the preferred one first."""
        main = self._turns[1].get(zone, -1)
        used = set(self.turn_leaf[(self.zone == zone) & (self.turn_leaf >= 0)].tolist()) - {main}
        return ([main] if main >= 0 else []) + sorted(used)

    @cached_property
    def _turns(self) -> tuple[np.ndarray, dict[int, int]]:
        """[target switch] the leaf where switches that reach the target neither down nor up-then-
        down turn from down to up (-1: none can).  Preferred for every target of a zone: the live
        leaf that reaches the most switches of its zone (every one, on a fabric whose leaves each
        still reach every spine), on a tie the zone's single border leaf, then the first leaf
        (leaf 0 of an intact zone) — so the zone's down→up turns all happen at one leaf and its
        one VL stays free of credit loops.  Only a target that leaf cannot reach (parts of the
        fabric lost) takes the next leaf in that order."""
        r, _, p = self.links
        border = r[(self.zone[r] != self.zone[p]) & self.live[r]]
        out = np.full(self.sn.n, -1, np.int64)
        main = {}
        for z in np.unique(self.zone):
            members = np.flatnonzero(self.zone == z)
            b = np.unique(border[self.zone[border] == z])
            leaves = np.flatnonzero((self.zone == z) & (self.layer == 0) & self.live)
            if not len(leaves):
                continue
            reach = self.updown[np.ix_(leaves, members)].sum(axis=1)
            key = [(-int(n), not (len(b) == 1 and x == b[0]), self.sn.switch(int(x)).edge or 0) for x, n in zip(leaves, reach)]
            pref = leaves[sorted(range(len(leaves)), key=key.__getitem__)]
            main[int(z)] = int(pref[0])
            can = self.updown[np.ix_(pref, members)]
            out[members] = np.where(can.any(axis=0), pref[np.argmax(can, axis=0)], -1)
        return out, main

    @cached_property
    def cross_port(self) -> np.ndarray:
        """[X, port] the port leads to a switch of another zone (an inter-zone link)."""
        r, c, p = self.links
        out = np.zeros(self.sn.peer_kind.shape, bool)
        m = self.zone[r] != self.zone[p]
        out[r[m], c[m]] = True
        return out

    def targets(self, lft: np.ndarray) -> np.ndarray:
        """[zone, LID] the switch of each zone a destination is delivered to or leaves from:
        its owner (leaf of a CA, the switch of a switch LID) in its own zone, and in any other
        zone the leaf whose table sends it over an inter-zone link (-1: none, or not live)."""
        sn = self.sn
        nz = int(self.zone.max(initial=0)) + 1
        out = np.full((nz, sn.max_lid + 1), -1, np.int64)
        owner = np.where(sn.lid_switch >= 0, sn.lid_switch, sn.ca_switch)
        has = (owner >= 0) & self.live_lids
        out[self.zone[owner[has]], np.flatnonzero(has)] = owner[has]
        rows = np.flatnonzero(self.live & (self.layer == 0) & self.cross_port.any(axis=1))
        for x in rows[::-1]:  # the first such leaf wins
            leaves = self.cross_port[x, sn.out_port(lft[x])]
            lids = np.flatnonzero(leaves & has & (self.zone[np.maximum(owner, 0)] != self.zone[x]))
            out[self.zone[x], lids] = x
        return out

    @cached_property
    def bigraph(self) -> np.ndarray:
        """[X] the switch is in a BiGraph part (upper or lower), where paths go across."""
        return np.array([self.sn.switch(i).role in ("upper", "lower") for i in range(self.sn.n)], bool)

    @contextmanager
    def meanwhile(self, *names: str) -> Iterator[None]:
        """The cached matrices `names` computed in a forked child while the `with` body runs, and
        kept here at its end: the engine's first pass is one core's work, and the structure the
        legality pass needs after it (the switch-to-switch hops alone are a BFS from every
        switch, 4-8 s of CPU at the LID limit on a busy machine) takes the other core meanwhile."""
        job = Forked(lambda: [getattr(self, name) for name in names], self.sn.n * (self.sn.max_lid + 1))
        try:
            yield
            for name, value in zip(names, job.result()):
                self.__dict__.setdefault(name, value)  # where `cached_property` keeps it
        finally:
            job.close()

    def computed(self) -> "UpDown":
        """Every matrix `candidates` may read, computed now: before a fork (`loom.forked`), so that
        parent and child share them instead of each computing its own."""
        for name in ("layer", "zone", "links", "_link_rows", "down", "updown", "hops", "_turns", "turned", "bigraph"):
            getattr(self, name)
        return self

    def candidates(self, x: int, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ports, mask[len(target), len(ports)]): which of switch x's same-zone ports are legal
        next hops towards each target: down towards it if x is above it, else up towards it;
        a switch that reaches it neither way heads for the target's turn leaf (by the same rule)
        and turns up there; failing that (a part of the zone hanging on by one leaf) it takes
        any neighbour nearer to the target, and the deadlock check judges the result.
        In a BiGraph: straight to a target of the other part, and through any switch of the
        other part that links to a target of the same part (one turn, in the other part)."""
        ports, peers = self.switch_links(x)
        mine = self.zone[peers] == self.zone[x]
        ports, peers = ports[mine], peers[mine]
        if self.bigraph[x]:
            across = self.sn.switch(x).role != np.array([self.sn.switch(int(t)).role for t in target])
            mask = np.where(across[:, None], peers[None, :] == target[:, None], self.hops[peers[None, :], target[:, None]] == 1)
            return ports, mask & (target != x)[:, None]
        lower = (self.layer[peers] < self.layer[x])[None, :]
        higher = (self.layer[peers] > self.layer[x])[None, :]
        peers_down, peers_updown = self.down[peers], self.updown[peers]  # [peer, switch]: rows first, then columns

        def legal(t: np.ndarray) -> np.ndarray:
            return np.where(self.down[x, t][:, None], lower & peers_down[:, t].T,
                            higher & self.updown[x, t][:, None] & peers_updown[:, t].T)

        mask = legal(target)
        stuck = ~self.updown[x, target]
        if stuck.any():
            # turn at the target's turn leaf, else at another leaf where the zone already turns
            # (fewest distinct turning points), else step to any neighbour nearer the target
            t_st = target[stuck]
            leaves = self.turn_leaves(int(self.zone[x]))
            chosen = np.full(len(t_st), -1, np.int64)
            for reach in (self.updown, self.turned):  # one turn if possible, else two
                order = [self.turn_leaf[t_st]] + [np.full(len(t_st), leaf) for leaf in leaves]
                for cand in order:
                    ok = (chosen < 0) & (cand >= 0) & (cand != x) & self.updown[x, np.maximum(cand, 0)] \
                        & reach[np.maximum(cand, 0), t_st]
                    chosen[ok] = cand[ok]
            nearer = self.hops[peers[None, :], t_st[:, None]] < self.hops[x, t_st][:, None]
            mask[stuck] = np.where((chosen >= 0)[:, None], legal(np.maximum(chosen, 0)), nearer)
        mask &= (target != x)[:, None]
        return ports, mask
