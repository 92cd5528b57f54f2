"""A core's parallel links into one pod, evened out by CA-to-CA paths (three-layer trees).

The per-switch repair (`loads.rebalance_switch`) counts destinations per port: to it every
destination is one unit.  On a core's link into a pod a destination weighs the channel adapters
whose traffic to it passes the core, and that differs: 256 where both other pods' spines send it
there, 128 where one does (a spine's trade), a few where one leaf does (`far.route_far_trades`).
A spine's repair that moves a destination to another core puts it on the link that core's
table names, full or not: ft3-parallel-core once carried 640 paths on a link whose into bound
is 512.

`even_core_paths` swaps destinations of one role between two parallel links of a core into one
pod (or moves one where the counts keep their bound) until every link is within the pod's
paths bound (`loads.into_paths_bound`).  The links lead to the same spine, so nothing below or
elsewhere changes.  It runs on zones of at most `CELLS` leaf × destination cells: the weights
take a walk from every leaf.
"""

from __future__ import annotations

import numpy as np

from .loads import into_paths_bound
from .subnet import TO_SWITCH

CELLS = 2_000_000


def even_core_paths(sn, z, lft: np.ndarray, roles: np.ndarray) -> None:
    """Bring every core link into a pod within the pod's paths bound, in place, where swaps or
    moves between parallel links can: on an intact three-layer zone, where that bound is judged
    (on a degraded one traffic within a pod may cross a core, and the weights here miss it)."""
    if not z.three or z.clinks < 2 or not intact_above_leaves(sn, z):
        return
    lids = np.flatnonzero((roles < 9) & ((sn.ca_switch >= 0) | (sn.lid_switch >= 0)))
    if len(z.leaves) * len(lids) > CELLS:
        return
    cas = ca_counts(sn)
    home = np.where(sn.ca_switch[lids] >= 0, sn.ca_switch[lids], sn.lid_switch[lids])
    edge_of = np.full(sn.n, -1, np.int64)
    edge_of[z.leaves] = np.arange(len(z.leaves))
    pod = np.where(edge_of[home] >= 0, z.leaf_pod(np.maximum(edge_of[home], 0)), -1)
    for p in range(z.spec.pods):
        dests = lids[pod == p]
        bound = pod_paths_bound(sn, z, p, cas)
        if bound is None or not len(dests):
            continue
        weight = core_weights(sn, z, lft, dests, p, cas)
        for c, core in enumerate(z.cores):
            ports = np.flatnonzero((sn.peer_kind[core] == TO_SWITCH) & np.isin(sn.peer_dev[core], pod_spines(z, p)))
            if len(ports) > 1:
                _even(lft, int(core), ports, dests, roles[dests], sn.lid_port[dests] >= 0, weight[c], bound)


def intact_above_leaves(sn, z) -> bool:
    """Every switch of the three-layer zone in service, every up-link of its leaves and spines
    working."""
    up = z.spine_down + 1
    return len(z.leaves) == z.spec.pods * z.L and len(z.spines) == z.spec.pods * z.S \
        and len(z.cores) == z.spec.cores \
        and bool((sn.peer_kind[z.leaves][:, z.down + 1:z.down + 1 + z.U] == TO_SWITCH).all()) \
        and bool((sn.peer_kind[z.spines][:, up:up + z.spec.spine_up] == TO_SWITCH).all())


def ca_counts(sn) -> np.ndarray:
    """[switch] the channel adapters cabled to it (in service)."""
    return np.bincount(sn.ca_switch[sn.ca_lids[sn.ca_switch[sn.ca_lids] >= 0]], minlength=sn.n)


def pod_spines(z, p: int) -> np.ndarray:
    return z.spines[p * z.S:(p + 1) * z.S]


