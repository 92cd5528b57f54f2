"""Every leaf's up-port for every destination chosen at once, on a small intact zone, so that the
leaves' up-ports and the links into each leaf meet their bounds together.

`cover` gives each destination one up-port index used by every leaf.  That cannot always meet
every leaf's per-role bound: five leaves with two compute CAs each and four up-ports — each leaf
sends 8 compute destinations (bound 2 per port), 10 compute destinations share 4 indices, so
one index holds 3, and a leaf holding none of those 3 sends all 3 up one port.  A destination
must then take different ports from different leaves; the per-switch repair
(`asbuilt.fit_to_fabric`) does that one leaf at a time, blind to the CA-to-CA paths it piles
onto one spine's link into the destination's leaf (the "into" bound of `checks.subtrees`).

`settle` is the integer program over what each leaf sends up (HiGHS, as `cover._assign`):
x[k, d, i] = leaf k sends destination d up index i, for every leaf with channel adapters (the
sources whose up-ports are judged), with
- each leaf's up-port loads per role and in total at most ceil(sent / up-ports);
- each spine→leaf link's CA-to-CA paths (leaf k weighs its CAs; the link is the spine at d's
  pod and index position, and the port that spine sends d down) at most the into bound
  ceil(the leaf's CAs / its up-links) × the CAs outside it;
- a spine's or core's own LID only up to its spine position (any parallel link);
keeping as many entries as it can.  It runs only where a bound is missed, on zones of at most
`CELLS` cells with every up-link cabled and no inter-zone links (traffic from other zones weighs
a border leaf more than its CAs); elsewhere the repair does what it did.
"""

from __future__ import annotations

import numpy as np

from .base import NO_ROUTE
from .loads import into_paths_bound
from .subnet import TO_SWITCH
from .updown import UpDown

#: (leaf, destination, index) cells up to which the program is built
CELLS = 150_000
#: The programs' limits.  The answer must not depend on how busy the machine is (a table that
#: differs between two runs of the same model is drift to the next plan), so the limit that
#: ends a search is counted in branch-and-bound nodes; the wall-clock one is only a safety
#: valve, ten times what the largest program took on a quiet machine (odd-11x7: 3.0 s at the
#: root node, 37,772 columns).
LIMITS = {"node_limit": 32, "time_limit": 30.0}


