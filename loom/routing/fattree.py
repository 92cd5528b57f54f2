"""Engine `fattree`: destination-based up/down routing for two- and three-layer fat-tree zones.

Idea (D-mod-k, made balanced per role).  In each zone every destination LID is *attached* to
one leaf: a CA port to its leaf, a leaf's own LID to the leaf, and a destination in another
zone to the zone's border leaf that holds the inter-zone link chosen for it.  Every
destination then gets one up-port index u(d): all other leaves send d up port u(d), which
reaches spine u mod S (link u div S), and that spine sends it down to d's leaf.

Choosing u(d), in four steps:
1. a destination on leaf e at down-port slot k (its leaf's own LID: slot leaf_down) gets
   u = (k + e) mod U.  A leaf's own destinations take distinct up-ports, and since placement
   fills every leaf in the same port order, each role lands evenly on every u;
2. destinations in other zones: a round-robin per role in LID order, each role from a fixed
   start (adding a node to one role moves no destination of another);
3. `even_out` moves as few destinations as needed so that every u carries at most ceil(n/U)
   destinations per role and in total (newest CAs give way first);
4. `fit_to_fabric` (asbuilt.py) makes every entry legal on the fabric as it stands (missing
   links, switches down, parts cut off) and brings every group of interchangeable ports of
   every switch to its exact as-built bound, in total and per role (loads.py): that per-switch
   bound is what `loom check` compares with.
With a hint (the tables in force), every destination keeps its hinted up-port where balance
allows, so plan and diff show only what a change forces.  Missing links are avoided: u(d)
moves to a spine that still reaches d's leaf, and entries on dead ports take a parallel link
or another spine.  Cross-zone destinations are spread per role over the inter-zone links
towards their zone.

Three layers repeat the idea one level up: the pod spine position is u mod S_pod, and a
second spread (role, pod, class) picks the spine's up-port v(d), i.e. the core.

Switch LIDs (management traffic): a leaf reaches a spine/core by going up to it; a switch
that is not below its target goes to the zone's *turn leaf* (its single border leaf, else
leaf 0) and up from there.  T is the only leaf where anything turns from down to up, which
keeps the channel-dependency graph acyclic (`loom check` proves it per fabric).

Cost: O(switches × LIDs) to fill the tables, all numpy; the 32,768-endpoint planes route in
well under a second each.
"""

from __future__ import annotations

from collections import defaultdict

import networkx as nx
import numpy as np

from loom.expand import CABLE_KINDS
from loom.model.rules import direction_split
from loom.model.schema import FatTree2, FatTree3

from .asbuilt import affected_destinations, fit_to_fabric, same_ports
from .base import NO_ROUTE, RoutingError, Tables, empty_lft
from .corepaths import even_core_paths
from .cover import cover, crowding, even_out, trades
from .degraded import avoid_missing, detour, spread_crowded
from .far import far_trades_pay, route_far_trades
from .settle import settle
from .share import share_links
from .subnet import TO_SWITCH, Subnet
from .updown import UpDown
from .zone import Zone

ROLE_ORDER = {"storage": 0, "compute": 1, "management": 2, "other": 3, "switch": 4}


