"""The routes above a leaf's *far trades* on a three-layer tree (`cover.trades` with partners).

A leaf of pod Q over its per-role bound at one up-port may trade two destinations of another
pod P, both on one leaf e there (a compute d on the crowded index, a storage CA p on one with
room): it sends d up to the spine of Q that carries p, and p up to the one that carries d.
Leaves of several pods over at one index share one pair, so each pair adds one destination to
the two links into e, where a pod trading alone would pile its trades onto the few partners it
has (ft3-parallel-core: 5 destinations on the worst spine→leaf link, 3 with far trades, as
OpenSM ftree).

Only that leaf's traffic to d reaches the spine of Q it is sent to, so the spine's entry for d,
and the core's below it, are free: each is chosen here so that every port group stays within
its per-switch bound (in total, per role, over CAs; one destination more in the group) and
every core link into P within its CA-to-CA paths bound (`loads.into_paths_bound`).  The
partner's own route comes first: it carried this leaf's paths to p, which now go to d, so
every link's paths stay as they were.  Where nothing fits, the partner's route is copied and
the per-switch repair (`fit_to_fabric`) evens it out.
"""

from __future__ import annotations

import numpy as np

from .corepaths import CELLS, ca_counts, core_weights, intact_above_leaves, pod_paths_bound, pod_spines
from .loads import counting_bound
from .subnet import TO_SWITCH, Subnet
from .zone import Zone


def route_far_trades(sn: Subnet, z: Zone, lft: np.ndarray, roles: np.ndarray, att_lid: np.ndarray, att_edge: np.ndarray,
                     partner: np.ndarray, far: list[tuple[int, int, int]]) -> None:
    """Set the spine and core entries of every far trade (leaf edge, destination, index)."""
    if not far:
        return
    weight = ca_counts(sn)
    leaf_pod = z.leaf_pod(np.arange(len(z.leaves)))
    lid_pod = np.full(sn.max_lid + 1, -1, np.int64)
    lid_pod[att_lid] = np.where(att_edge >= 0, z.leaf_pod(np.maximum(att_edge, 0)), -1)
    for p in range(z.spec.pods):  # a pod's spines: their LIDs also come down the core links into it
        lid_pod[sn.switch_lid[pod_spines(z, p)]] = p
    lids = np.flatnonzero(roles < 9)
    placed: set[tuple[int, int]] = set()  # (core, lid) entries chosen here
    for a, d, index in far:
        q, lid, mate = int(leaf_pod[a]), int(att_lid[d]), int(att_lid[partner[d]])
        spine = z.spine(q, index % z.S)
        leaves = z.leaves[leaf_pod == q]
        w = int(weight[leaves][sn.behind(lft, leaves, lid) == spine].sum())  # the CAs of the leaves sending it there
        best = _choose(sn, z, lft, roles, lids, lid_pod, spine, leaves, lid, mate, w, placed)
        if best is None:  # the partner's route: paths exact, the repair evens out the counts
            best = int(lft[spine, mate]), int(lft[_core(sn, spine, int(lft[spine, mate])), mate])
        lft[spine, lid] = best[0]
        core = _core(sn, spine, best[0])
        lft[core, lid] = best[1]
        placed.add((core, lid))


def far_trades_pay(sn: Subnet, z: Zone, destinations: int) -> bool:
    """Whether far trades are tried on the zone: intact above its leaves (the routes here follow
    the cabling), and at most `CELLS` leaf × destination cells (each far trade weighs the core
    links by a walk from every leaf: at the LID limit, 1,250 leaves × 43,000 destinations, that
    ran for minutes)."""
    return len(z.leaves) * destinations <= CELLS and intact_above_leaves(sn, z)