def pod_paths_bound(sn, z, p: int, cas: np.ndarray) -> int | None:
    """The CA-to-CA paths bound of each core link into pod p (`loads.into_paths_bound`; None:
    no working link into it)."""
    links = int(((sn.peer_kind[z.cores] == TO_SWITCH) & np.isin(sn.peer_dev[z.cores], pod_spines(z, p))).sum())
    own = int(cas[z.leaves[z.leaf_pod(np.arange(len(z.leaves))) == p]].sum())
    return int(into_paths_bound(own, links, int(cas.sum()))) if links else None


def core_weights(sn, z, lft, dests: np.ndarray, p: int, cas: np.ndarray) -> np.ndarray:
    """[core, destination]: the channel adapters outside pod p whose traffic to each destination
    (of pod p) passes each core (leaf → spine → core: an up/down route leaves its pod through
    one core)."""
    src = z.leaves[(z.leaf_pod(np.arange(len(z.leaves))) != p) & (cas[z.leaves] > 0)]
    spine = sn.behind(lft, src[:, None], dests[None, :])
    core = np.where(spine >= 0, sn.behind(lft, np.maximum(spine, 0), dests[None, :]), -1)
    row = np.full(sn.n + 1, -1, np.int64)  # index -1 (no core) stays -1
    row[z.cores] = np.arange(len(z.cores))
    at = row[core]
    ok = at >= 0
    weight = np.zeros((len(z.cores), len(dests)), np.int64)
    np.add.at(weight, (at[ok], np.nonzero(ok)[1]), np.broadcast_to(cas[src][:, None], at.shape)[ok])
    return weight


def _even(lft, core: int, ports: np.ndarray, dests, roles, is_ca, weight, bound: int) -> None:
    """Moves (where the counts keep ceil(n / links) in total, per role and over CAs), else swaps
    (one role, CA with CA), from the link with the most paths over `bound` to one with room,
    until no link is over or nothing helps."""
    mine = np.isin(lft[core, dests], ports) & (weight > 0)
    dests, roles, is_ca, weight = dests[mine], roles[mine], is_ca[mine], weight[mine]
    on = np.searchsorted(ports, lft[core, dests])
    n = len(ports)
    caps = {"all": -(-len(dests) // n), "ca": -(-int(is_ca.sum()) // n)}
    caps.update({int(r): -(-int((roles == r).sum()) // n) for r in np.unique(roles)})
    for _ in range(4 * len(dests) + 4):
        paths = np.bincount(on, weights=weight * is_ca, minlength=n).astype(np.int64)
        x = int(np.argmax(paths))
        if paths[x] <= bound:
            return
        step = _move(on, roles, is_ca, weight, paths, x, bound, caps) or _swap(on, roles, is_ca, weight, paths, x, bound)
        if step is None:
            return
        for i, y in step:
            on[i] = y
            lft[core, dests[i]] = ports[y]


def _move(on, roles, is_ca, weight, paths, x, bound, caps) -> list[tuple[int, int]] | None:
    """The lightest CA on link x that fits on another link, onto the one with the fewest paths."""
    here = np.flatnonzero((on == x) & is_ca)
    for i in here[np.argsort(weight[here], kind="stable")]:
        for y in np.argsort(paths, kind="stable"):
            if y == x or paths[y] + weight[i] > bound:
                continue
            there = on == y
            if there.sum() < caps["all"] and (there & (roles == roles[i])).sum() < caps[int(roles[i])] \
                    and (there & is_ca).sum() < caps["ca"]:
                return [(int(i), int(y))]
    return None


def _swap(on, roles, is_ca, weight, paths, x, bound) -> list[tuple[int, int]] | None:
    """The heaviest CA on link x for a lighter one of its role on a link that then keeps its bound."""
    here = np.flatnonzero((on == x) & is_ca)
    for i in here[np.argsort(-weight[here], kind="stable")]:
        for j in np.flatnonzero((on != x) & is_ca & (roles == roles[i]) & (weight < weight[i])):
            y = on[j]
            if paths[y] - weight[j] + weight[i] <= bound:
                return [(int(i), int(y)), (int(j), int(x))]
    return None