def spread(order: np.ndarray, ports: int, role: np.ndarray, home: np.ndarray, klass: np.ndarray | None = None) -> np.ndarray:
    """Give each destination (visited in `order`) one of `ports` up-port indices.

    Greedy: among the ports where the destination's home (a pod and spine position: the
    destinations one core link into the pod carries; home 0 counts for nothing) is still under
    its fair share ceil(its destinations / ports) — else all ports — in priority order: the
    port least used so far by the destination's role (per-role balance), then by its home, then
    by its class (spine position, for the core choice), then overall.  O(n × ports).
    """
    klass = np.zeros_like(role) if klass is None else klass
    counters = [np.zeros((int(a.max()) + 1, ports), np.int64) for a in (role, home, klass)]
    share = -(-np.bincount(home) // ports)
    share[0] = len(role)
    total = np.zeros(ports, np.int64)
    out = np.zeros(len(role), np.int64)
    for i in order:
        cand = np.flatnonzero(counters[1][home[i]] < share[home[i]])
        cand = cand if len(cand) else np.arange(ports)
        for counter, key in zip(counters, (role[i], home[i], klass[i])):
            vals = counter[key, cand]
            cand = cand[vals == vals.min()]
        vals = total[cand]
        u = int(cand[vals == vals.min()][0])
        out[i] = u
        for counter, key in zip(counters, (role[i], home[i], klass[i])):
            counter[key, u] += 1
        total[u] += 1
    return out


def _per_role_round_robin(lids: np.ndarray, role: np.ndarray, n: int) -> np.ndarray:
    """Index in [0, n) for each LID: its rank in LID order within its role, plus a fixed start per role."""
    out = np.empty(len(lids), np.int64)
    for r in np.unique(role):
        sel = np.flatnonzero(role == r)
        sel = sel[np.argsort(lids[sel], kind="stable")]
        out[sel] = (np.arange(len(sel)) + int(r) * n // len(ROLE_ORDER)) % n
    return out


def _hinted_up(sn: Subnet, z: Zone, hint: Tables | None) -> dict[int, int]:
    """{LID: up-port index u} that the hint's leaves of this zone use for each destination,
    matched by switch and destination names (LIDs may differ between the two)."""
    if hint is None:
        return {}
    h = hint.subnet
    rows = {h.name(r): r for r in range(h.n)}
    leaf_rows = [rows[sn.name(int(r))] for r in z.leaves if sn.name(int(r)) in rows]
    if not leaf_rows:
        return {}
    h_lid_of = {name: l for l, name in enumerate(h.lid_names) if name is not None}
    names = sn.lid_names
    sub = hint.lft[np.ix_(leaf_rows, [h_lid_of.get(n, 0) for n in names])].astype(np.int64)
    up = sub - z.down - 1
    out = {}
    for lid, name in enumerate(names):
        if name not in h_lid_of:
            continue
        col = up[:, lid]
        vals = col[(col >= 0) & (col < z.U)]
        if len(vals):
            out[lid] = int(np.bincount(vals).argmax())  # the choice most leaves make
    return out


def _keep_leaf_choices(sn: Subnet, z: Zone, lft: np.ndarray, hint: Tables, soft: np.ndarray) -> None:
    """Where a hinted leaf sent a destination up a different (cabled) up-port whose spine
    forwards it on, keep that port, and where a hinted spine used another parallel link to the
    same leaf, keep that link: the hint's own choices survive re-routing.  Such entries are marked
    in `soft`: where balance needs a move, they give way first (a hand edit goes back)."""
    h = hint.subnet
    rows = {h.name(r): r for r in range(h.n)}
    h_lid_of = {name: l for l, name in enumerate(h.lid_names) if name is not None}
    cols = np.array([h_lid_of.get(n, 0) for n in sn.lid_names], dtype=np.int64)
    known = np.array([n in h_lid_of for n in sn.lid_names])
    lo, hi = z.down + 1, z.down + z.U
    for row in z.leaves:
        hr = rows.get(sn.name(int(row)))
        if hr is None:
            continue
        want = hint.lft[hr, cols].astype(np.int64)
        cur = lft[row].astype(np.int64)
        cand = np.flatnonzero(known & (want != cur) & (want >= lo) & (want <= hi) & (cur >= lo) & (cur <= hi))
        for lid in cand:
            port = int(want[lid])
            if sn.peer_kind[row, port] == TO_SWITCH and _forwards(sn, lft, np.array([sn.peer_dev[row, port]]), int(lid))[0]:
                lft[row, lid] = port
                soft[row, lid] = True
    for row in z.spines:  # a parallel link to the same leaf
        hr = rows.get(sn.name(int(row)))
        if hr is None:
            continue
        want = np.minimum(hint.lft[hr, cols].astype(np.int64), sn.max_port)
        cur = np.minimum(lft[row].astype(np.int64), sn.max_port)
        same_peer = (sn.peer_kind[row, want] == TO_SWITCH) & (sn.peer_kind[row, cur] == TO_SWITCH) \
            & (sn.peer_dev[row, want] == sn.peer_dev[row, cur]) & (want != cur) & known
        lft[row, same_peer] = want[same_peer]
        soft[row, same_peer] = True


def _forwards(sn: Subnet, lft: np.ndarray, peers: np.ndarray, lid: int) -> np.ndarray:
    """For each peer switch: does it forward `lid` over a cabled port (or own it)?"""
    nxt = lft[peers, lid].astype(np.int64)
    own = nxt == 0
    ok = (nxt != NO_ROUTE) & (sn.peer_kind[peers, np.minimum(nxt, sn.max_port)] != 0)
    return ok | own


class FatTreeEngine:
    name = "fattree"

    def route(self, sn: Subnet, hint: Tables | None = None) -> Tables:
        zones = []
        for spec in sn.fabric.model.zones:
            if not isinstance(spec, (FatTree2, FatTree3)):
                raise RoutingError(f"engine fattree routes fat-tree zones only; zone {spec.name} is a {spec.kind} "
                                   "(route BiGraphs with their own engine)")
            zones.append(Zone(sn, spec))
        lft = empty_lft(sn)
        owner_zone = self._owner_zone(sn, zones)
        roles = self._roles(sn)
        exits = self._zone_exits(sn, zones, owner_zone, roles)
        kept = np.zeros(sn.max_lid + 1, bool)  # destinations whose hinted up-port was kept
        soft = np.zeros(lft.shape, bool)  # single entries kept from the hint against the design's choice
        # what `fit_to_fabric` and the checks read, computed beside the first pass
        with UpDown.of(sn).meanwhile("hops", "down", "updown", "single_down", "turned", "live", "live_lids"):
            for z in zones:
                self._route_zone(sn, z, lft, owner_zone, roles, exits[z.name], _hinted_up(sn, z, hint), kept)
        if hint is not None:
            for z in zones:
                _keep_leaf_choices(sn, z, lft, hint, soft)
        designed = lft.copy()
        warnings = fit_to_fabric(sn, lft, roles, 1 + kept.astype(np.int64), soft)
        if any(settle(sn, z, lft, roles, solve=False) for z in zones):
            # the per-switch repair missed a bound across switches: every leaf's choices at once
            # (`settle`) where the zone is small enough, then the repair again
            lft = designed
            for z in zones:
                settle(sn, z, lft, roles)
            warnings = fit_to_fabric(sn, lft, roles, 1 + kept.astype(np.int64), soft)
        for z in zones:
            share_links(sn, z, lft, roles)
            even_core_paths(sn, z, lft, roles)
        return Tables(sn, lft, self.name, tuple(warnings))

    def repair(self, sn: Subnet, tables: Tables) -> Tables:
        """The tables in force made right for `sn`, the same fabric after failures: only entries
        that became illegal move, then each port group is brought back to its as-built bound
        moving as few entries as it can (`fit_to_fabric`).  What a watcher applies after a link
        or switch goes down: C4's bar, where one lost uplink costs its leaf 1/U and nobody else
        anything, not a recompute that reshuffles the whole fabric."""
        lft = tables.lft.copy()
        keep = 1 + ~affected_destinations(tables, sn)  # unaffected destinations move last
        warnings = fit_to_fabric(sn, lft, self._roles(sn), keep.astype(np.int64), settled=same_ports(tables.subnet, sn),
                                 made_for=tables.subnet)
        return Tables(sn, lft, self.name + "+repair", tuple(warnings))

    @classmethod
    def _roles(cls, sn: Subnet) -> np.ndarray:
        """[lid] ROLE_ORDER of each destination's role (9 for unused LIDs)."""
        return np.array([ROLE_ORDER[sn.lid_role(l)] if cls._is_lid(sn, l) else 9 for l in range(sn.max_lid + 1)])

    @staticmethod
    def _is_lid(sn: Subnet, lid: int) -> bool:
        return sn.lid_switch[lid] >= 0 or sn.lid_port[lid] >= 0

    @staticmethod
    def _owner_zone(sn: Subnet, zones: list[Zone]) -> np.ndarray:
        """Zone index owning each LID (-1 for unused LIDs)."""
        zi = {z.name: k for k, z in enumerate(zones)}
        owner = np.full(sn.max_lid + 1, -1, np.int64)
        sw_zone = np.array([zi[sn.switch(i).zone] for i in range(sn.n)])
        has_sw = sn.lid_switch >= 0
        owner[has_sw] = sw_zone[sn.lid_switch[has_sw]]
        has_ca = sn.ca_switch >= 0
        owner[has_ca] = sw_zone[sn.ca_switch[has_ca]]
        return owner

    def _zone_exits(self, sn: Subnet, zones: list[Zone], owner: np.ndarray, roles: np.ndarray) -> dict:
        """For each zone: {remote LID: (border leaf, port)} spreading remote LIDs over inter-zone links.

        A destination on a border leaf of the next zone that has links from this zone enters
        there directly, over one of those links: traffic entering a zone then never goes down
        to a leaf that sends traffic out of the zone, which is what keeps inter-zone links on
        several leaves free of credit loops on one VL (a cycle needs traffic that came in to go
        down to a border leaf that other traffic leaves by).  The others are spread per role,
        each over the link its role uses least (ties from a start fixed per role), in LID order:
        a node added later moves nobody, and no role's count moves another's."""
        c = sn.fabric.cables
        zi = {z.name: k for k, z in enumerate(zones)}
        local = {int(g): i for i, g in enumerate(sn.switches)}
        links: dict[tuple[int, int], list[tuple[int, int, int]]] = defaultdict(list)
        graph = nx.Graph()
        graph.add_nodes_from(range(len(zones)))
        iz = np.flatnonzero((c.kind == CABLE_KINDS.index("inter-zone")) & (c.plane == sn.plane))
        for i in iz:
            a, b = local[int(c.a_dev[i])], local[int(c.b_dev[i])]
            if sn.peer_kind[a, int(c.a_port[i])] != TO_SWITCH:
                continue  # an end is down
            za, zb = zi[sn.switch(a).zone], zi[sn.switch(b).zone]
            links[(za, zb)].append((a, int(c.a_port[i]), b))
            links[(zb, za)].append((b, int(c.b_port[i]), a))
            graph.add_edge(za, zb)
        leaf_of = np.where(sn.lid_switch >= 0, sn.lid_switch, sn.ca_switch)
        exits = {}
        lids = np.flatnonzero(owner >= 0)
        split = direction_split(sn.fabric.model)
        rising = nx.DiGraph((u, v) for u, v in graph.edges() for u, v in ((u, v), (v, u)) if u < v)
        falling = nx.DiGraph((v, u) for u, v in rising.edges())
        for k, z in enumerate(zones):
            if split:  # paths of rising (falling) zone index only: each direction's VLs stay acyclic
                paths = {o: p for g in (rising, falling) if k in g for o, p in nx.single_source_shortest_path(g, k).items()}
            else:
                paths = nx.single_source_shortest_path(graph, k)
            remote = {}
            by_next: dict[int, list[int]] = defaultdict(list)
            for lid in lids:
                o = int(owner[lid])
                if o != k and o in paths:
                    by_next[paths[o][1]].append(int(lid))
            for nxt, members in sorted(by_next.items()):
                out = links[(k, nxt)]
                far = np.array([f for _, _, f in out])
                load = np.zeros((int(roles.max()) + 1, len(out)), np.int64)
                for lid in sorted(members, key=lambda l: (leaf_of[l] not in far, l)):  # forced ones first
                    allowed = np.flatnonzero(far == leaf_of[lid])
                    if not len(allowed):
                        allowed = np.arange(len(out))
                    r = int(roles[lid])
                    turn = (allowed - r * len(out) // len(ROLE_ORDER)) % len(out)  # each role from its own start
                    j = int(allowed[np.lexsort((turn, load[r, allowed]))[0]])
                    load[r, j] += 1
                    remote[lid] = out[j][:2]
            exits[z.name] = remote
        return exits

    def _route_zone(self, sn: Subnet, z: Zone, lft: np.ndarray, owner: np.ndarray, roles: np.ndarray, remote: dict,
                    hinted: dict[int, int], kept: np.ndarray) -> None:
        zi = [zz.name for zz in sn.fabric.model.zones].index(z.name)
        edge_of = np.full(sn.n, -1, np.int64)
        edge_of[z.leaves] = np.arange(len(z.leaves))
        # destinations attached to a leaf of this zone: (lid, leaf row, port)
        att_lid, att_leaf, att_port = [], [], []
        for lid in np.flatnonzero(owner == zi):
            lid = int(lid)
            s = int(sn.lid_switch[lid])
            if s >= 0:
                if edge_of[s] >= 0:
                    att_lid.append(lid), att_leaf.append(s), att_port.append(0)
            else:
                att_lid.append(lid), att_leaf.append(int(sn.ca_switch[lid])), att_port.append(int(sn.ca_switch_port[lid]))
        n_local = len(att_lid)
        for lid, (leaf, port) in remote.items():
            att_lid.append(lid), att_leaf.append(leaf), att_port.append(port)
        att_lid, att_leaf, att_port = (np.array(x, dtype=np.int64) for x in (att_lid, att_leaf, att_port))
        att_edge = edge_of[att_leaf]
        pod = z.leaf_pod(att_edge)
        role = roles[att_lid]
        self._route_switch_lids(sn, z, lft, self._turn_leaf(z, remote))  # first: their loads are `cover`'s extras
        u = np.empty(len(att_lid), np.int64)
        # local destinations: by where they are cabled, rotated by the leaf's index
        slot = np.where(att_port[:n_local] == 0, z.down, att_port[:n_local] - 1)
        u[:n_local] = (slot + att_edge[:n_local]) % z.U
        # destinations in other zones: a round-robin per role, each role from its own fixed start,
        # so a destination added to one role moves no destination of another
        far = np.arange(n_local, len(att_lid))
        u[far] = _per_role_round_robin(att_lid[far], role[far], z.U)
        keep = np.array([hinted.get(int(l), -1) for l in att_lid], dtype=np.int64)
        u = np.where(keep >= 0, keep, u)
        is_switch = sn.lid_switch[att_lid] >= 0
        u = even_out(u, role, att_lid, z.U, is_switch, keep >= 0, att_edge)
        extra, spine_extra = self._switch_lids_up(sn, z, lft)
        movable = ~((keep >= 0) & (u == keep))
        u = cover(u, role, att_edge, ~is_switch, movable, len(z.leaves), z.U, extra)
        kept[att_lid[(keep >= 0) & (u == keep)]] = True
        order = np.lexsort((att_lid, att_edge, role))
        cabled = sn.peer_kind[z.leaves][:, z.down + 1: z.down + 1 + z.U] == TO_SWITCH  # [leaf edge, u]
        crowded = np.zeros(len(att_lid), bool)
        local_ca = ~is_switch & (np.arange(len(att_lid)) < n_local)  # not a destination of another zone
        if not cabled.all():
            u, crowded = avoid_missing(z, cabled, att_edge, u, role, local_ca, movable)
        pos, k = u % z.S, u // z.S
        if not cabled.all():  # a spine reaches the leaf over one of its other parallel links
            for i in np.flatnonzero(~cabled[att_edge, u]):
                alt = [kk for kk in range(z.links) if cabled[att_edge[i], pos[i] + kk * z.S]]
                k[i] = alt[0] if alt else k[i]  # none: fit_to_fabric finds another way
        in_pod = att_edge % z.L

        # leaves: up-port u(d), or down to the destination on this leaf
        lft[np.ix_(z.leaves, att_lid)] = (z.down + 1 + u)[None, :]
        lft[att_leaf, att_lid] = att_port
        leaf_pod = z.leaf_pod(np.arange(len(z.leaves)))
        sends = att_edge[None, :] != np.arange(len(z.leaves))[:, None]
        near = leaf_pod[att_edge][None, :] == leaf_pod[:, None]
        shape = (u, role, ~is_switch, movable, att_edge, sends, near, z.U, np.arange(z.U) // z.S, np.arange(z.U) % z.S, extra)
        leaf_trades, partner = trades(*shape), None
        crowds = crowding(u, att_edge, z.U, leaf_trades)
        if z.three and crowds > crowding(u, att_edge, z.U, []) and far_trades_pay(sn, z, len(att_lid)):
            mates = np.full(len(att_lid), -1, np.int64)  # far trades, kept where they crowd the links into a leaf less
            far_trades = trades(*shape, mates)
            if crowding(u, att_edge, z.U, far_trades) < crowds:
                leaf_trades, partner = far_trades, mates
        for a, i, index in leaf_trades:
            lft[z.leaves[a], att_lid[i]] = z.down + 1 + index
        if crowded.any() and not z.three:
            spread_crowded(z, lft, cabled, att_lid, att_edge, role, local_ca, np.flatnonzero(crowded))
        # spines: down to the destination's leaf (own pod), else up to the core chosen by v(d)
        # a core link into pod P carries the destinations of P at one spine position: spread each
        # (pod, position) over the cores (and their parallel links), each role within a position
        v = spread(order, z.spec.spine_up, role * z.S + pos, np.where(is_switch, -1, pod * z.S + pos) + 1, pos) \
            if z.three else np.zeros(len(att_lid), np.int64)
        for s in range(z.S if z.three else 0):  # spines at one position: the pods are their "leaves"
            at = np.flatnonzero(pos == s)
            v[at] = cover(v[at], role[at], pod[at], ~is_switch[at], np.ones(len(at), bool), z.spec.pods, z.spec.spine_up,
                          spine_extra[s])
        for p in range(z.spec.pods if z.three else 1):
            for s in range(z.S):
                row = z.spine(p, s)
                mine = pod == p
                lft[row, att_lid[mine]] = 1 + in_pod[mine] * z.links + k[mine]
                if z.three:
                    lft[row, att_lid[~mine]] = z.spine_down + 1 + v[~mine]
        if z.three:
            lft[np.ix_(z.cores, att_lid)] = (1 + pod * z.clinks + v // z.G)[None, :]
            spines = [(p, s) for p in range(z.spec.pods) for s in range(z.S)]
            sends = np.array([(pos == s) & (pod != p) for p, s in spines])
            ups = np.arange(z.spec.spine_up)
            for k, i, index in trades(v, role, ~is_switch, movable, pod, sends, sends, z.spec.spine_up, ups, ups % z.G,
                                      np.array([spine_extra[s, p] for p, s in spines])):
                lft[z.spine(*spines[k]), att_lid[i]] = z.spine_down + 1 + index
            if partner is not None:
                far = [(a, i, index) for a, i, index in leaf_trades if not near[a, i] and index % z.S != u[i] % z.S]
                route_far_trades(sn, z, lft, roles, att_lid, att_edge, partner, far)
        if not cabled.all():
            detour(sn, z, lft, cabled, att_lid, att_edge)

    @staticmethod
    def _switch_lids_up(sn: Subnet, z: Zone, lft: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """What else `cover` must count: the spine and core LIDs (`_route_switch_lids`) each leaf
        sends up each index [leaf edge, index, role], and for each spine position those each
        spine sends up, of the ones its pod's leaves send to it [position, pod, index, role]."""
        lids = sn.switch_lid[np.r_[z.spines, z.cores]].astype(np.int64)
        sw = ROLE_ORDER["switch"]
        up = lft[z.leaves][:, lids].astype(np.int64) - z.down - 1  # [leaf edge, lid]
        ok = (up >= 0) & (up < z.U)
        leaf = np.zeros((len(z.leaves), z.U, len(ROLE_ORDER)), np.int64)
        rows = np.nonzero(ok)[0]
        np.add.at(leaf, (rows, up[ok], sw), 1)
        pods = z.spec.pods if z.three else 1
        spine = np.zeros((z.S, pods, z.spec.spine_up if z.three else 1, len(ROLE_ORDER)), np.int64)
        for p in range(pods if z.three else 0):
            mine = z.leaf_pod(np.arange(len(z.leaves))) == p
            sent = np.zeros((z.S, len(lids)), bool)  # a leaf of the pod sends the LID to that position
            e, j = np.nonzero(ok & mine[:, None])
            sent[up[e, j] % z.S, j] = True
            for s in range(z.S):
                vv = lft[z.spine(p, s), lids].astype(np.int64) - z.spine_down - 1
                go = sent[s] & (vv >= 0) & (vv < z.spec.spine_up)
                np.add.at(spine[s, p], (vv[go], sw), 1)
        return leaf, spine

    @staticmethod
    def _turn_leaf(z: Zone, remote: dict) -> int:
        """The zone's single border leaf if it has one, else its first leaf."""
        border = sorted({leaf for leaf, _ in remote.values()})
        return border[0] if len(border) == 1 else int(z.leaves[0])

    def _route_switch_lids(self, sn: Subnet, z: Zone, lft: np.ndarray, turn_leaf: int) -> None:
        """Spine and core LIDs of this zone, from every switch of the zone (see module doc).

        A switch that is not below the target goes towards the zone's turn leaf T and up from
        there; T is the only leaf where a packet turns from down to up, which keeps the
        channel-dependency graph acyclic (cross-zone traffic also turns only at T when the
        zone has one border leaf).
        """
        pods = z.spec.pods if z.three else 1
        leaf_pos = np.arange(len(z.leaves))
        t_edge = int(np.flatnonzero(z.leaves == turn_leaf)[0])
        t_pod, t_in_pod = (t_edge // z.L, t_edge % z.L) if z.three else (0, t_edge)
        to_t = 1 + t_in_pod * z.links  # spine port down to T
        up0 = z.spine_down + 1 if z.three else None  # a spine's first up-port

        grid_pod, grid_pos = np.divmod(np.arange(pods * z.S), z.S)  # z.spines is pod-major
        core_group = np.arange(len(z.cores)) // z.G if z.three else None

        def spines_towards(target: tuple[int, int] | None, up_same_pos: int, target_pos: int) -> np.ndarray:
            """Every spine's port towards a switch LID at spine position `target_pos` (the
            spine `target` itself, or a core of that position's group): 0 on the target, up
            from a spine at the same position, down to T in T's pod, else up to a core of
            its group that leads back down into T's pod."""
            port = up0 + (grid_pod + grid_pos + target_pos) % z.spec.spine_up if z.three else np.zeros(len(grid_pod), np.int64)
            port = np.where(grid_pod == t_pod, to_t, port)
            port = np.where(grid_pos == target_pos, up_same_pos, port)
            if target is not None:
                port = np.where((grid_pod == target[0]) & (grid_pos == target[1]), 0, port)
            return port

        for p in range(pods):
            for s in range(z.S):
                lid = int(sn.switch_lid[z.spine(p, s)])
                lft[z.leaves, lid] = z.down + 1 + (leaf_pos % z.links) * z.S + s
                # up from a spine at the same position: index G + p, past the indices 0..G-1 its
                # group's core LIDs take, so a spine's switch LIDs share no up-port where they fit
                lft[z.spines, lid] = spines_towards((p, s), up0 + (z.G + p) % z.spec.spine_up if z.three else 0, s)
                if z.three:
                    lft[z.cores, lid] = 1 + np.where(core_group == s, p, t_pod) * z.clinks
        for c, row in enumerate(z.cores):
            lid = int(sn.switch_lid[row])
            g = c // z.G
            lft[z.leaves, lid] = z.down + 1 + (leaf_pos % z.links) * z.S + g
            lft[z.spines, lid] = spines_towards(None, up0 + c - g * z.G, g)
            lft[z.cores, lid] = np.where(np.arange(len(z.cores)) == c, 0, 1 + t_pod * z.clinks)