def _choose(sn, z, lft, roles, lids, lid_pod, spine, leaves, lid, mate, w, placed) -> tuple[int, int] | None:
    """The spine's up-port and the core's link for `lid` (sent up to `spine` by `leaves`, `w`
    CAs): the first, partner's first, that keeps both switches' groups within their bounds and
    the core link within its paths bound."""
    ups = np.flatnonzero(sn.peer_kind[spine] == TO_SWITCH)
    ups = ups[np.isin(sn.peer_dev[spine, ups], z.cores)]
    reaching = (sn.behind(lft, leaves[:, None], lids[None, :]) == spine).any(axis=0)
    sent = lids[reaching & (lids != lid) & np.isin(lft[spine, lids], ups)]
    ca = bool(sn.lid_port[lid] >= 0)
    fits = _fits(lft[spine, sent], roles[sent], sn.lid_port[sent] >= 0, ups, int(roles[lid]), ca)
    order = sorted(ups[fits].tolist(), key=lambda x: (x != lft[spine, mate], int((lft[spine, sent] == x).sum())))
    into_spines = pod_spines(z, int(lid_pod[lid]))
    into_pod = None  # walked at the first candidate, once: no table changes while they are tried
    for x in order:
        core = _core(sn, spine, x)
        links = np.flatnonzero((sn.peer_kind[core] == TO_SWITCH) & np.isin(sn.peer_dev[core], into_spines))
        into_pod = into_pod or _into_pod(sn, z, lft, lid_pod, lid)
        carried, paths, bound = _core_loads(sn, lft, into_pod, core, links)
        if (core, lid) in placed:  # another pod's trade chose it: the core has one entry per LID
            y = int(lft[core, lid])
            if y in links and paths[links == y][0] + w <= bound:
                return x, y
            continue
        fits = _fits(lft[core, carried], roles[carried], sn.lid_port[carried] >= 0, links, int(roles[lid]), ca) \
            & (paths + w <= bound)
        ok = sorted(links[fits].tolist(), key=lambda y: (y != lft[core, mate], int(paths[links == y][0])))
        if ok:
            return x, ok[0]
    return None


def _fits(chosen: np.ndarray, roles: np.ndarray, is_ca: np.ndarray, ports: np.ndarray, role: int, ca: bool) -> np.ndarray:
    """[port] whether one more destination of `role` (a CA or not) fits on each of a group's
    `ports`, which carry the destinations `chosen` (their ports): within the group's bound
    (`loads.counting_bound`: every port legal for each, so ceil(destinations / ports)) in total,
    of that role and (a CA) over CAs, each counted with the one more."""
    every = np.ones((1, len(ports)), bool)
    ok = np.ones(len(ports), bool)
    for of in (np.ones(len(chosen), bool), roles == role, is_ca if ca else None):
        if of is not None:
            load = (chosen[of][:, None] == ports[None, :]).sum(axis=0)
            ok &= load + 1 <= counting_bound(every, np.array([int(of.sum()) + 1]))
    return ok


def _core(sn: Subnet, spine: int, port: int) -> int:
    return int(sn.peer_dev[spine, port])


def _into_pod(sn, z, lft, lid_pod, lid) -> tuple[np.ndarray, dict[int, np.ndarray], int]:
    """The destinations of `lid`'s pod (`lid` itself left out), each core's CA traffic to them
    (`core_weights`, a walk from every leaf outside the pod: once per trade, not once per
    candidate core) and the paths bound of the links into the pod."""
    p = int(lid_pod[lid])
    dests = np.flatnonzero(lid_pod == p)
    dests = dests[dests != lid]
    cas = ca_counts(sn)
    weights = core_weights(sn, z, lft, dests, p, cas)
    return dests, dict(zip(z.cores.tolist(), weights)), pod_paths_bound(sn, z, p, cas)


def _core_loads(sn, lft, into_pod, core, links) -> tuple[np.ndarray, np.ndarray, int]:
    """What `core` carries down its `links` into the pod (`_into_pod`): the destinations, the
    CA-to-CA paths on each link, and the links' paths bound."""
    dests, weights, bound = into_pod
    weight = weights[core]
    ports = lft[core, dests]
    paths = np.array([int((weight * (sn.lid_port[dests] >= 0))[ports == y].sum()) for y in links], np.int64)
    return dests[(weight > 0) & np.isin(ports, links)], paths, bound