def settle(sn, z, lft: np.ndarray, roles: np.ndarray, solve: bool = True) -> bool:
    """Whether the zone misses a bound the program is for; with `solve`, its leaf (and spine)
    rows of `lft` rewritten in place where the program finds a solution."""
    leaves, n_up, up0 = z.leaves, z.U, z.down + 1
    if len(leaves) * np.count_nonzero(lft[leaves[0]] != NO_ROUTE) * n_up > CELLS:
        return False  # before any [leaf × LID] array: a large zone costs nothing here
    if not (sn.peer_kind[leaves][:, up0:up0 + n_up] == TO_SWITCH).all() or UpDown.of(sn).cross_port[leaves].any():
        return False
    live_ca = sn.ca_lids[sn.ca_switch[sn.ca_lids] >= 0]
    w = np.bincount(sn.ca_switch[live_ca], minlength=sn.n)[leaves]  # CAs per leaf: the weight of its paths
    up = lft[leaves].astype(np.int64) - up0
    sent = (up >= 0) & (up < n_up) & (w > 0)[:, None]
    k, d = np.nonzero(sent)
    if not len(k) or len(k) * n_up > CELLS:
        return False
    cur = up[k, d]
    r = roles[d]
    nr = int(r.max()) + 1
    load = np.zeros((len(leaves), n_up, nr), np.int64)
    np.add.at(load, (k, cur, r), 1)
    bound_r = -(-load.sum(axis=1) // n_up)  # [leaf, role]
    bound = -(-load.sum(axis=(1, 2)) // n_up)
    # links into leaves: local CA destinations, home leaf e, the spine at their pod and position
    edge_of = np.full(sn.n, -1, np.int64)
    edge_of[leaves] = np.arange(len(leaves))
    home = np.where(sn.lid_switch[d] < 0, edge_of[np.maximum(sn.ca_switch[d], 0)], -1)
    home[sn.ca_switch[d] < 0] = -1
    total_ca = int(w.sum())
    own = np.bincount(sn.ca_switch[live_ca], minlength=sn.n)[leaves]
    pbound = into_paths_bound(own, n_up, total_ca)  # [home edge]
    if z.three:  # the links into a pod: ceil(its CAs / core links into it) × the CAs outside
        pod_ca = np.bincount(z.leaf_pod(np.arange(len(leaves))), weights=own).astype(np.int64)
        pbound = (pbound, into_paths_bound(pod_ca, z.S * z.spec.spine_up, total_ca))
    else:
        pbound = (pbound, None)
    missed = _leaves(sn, z, lft, k, d, cur, r, home, w, bound_r, bound, pbound, load, edge_of, solve)
    if z.three:
        missed |= _spines(sn, z, lft, roles, w, pbound[1], edge_of, solve)
    return missed


def _leaves(sn, z, lft, k, d, cur, r, home, w, bound_r, bound, pbound, load, edge_of, solve: bool) -> bool:
    """The leaves' program where a bound is missed: first keeping every spine, then free."""
    leaves, up0 = z.leaves, z.down + 1
    sel, key, cap = _into(sn, z, lft, k, d, cur, home, w, pbound, True)
    paths = np.bincount(key, weights=w[k[sel]], minlength=len(cap))
    over = bool((load > bound_r[:, None, :]).any() or (load.sum(axis=2) > bound[:, None]).any() or (paths > cap).any())
    if not over or not solve:
        return over
    got = _program(sn, z, lft, k, d, cur, r, home, w, bound_r, bound, pbound, True)
    if got is not None:
        lft[leaves[k], d] = up0 + got
        return over
    # free: with parallel links, first each destination on the link its spine takes now, then
    # all of a spine's links to a leaf as one; `_spine_links` then splits each spine's links
    delivered = np.where(np.isin(sn.lid_switch[d], leaves), edge_of[np.maximum(sn.lid_switch[d], 0)], home)
    for exact in (True, False) if z.links > 1 else (True,):
        got = _program(sn, z, lft, k, d, cur, r, home, w, bound_r, bound, pbound, False, exact, delivered)
        if got is None:
            continue
        # what reaches each spine changed: its parallel links to each leaf are chosen again
        links = _spine_links(sn, z, lft, k, d, got, delivered, home >= 0, w, r, pbound[0]) if z.links > 1 else {}
        if links is not None:
            lft[leaves[k], d] = up0 + got
            for (row, lid), port in links.items():
                lft[row, lid] = port
            return over
    return over


def _spines(sn, z, lft, roles, w, pod_bound, edge_of, solve: bool) -> bool:
    """The same one level up (three layers): each spine's up-port (its core) for each destination
    its pod's leaves send it, within its per-role and total bounds and the core→pod links'
    paths bounds; a destination weighs the CAs of the leaves that send it to this spine."""
    up0, n_up, n_leaf_up = z.spine_down + 1, z.spec.spine_up, z.U
    spines = z.spines
    if not (sn.peer_kind[spines][:, up0:up0 + n_up] == TO_SWITCH).all():
        return False
    lpod = z.leaf_pod(np.arange(len(z.leaves)))
    lup = lft[z.leaves].astype(np.int64) - (z.down + 1)
    weight = np.zeros((len(spines), lft.shape[1]), np.int64)  # [spine, lid]: CAs whose traffic it carries up
    reached = np.zeros(weight.shape, bool)
    for j in range(len(spines)):
        m = (lpod == j // z.S)[:, None] & (lup >= 0) & (lup < n_leaf_up) & (lup % z.S == j % z.S) & (w > 0)[:, None]
        weight[j] = (m * w[:, None]).sum(axis=0)
        reached[j] = m.any(axis=0)
    vs = lft[spines].astype(np.int64) - up0
    j, d = np.nonzero(reached & (vs >= 0) & (vs < n_up))
    if not len(j):
        return False
    cur, r = vs[j, d], roles[d]
    nr = int(r.max()) + 1
    load = np.zeros((len(spines), n_up, nr), np.int64)
    np.add.at(load, (j, cur, r), 1)
    bound_r = -(-load.sum(axis=1) // n_up)
    bound = -(-load.sum(axis=(1, 2)) // n_up)
    pod = np.where(sn.lid_switch[d] < 0, lpod[edge_of[np.maximum(sn.ca_switch[d], 0)]], -1)
    pod[(sn.ca_switch[d] < 0) | (edge_of[np.maximum(sn.ca_switch[d], 0)] < 0)] = -1
    paths_of = np.where(pod >= 0, weight[j, d], 0)
    core_of = sn.peer_dev[spines][:, up0:up0 + n_up]  # [spine, index]

    def into(p, i, exact=True):
        sel = np.flatnonzero(pod[p] >= 0)
        core = core_of[j[p[sel]], i[sel]]
        port = lft[core, d[p[sel]]].astype(np.int64) if exact else np.zeros(len(sel), np.int64)
        link, inv = np.unique((pod[p[sel]] * sn.n + core) * 256 + port, return_inverse=True)
        return sel, inv, pod_bound[link // 256 // sn.n], paths_of[p[sel]]

    sel, inv, cap, wt = into(np.arange(len(j)), cur)
    over = bool((load > bound_r[:, None, :]).any() or (load.sum(axis=2) > bound[:, None]).any()
                or (np.bincount(inv, weights=wt, minlength=len(cap)) > cap).any())
    if not over or not solve:
        return over
    own_core = np.isin(sn.lid_switch[d], z.cores)
    for same_core in (True, False):
        if not same_core and z.clinks > 1:
            break  # a core's parallel links into a pod: its own choice, not modelled here

        def allowed(p, i, same_core=same_core):
            return ~(own_core[p] | same_core) | (core_of[j[p], i] == core_of[j[p], cur[p]])

        got = _solve(j, cur, r, n_up, bound_r, bound, allowed, None if same_core else into)
        if got is not None:
            lft[spines[j], d] = up0 + got
            return over
    return over


def _spine_at(z, e: np.ndarray, i: np.ndarray) -> np.ndarray:
    """Rows of the spines at index positions i in home leaves e's pods."""
    return z.spines[z.leaf_pod(e) * z.S + i % z.S]


def _leaf_link(sn, z, lft, k, d, idx, at, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The choices (leaf k sends d up index idx) whose destination is delivered at another leaf
    `at`, that leaf, and a number for the link each enters it by: the spine at the leaf's pod
    and the index's position, and the port that spine takes down (with `exact` False and
    parallel links, all of the spine's links to the leaf as one)."""
    sel = np.flatnonzero((at >= 0) & (k != at))
    e = at[sel]
    spine = _spine_at(z, e, idx[sel])
    port = lft[spine, d[sel]].astype(np.int64) if exact or z.links == 1 else np.zeros(len(sel), np.int64)
    return sel, e, (e * sn.n + spine) * 256 + port


def _into(sn, z, lft, k, d, idx, home, w, pbound, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which link into a subtree each choice (leaf k sends d up index idx) puts d's paths on:
    (the choices that reach one, a link number for each, each link's paths bound).  Into a leaf:
    the spine at d's pod and the index's position, the port it takes down (with `exact` False
    and parallel links: all of its links to the leaf as one, `_spine_links` splits them).
    Into a pod (three layers, from another pod): the core the sender's spine takes d up to, and
    the port that core takes down."""
    leaf_bound, pod_bound = pbound
    sel, e, key = _leaf_link(sn, z, lft, k, d, idx, home, exact)
    keys, caps = [key], [leaf_bound[e] * (1 if exact else z.links)]
    picks = [sel]
    if pod_bound is not None:
        pod = z.leaf_pod(home)
        far = sel[pod[sel] != z.leaf_pod(k[sel])]
        up = z.spines[z.leaf_pod(k[far]) * z.S + idx[far] % z.S]
        core = sn.peer_dev[up, lft[up, d[far]]]
        keys.append(((sn.n + pod[far]) * sn.n + core) * 256 + lft[core, d[far]])
        caps.append(pod_bound[pod[far]])
        picks.append(far)
    link, inv = np.unique(np.concatenate(keys), return_inverse=True)
    cap = np.zeros(len(link), np.int64)
    cap[inv] = np.concatenate(caps)
    return np.concatenate(picks), inv, cap


def _program(sn, z, lft, k, d, cur, r, home, w, bound_r, bound, pbound, same_spine: bool,
             exact: bool = True, delivered: np.ndarray | None = None) -> np.ndarray | None:
    """The program of the module doc; with `same_spine`, each leaf keeps the spine it sends each
    destination to and only picks among its parallel links to it: what reaches each spine, and
    so every link into every leaf, stays as it is (no path rows needed)."""
    sw = sn.lid_switch[d]
    fixed = ((sw >= 0) & np.isin(sw, np.r_[z.spines, z.cores])) | same_spine  # a switch's own LID: its spine position

    def allowed(p, i):
        return ~fixed[p] | (i % z.S == cur[p] % z.S)

    def into(p, i):
        sel, inv, cap = _into(sn, z, lft, k[p], d[p], i, home[p], w, pbound, exact)
        return sel, inv, cap, w[k[p[sel]]]

    def dests(p, i):
        return _dests(sn, z, lft, k[p], d[p], i, delivered[p], exact)

    is_ca = sn.lid_switch[d] < 0  # every channel adapter together, as `loads.CA`
    bound_ca = -(-np.bincount(k[is_ca], minlength=len(bound)) // z.U)
    links = None if same_spine else into
    # first every bound, then those a check fails first (paths, roles) where that is infeasible
    got = _solve(k, cur, r, z.U, bound_r, bound, allowed, links,
                 None if same_spine or delivered is None else dests, (is_ca, bound_ca))
    return got if got is not None else _solve(k, cur, r, z.U, bound_r, bound, allowed, links)


def _dests(sn, z, lft, k, d, idx, delivered, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which link into a leaf each choice puts destination d on, for the links' destination
    bound (`checks.subtrees`: ceil(the leaf's destinations — its CAs and its own LID — / its
    up-links) per link; a spine's parallel links as one with `exact` False): (the choices
    that reach one, a link number for each, each link's bound, each choice's destination)."""
    sel, e, key = _leaf_link(sn, z, lft, k, d, idx, delivered, exact)
    link, inv = np.unique(key, return_inverse=True)
    mine = delivered >= 0
    at = np.bincount(np.unique(np.c_[delivered[mine], d[mine]], axis=0)[:, 0], minlength=len(z.leaves))  # [leaf] destinations
    per_link = -(-at // z.U) * (1 if exact else z.links)
    cap = np.zeros(len(link), np.int64)
    cap[inv] = per_link[e]
    return sel, inv, cap, d[sel]


def _solve(sender, cur, r, n_up, bound_r, bound, allowed, into, dests=None, ca=None) -> np.ndarray | None:
    """x[pair, index]: each pair (a sender and a destination it sends up) on one allowed index;
    each sender's loads per index within `bound_r` [sender, role] and `bound` [sender]; with
    `into(p, i)` → (cells, link of each, each link's bound, each cell's weight) the weighted
    load of every link within its bound; with `dests(p, i)` → (cells, link of each, each link's
    bound, each cell's destination) the destinations using every link within its bound (a
    variable per link and destination, at least each of its cells); keeping as many current
    indices as it can.  The chosen index per pair, or None (infeasible, or not solved within
    LIMITS)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    pairs = len(sender)
    i = np.tile(np.arange(n_up), pairs)
    p = np.repeat(np.arange(pairs), n_up)
    ok = allowed(p, i)
    i, p = i[ok], p[ok]
    cells = len(p)
    senders, nr = bound_r.shape
    rows, cols, vals, lo, hi = [p], [np.arange(cells)], [np.ones(cells)], [np.ones(pairs)], [np.ones(pairs)]
    base = pairs
    rows.append(base + (sender[p] * nr + r[p]) * n_up + i)  # per role
    lo.append(np.full(senders * nr * n_up, -np.inf))
    hi.append(np.repeat(bound_r.ravel(), n_up).astype(float))
    base += senders * nr * n_up
    rows.append(base + sender[p] * n_up + i)  # in total
    lo.append(np.full(senders * n_up, -np.inf))
    hi.append(np.repeat(bound, n_up).astype(float))
    base += senders * n_up
    cols += [np.arange(cells)] * 2
    vals += [np.ones(cells)] * 2
    if ca is not None:  # (whether each pair's destination is a CA, [sender] bound over CAs)
        is_ca, bound_ca = ca
        c = np.flatnonzero(is_ca[p])
        rows.append(base + sender[p[c]] * n_up + i[c])
        cols.append(c)
        vals.append(np.ones(len(c)))
        lo.append(np.full(senders * n_up, -np.inf))
        hi.append(np.repeat(bound_ca, n_up).astype(float))
        base += senders * n_up
    if into is not None:
        sel, inv, cap, weight = into(p, i)
        rows.append(base + inv)
        cols.append(sel)
        vals.append(weight.astype(float))
        lo.append(np.full(len(cap), -np.inf))
        hi.append(cap.astype(float))
        base += len(cap)
    used = 0
    if dests is not None:
        sel, inv, cap, dest = dests(p, i)
        span = int(dest.max(initial=0)) + 1
        pair, u = np.unique(inv.astype(np.int64) * span + dest, return_inverse=True)
        used = len(pair)  # columns cells.. : link `inv` carries destination `dest`
        rows += [base + np.arange(len(sel))] * 2  # a cell on a link: that link carries its destination
        cols += [sel, cells + u]
        vals += [np.ones(len(sel)), -np.ones(len(sel))]
        lo.append(np.full(len(sel), -np.inf))
        hi.append(np.zeros(len(sel)))
        base += len(sel)
        of_link = pair // span
        rows.append(base + of_link)
        cols.append(cells + np.arange(used))
        vals.append(np.ones(used))
        lo.append(np.full(len(cap), -np.inf))
        hi.append(cap.astype(float))
    a = coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                   shape=(int(sum(len(x) for x in lo)), cells + used)).tocsr()
    res = milp(np.r_[-(i == cur[p]).astype(float), np.zeros(used)],
               constraints=LinearConstraint(a, np.concatenate(lo), np.concatenate(hi)),
               integrality=np.r_[np.ones(cells), np.zeros(used)], bounds=Bounds(0, 1), options=dict(LIMITS))
    if res.status != 0 or res.x is None:
        return None
    chosen = np.full(pairs, -1, np.int64)
    on = res.x[:cells] > 0.5
    chosen[p[on]] = i[on]
    return chosen if (chosen >= 0).all() else None


def _spine_links(sn, z, lft, k, d, idx, delivered, is_ca, w, r, pbound) -> dict | None:
    """{(spine row, LID): port} for every spine and leaf it has parallel links to: the
    destinations of that leaf that now reach the spine, over its links, each link within
    ceil(their count / links) per role and in total and within the leaf's paths bound (a CA
    destination weighs the CAs of every leaf that sends it to this spine), keeping as many
    entries as it can.  None when some spine cannot."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    sel = np.flatnonzero((delivered >= 0) & (k != delivered))
    spine = _spine_at(z, delivered[sel], idx[sel])
    key, inv = np.unique(spine * (sn.max_lid + 1) + d[sel], return_inverse=True)  # (spine, destination)
    weight = np.bincount(inv, weights=np.where(is_ca[sel], w[k[sel]], 0), minlength=len(key))
    rows_s, lids = key // (sn.max_lid + 1), key % (sn.max_lid + 1)
    first = np.zeros(len(key), np.int64)
    first[inv] = sel
    home, role = delivered[first], r[first]
    out: dict = {}
    for s_row, e in {(int(a), int(b)) for a, b in zip(rows_s, home)}:
        mine = np.flatnonzero((rows_s == s_row) & (home == e))
        ports = np.flatnonzero((sn.peer_kind[s_row] == TO_SWITCH) & (sn.peer_dev[s_row] == z.leaves[e]))
        m, n = len(ports), len(mine)
        cur = (lft[s_row, lids[mine]][:, None] == ports[None, :])
        x = np.arange(n * m).reshape(n, m)
        a_rows, a_cols, a_vals, lo, hi = [], [], [], [], []

        def add(cols, vals, low, high):
            a_rows.extend([len(lo)] * len(cols))
            a_cols.extend(cols)
            a_vals.extend(vals)
            lo.append(low)
            hi.append(high)

        for j in range(n):
            add(x[j].tolist(), [1] * m, 1, 1)
        for q in range(m):
            add(x[:, q].tolist(), [1] * n, -np.inf, -(-n // m))
            for rr in np.unique(role[mine]):
                got = np.flatnonzero(role[mine] == rr)
                add(x[got, q].tolist(), [1] * len(got), -np.inf, -(-len(got) // m))
            add(x[:, q].tolist(), weight[mine].tolist(), -np.inf, float(pbound[e]))
        a = coo_matrix((a_vals, (a_rows, a_cols)), shape=(len(lo), n * m)).tocsr()
        res = milp(-cur.ravel().astype(float), constraints=LinearConstraint(a, lo, hi), integrality=np.ones(n * m),
                   bounds=Bounds(0, 1), options=dict(LIMITS))
        if res.status != 0 or res.x is None:
            return None
        pick = res.x.reshape(n, m).argmax(axis=1)
        out.update({(s_row, int(lids[mine[j]])): int(ports[pick[j]]) for j in range(n)})
    return out
