"""The fattree engine's up-port choice, balanced for every leaf at once, before any per-switch repair.

`even_out` brings the global counts per role and in total within ceil(n / indices) and keeps
each leaf's own destinations on distinct links into it; `cover` then brings every leaf's
up-ports to their bound; `trades` reaches per-role balance one choice per destination cannot.

The fattree engine gives each destination d one up-port index u(d), used by every leaf of the
zone.  Leaf e then sends up port u all destinations with that index except its own, so its load
per role is N[u, r] - own[e, u, r] (+ the spine and core LIDs it sends up).  Balanced global
counts N are not enough: each leaf needs its own destinations on the indices the others crowd
(a leaf with as many of a role as there are heavy indices must hold every heavy one).  When a
leaf misses its bound, the engine's last pass (`asbuilt.fit_to_fabric`) moves entries of that
leaf alone — and a destination sent up different ports by different leaves enters its own leaf
over several spine links, which is what crowds the links *into* a leaf (issue 33).

`cover` fixes it at the source by swapping the indices of two destinations of the same role on
different leaves: the global counts N do not move, no other leaf's load moves (each other leaf
sends both up, one on each index), and only the two leaves' loads trade one unit between the two
indices.  A swap is taken only if neither leaf goes over its bound (per role, in total) and
neither leaf's own destinations crowd a link into it (its share ceil(own / indices), over all
its destinations and over its channel adapters).  Kept (hinted) choices never move.
Cost: O(violations × destinations); none on a tree that is already at its bounds.
"""

from __future__ import annotations

import numpy as np

#: zones up to this many (destination × up-port index) cells get the exact assignment (`_assign`,
#: ~1 s at 8,400 cells); larger ones, or one not solved within PROGRAM_SECONDS, the swaps
PROGRAM_CELLS, PROGRAM_SECONDS = 200_000, 5.0


def even_out(u: np.ndarray, role: np.ndarray, lids: np.ndarray, n: int, is_switch: np.ndarray,
             kept: np.ndarray, home: np.ndarray) -> np.ndarray:
    """Move as few destinations as possible so that every index carries at most
    ceil(count / n) destinations, per role and in total.  Who gives way: destinations without a
    kept (hinted) choice first, then channel adapters by descending LID (a node added at the end
    is the one that moves), switch LIDs last — but first one that can go to an index no other
    destination of its home leaf uses (each index is one spine link down into that leaf); where
    it goes: the least used such index."""
    u = u.copy()
    used = np.zeros((int(home.max()) + 1 if len(home) else 1, n), np.int64)
    np.add.at(used, (home, u), 1)
    nroles = int(role.max()) + 1 if len(role) else 1
    cnt = np.zeros((nroles, n), np.int64)
    np.add.at(cnt, (role, u), 1)
    bound_r = -(-cnt.sum(axis=1) // n)
    bound = -(-len(u) // n)
    by_lid = np.lexsort((-lids, is_switch, kept))
    for _ in range(len(u)):
        tot = cnt.sum(axis=0)
        over = np.argwhere(cnt > bound_r[:, None])
        if len(over):
            r, c = (int(x) for x in over[0])
            targets = np.flatnonzero(cnt[r] < bound_r[r])
        else:
            hot = np.flatnonzero(tot > bound)
            if not len(hot):
                break
            c = int(hot[0])
            room = {int(r): np.flatnonzero((cnt[r] < bound_r[r]) & (tot < bound)) for r in np.flatnonzero(cnt[:, c])}
            first = next((i for i in by_lid if u[i] == c and len(room[int(role[i])])), None)
            if first is None:
                break
            r, targets = int(role[first]), room[int(role[first])]
        if not len(targets):
            break
        ranked = targets[np.argsort(tot[targets], kind="stable")]
        movers = [i for i in by_lid if u[i] == c and role[i] == r]
        i, tgt = next(((i, int(t)) for i in movers for t in ranked if not used[home[i], t]), (movers[0], int(ranked[0])))
        u[i] = tgt
        cnt[r, c] -= 1
        cnt[r, tgt] += 1
        used[home[i], c] -= 1
        used[home[i], tgt] += 1
    return _unshare(u, n, role, home, ~is_switch, by_lid[~kept[by_lid]], (cnt, bound_r, bound), ~kept)


def _unshare(u: np.ndarray, n: int, role: np.ndarray, home: np.ndarray, is_ca: np.ndarray, by_lid: np.ndarray,
             counts: tuple[np.ndarray, np.ndarray, int], free: np.ndarray) -> np.ndarray:
    """Where more destinations of one leaf share an index than the leaf's fair share
    ceil(its destinations / indices) (one spine link into that leaf carries them all) — counted
    twice: over all its destinations, and over its channel adapters alone (a leaf's own LID must
    not take a CA's place: CA-to-CA paths into the leaf are counted per CA) — swap one's index
    with a destination of the same role elsewhere whose leaf has room at the other index: counts
    per role and per index stay as they are.  With no partner, a move to an index where its role
    and the total are under their bounds (`counts`: per role and index, the bounds) does.  Only
    `free` destinations (not kept from a hint) move: the tables in force stay where they can."""
    cnt, bound_r, bound = counts
    homes = int(home.max(initial=0)) + 1
    used = np.zeros((2, homes, n), np.int64)  # [all / CAs only, home, index]
    np.add.at(used[0], (home, u), 1)
    np.add.at(used[1], (home[is_ca], u[is_ca]), 1)
    cap = -(-used.sum(axis=2) // n)
    kinds = np.stack([np.ones_like(is_ca), is_ca])  # [kind, destination]: counted in that kind
    order = np.full(len(u), len(u), np.int64)
    order[by_lid] = np.arange(len(by_lid))
    for i in by_lid:
        a, h = u[i], home[i]
        if not any(kinds[k, i] and used[k, h, a] > cap[k, h] for k in (0, 1)):
            continue
        ok = free & (role == role[i]) & (u != a) & (home != h)
        for k in (0, 1):  # neither leaf may go over a fair share by the swap
            if kinds[k, i]:
                ok &= used[k, h, u] < cap[k, h]
            ok &= ~kinds[k] | (used[k, home, a] < cap[k, home])
        if not ok.any():
            room = (cnt[role[i]] < bound_r[role[i]]) & (cnt.sum(axis=0) < bound)
            for k in (0, 1):
                room &= ~kinds[k, i] | (used[k, h] < cap[k, h])
            if room.any():
                b = int(np.flatnonzero(room)[0])
                u[i] = b
                cnt[role[i], a] -= 1
                cnt[role[i], b] += 1
                used[:, h, a] -= kinds[:, i]
                used[:, h, b] += kinds[:, i]
            continue
        j = int(np.flatnonzero(ok)[np.argmin(order[ok])])
        b = u[j]
        u[i], u[j] = b, a
        for k in (0, 1):
            used[k, h, a] -= kinds[k, i]
            used[k, h, b] += kinds[k, i]
            used[k, home[j], b] -= kinds[k, j]
            used[k, home[j], a] += kinds[k, j]
    return u


def cover(u: np.ndarray, role: np.ndarray, edge: np.ndarray, is_ca: np.ndarray, movable: np.ndarray, leaves: int,
          indices: int, extra: np.ndarray) -> np.ndarray:
    """u with swaps made as described; `extra` [leaf, index, role]: what else each leaf sends up
    each index (switch LIDs routed apart)."""
    u = _swaps(u, role, edge, is_ca, movable, leaves, indices, extra)
    if len(u) * indices <= PROGRAM_CELLS and _short(u, edge, is_ca, leaves, indices):
        got = _solved(u, role, edge, is_ca, movable, leaves, indices, extra)
        if got is not None:
            return got
    return u


#: the programs solved in this process: key (the inputs' digest) → the answer (None: none in time)
_SOLVED: dict[bytes, np.ndarray | None] = {}
SOLVED_KEPT = 32


def _solved(u, role, edge, is_ca, movable, leaves, indices, extra) -> np.ndarray | None:
    """`_assign`'s answer, remembered by its inputs: a process that routes the same zone again
    (the watcher, a plan routing the model then its hint, the tests' commands) does not wait for
    the same program twice — a three-zone ring's programs are infeasible and run into the time
    limit every time, 3 × PROGRAM_SECONDS a route — and, the limit being wall-clock, answers the
    same however busy the machine is in between."""
    import hashlib

    h = hashlib.blake2b(repr((leaves, indices, PROGRAM_SECONDS)).encode(), digest_size=20)
    for a in (u, role, edge, is_ca, movable, extra):
        a = np.ascontiguousarray(a)
        h.update(repr((a.dtype.str, a.shape)).encode())
        h.update(a.tobytes())
    key = h.digest()
    if key not in _SOLVED:
        if len(_SOLVED) >= SOLVED_KEPT:
            del _SOLVED[next(iter(_SOLVED))]
        _SOLVED[key] = _assign(u, role, edge, is_ca, movable, leaves, indices, extra, PROGRAM_SECONDS, False)
    got = _SOLVED[key]
    return None if got is None else got.copy()


def _short(u, edge, is_ca, leaves, indices) -> bool:
    """Some leaf over its bound over CA destinations (the CA-to-CA paths on its up-ports: what
    the swaps, judging per role and in total, do not always reach)."""
    own_ca = np.zeros((leaves, indices), np.int64)
    np.add.at(own_ca, (edge[is_ca], u[is_ca]), 1)
    load_ca = own_ca.sum(axis=0)[None] - own_ca
    return bool((load_ca > -(-load_ca.sum(axis=1, keepdims=True) // indices)).any())


def _swaps(u, role, edge, is_ca, movable, leaves, indices, extra) -> np.ndarray:
    """The swaps of the module doc, after `_level`."""
    u = _level(u.copy(), role, edge, is_ca, movable, leaves, indices)
    roles = max(int(role.max(initial=0)) + 1, extra.shape[2])
    own = np.zeros((leaves, indices, roles), np.int64)
    np.add.at(own, (edge, u, role), 1)
    total = own.sum(axis=0)  # [index, role]: global, invariant under the swaps
    ex = np.zeros_like(own)
    ex[:, :, :extra.shape[2]] = extra
    load = total[None] - own + ex
    sent = load.sum(axis=1)  # [leaf, role]
    bound_r = -(-sent // indices)
    bound = -(-sent.sum(axis=1) // indices)
    mine = np.zeros((2, leaves, indices), np.int64)  # a leaf's own destinations per index: all, CAs
    np.add.at(mine[0], (edge, u), 1)
    np.add.at(mine[1], (edge[is_ca], u[is_ca]), 1)
    cap = -(-mine.sum(axis=2) // indices)
    ca_roles = set(np.unique(role[is_ca]).tolist())
    ca_roles = set(np.unique(role[is_ca]).tolist())
    for _ in range(3):  # rounds over what is over; another only while one made progress
        tot = load.sum(axis=2)
        # CA roles only: a switch LID carries no CA-to-CA paths, and the crowding of switch LIDs
        # routed apart (`extra`) is no swap's to undo
        over = [(int(e), int(h), int(r)) for e, h, r in np.argwhere(load > bound_r[:, None, :]) if r in ca_roles]
        over += [(int(e), int(h), int(r)) for e, h in np.argwhere(tot > bound[:, None]) for r in np.flatnonzero(load[e, h])
                 if r in ca_roles]
        moved = False
        for e, hi, r in over:
            tot = load.sum(axis=2)
            if load[e, hi, r] <= bound_r[e, r] and tot[e, hi] <= bound[e]:
                continue
            pair = _partner(u, role, edge, is_ca, movable, e, hi, r, load, tot, bound_r, bound, mine, cap)
            if pair is None and (r not in ca_roles or load[e, hi, r] <= bound_r[e, r]):
                continue  # trading roles keeps totals; a switch LID's crowding is the extras' (routed apart)
            swaps = [pair] if pair is not None else _roles_traded(u, role, edge, is_ca, movable, e, hi, r, load, bound_r)
            if swaps:
                moved = True
                _swap(u, role, edge, is_ca, swaps, own, mine)
                for leaf in {int(edge[k]) for pair in swaps for k in pair}:
                    load[leaf] = total - own[leaf] + ex[leaf]
        if not moved:
            break
    return u


def _swap(u, role, edge, is_ca, swaps, own, mine) -> None:
    """Exchange the indices of each pair, keeping the counts `own` and `mine` right."""
    for i, j in swaps:
        a, b = int(u[i]), int(u[j])
        u[i], u[j] = b, a
        for k, x, y in ((i, a, b), (j, b, a)):  # destination k moves from index x to y
            leaf = int(edge[k])
            own[leaf, x, role[k]] -= 1
            own[leaf, y, role[k]] += 1
            for kind in (0, 1):
                if kind == 0 or is_ca[k]:
                    mine[kind, leaf, x] -= 1
                    mine[kind, leaf, y] += 1


def _partner(u, role, edge, is_ca, movable, e, hi, r, load, tot, bound_r, bound, mine, cap) -> tuple[int, int] | None:
    """(i, j): i of leaf e at an index `lo` with room for one more of role r at e, j of role r on
    another leaf at `hi` that has room for it there; both leaves' links stay within their share."""
    room = np.flatnonzero((load[e, :, r] < bound_r[e, r]) & (tot[e] < bound[e]))
    same = movable & (role == r)
    for lo in room[np.argsort(tot[e, room], kind="stable")]:
        ours = np.flatnonzero(same & (edge == e) & (u == lo))
        ours = [i for i in ours if mine[0, e, hi] < cap[0, e] and (not is_ca[i] or mine[1, e, hi] < cap[1, e])]
        if not ours:
            continue
        theirs = np.flatnonzero(same & (edge != e) & (u == hi))
        if not len(theirs):
            continue
        f = edge[theirs]
        ok = (load[f, hi, r] < bound_r[f, r]) & (tot[f, hi] < bound[f]) & (mine[0, f, lo] < cap[0, f])
        ok &= ~is_ca[theirs] | (mine[1, f, lo] < cap[1, f])
        if ok.any():
            return int(ours[0]), int(theirs[np.flatnonzero(ok)[0]])
    return None


def _roles_traded(u, role, edge, is_ca, movable, e, hi, r, load, bound_r) -> list[tuple[int, int]]:
    """When no single swap fits (the leaf's links are full): two swaps inside two leaves that trade
    roles between `hi` and another index x.  On leaf e a destination of role r2 at hi and one of
    role r at x swap indices (e holds one more of r at hi: its load of r there falls); on another
    leaf f the reverse, so the global counts per role and index stay, and every leaf keeps as many
    destinations (and CAs) per index as it had."""
    here = np.flatnonzero(movable & (edge == e))  # e's own: a few, where most searches end
    c_all = None
    for x in np.flatnonzero(load[e, :, r] < bound_r[e, r]):
        for r2 in np.flatnonzero(load[e, hi] < bound_r[e]):
            if r2 == r:
                continue
            for ca in (True, False):
                mine = here[is_ca[here] == ca]
                a = mine[(role[mine] == r2) & (u[mine] == hi)]
                b = mine[(role[mine] == r) & (u[mine] == x)]
                if not len(a) or not len(b):
                    continue
                if c_all is None:
                    c_all = np.flatnonzero(movable & (edge != e) & (role == r) & (u == hi))
                c = c_all[is_ca[c_all] == ca]
                d_leaves = np.flatnonzero(movable & (is_ca == ca) & (edge != e) & (role == r2) & (u == x))
                f = np.intersect1d(edge[c], edge[d_leaves])
                f = f[(load[f, hi, r] < bound_r[f, r]) & (load[f, x, r2] < bound_r[f, r2])]
                if not len(f):
                    continue
                cc = int(c[edge[c] == f[0]][0])
                dd = int(d_leaves[edge[d_leaves] == f[0]][0])
                return [(int(a[0]), int(b[0])), (cc, dd)]
    return []


def _level(u, role, edge, is_ca, movable, leaves, indices) -> np.ndarray:
    """Per role, indices that differ by at most one destination (`even_out`'s ceil(n / indices)
    allows three crowded indices where one would do, and a leaf can hold only so many crowded
    indices): one at a time from a fullest index to an emptiest, from a leaf whose links into it
    have room there."""
    mine = np.zeros((2, leaves, indices), np.int64)
    np.add.at(mine[0], (edge, u), 1)
    np.add.at(mine[1], (edge[is_ca], u[is_ca]), 1)
    cap = -(-mine.sum(axis=2) // indices)
    tot = np.bincount(u, minlength=indices)
    tot_bound = -(-len(u) // indices)
    for r in np.unique(role):
        for _ in range(len(u)):
            n = np.bincount(u[role == r], minlength=indices)
            hi, lo = int(n.argmax()), int(n.argmin())
            if n[hi] - n[lo] < 2:
                break
            cand = np.flatnonzero(movable & (role == r) & (u == hi))
            cand = cand[(mine[0, edge[cand], lo] < cap[0, edge[cand]])
                        & (~is_ca[cand] | (mine[1, edge[cand], lo] < cap[1, edge[cand]]))]
            if not len(cand) or tot[lo] >= tot_bound:
                break
            i = int(cand[0])
            u[i] = lo
            tot[hi] -= 1
            tot[lo] += 1
            for kind in (0, 1):
                if kind == 0 or is_ca[i]:
                    mine[kind, edge[i], hi] -= 1
                    mine[kind, edge[i], lo] += 1
    return u


def _assign(u, role, edge, is_ca, movable, leaves, indices, extra, seconds: float, per_role: bool) -> np.ndarray | None:
    """The same constraints as an integer program (scipy's HiGHS): x[d, i] = destination d on
    index i; N[r, i] its role's count there; each leaf's up-port loads per role, over CAs and in
    total within their bounds, its own destinations within their share of the links into it, the
    global counts within ceil(n / indices); keeping as many current choices as it can.  None when
    infeasible or not solved in `seconds`."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    n, m = len(u), indices
    roles = extra.shape[2]
    ca_roles = np.unique(role[is_ca])
    nx_, nn = n * m, roles * m
    rows, cols, vals, lo, hi = [], [], [], [], []

    def row(c, v, low, high):
        k = len(lo)
        rows.extend([k] * len(c))
        cols.extend(c)
        vals.extend(v)
        lo.append(low)
        hi.append(high)

    x = lambda d, i: d * m + i  # noqa: E731
    N = lambda r, i: nx_ + r * m + i  # noqa: E731
    for d in range(n):
        row([x(d, i) for i in range(m)], [1] * m, 1, 1)
    for r in range(roles):
        mine = np.flatnonzero(role == r)
        n_r = len(mine)
        for i in range(m):
            row([N(r, i)] + [x(d, i) for d in mine], [1] + [-1] * n_r, 0, 0)
            row([N(r, i)], [1], 0, -(-n_r // m))
    for i in range(m):
        row([N(r, i) for r in range(roles)], [1] * roles, 0, -(-n // m))
    for a in range(leaves):
        here = edge == a
        ex = extra[a]  # [index, role]
        sent_r = np.bincount(role[~here], minlength=roles) + ex.sum(axis=0)
        sent_ca = int((is_ca & ~here).sum())
        own_all, own_ca = int(here.sum()), int((here & is_ca).sum())
        for i in range(m):
            for r in np.flatnonzero(sent_r) if per_role else ():
                d = np.flatnonzero(here & (role == r))
                row([N(r, i)] + [x(k, i) for k in d], [1] + [-1] * len(d), -np.inf, -(-sent_r[r] // m) - ex[i, r])
            d = np.flatnonzero(here)
            dc = np.flatnonzero(here & is_ca)
            row([N(r, i) for r in ca_roles] + [x(k, i) for k in dc], [1] * len(ca_roles) + [-1] * len(dc), -np.inf,
                -(-sent_ca // m))
            row([x(k, i) for k in d], [1] * len(d), 0, -(-own_all // m))
            row([x(k, i) for k in dc], [1] * len(dc), 0, -(-own_ca // m))
    size = nx_ + nn
    a = coo_matrix((vals, (rows, cols)), shape=(len(lo), size)).tocsr()
    cost = np.zeros(size)
    cost[np.arange(n) * m + u] = -1  # keep the current choice where it can
    low, high = np.zeros(size), np.ones(size)
    high[nx_:] = n
    fixed = np.flatnonzero(~movable)
    high[(fixed * m)[:, None] + np.arange(m)[None, :]] = 0
    high[fixed * m + u[fixed]] = 1
    low[fixed * m + u[fixed]] = 1
    res = milp(cost, constraints=LinearConstraint(a, lo, hi), integrality=np.r_[np.ones(nx_), np.ones(nn)],
               bounds=Bounds(low, high), options={"time_limit": seconds})
    if res.status != 0 or res.x is None:
        return None
    return res.x[:nx_].reshape(n, m).argmax(axis=1)



def trades(index, role, is_ca, movable, key, sends, near, indices, klass, same, extra,
           partner: np.ndarray | None = None) -> list[tuple[int, int, int]]:
    """Per-role balance of each switch's up-ports where one index per destination cannot give it.
    Switch k sends up index i the destinations `sends[k]` with that index; it may send two of
    them that share a `key` (a leaf e: its links in; a pod: the core links into it), of different
    roles, both CAs or both not, up each other's index.  Its load moves one unit of role r from
    `hi` to `lo` and one of the other role back; every other switch, the links into the key's
    subtree (k's paths to both carry equal weight, now on each other's link) and the counts over
    CAs stay as they were.  Only destinations `near[k]` trade (for a leaf: its own pod's, so the
    core links into other pods are untouched), and only between indices of one `klass` (the
    parallel link the switch above takes down is chosen by the destination's own index: a trade
    across classes would land on a link other than the partner's).  Kept (hinted) choices never
    move: with the tables in force as the hint, their trades come back with them.  First, where it can, one
    destination alone moves to an index of the same `same` (a parallel link to the same switch
    above: the links further down do not change at all).  Returns (switch, destination, new
    index).

    Every trade makes two destinations enter their subtree over one more link (the index they
    are sent up): of the pairs that balance the switch, the one adding fewest such (destination,
    link) pairs — a destination another switch traded the same way already costs none — then
    onto the links carrying the fewest destinations.  Taking the first pair found instead put
    up to 8 destinations on one spine→leaf link of a three-layer tree (OpenSM ftree: 3).

    With `partner` (a three-layer tree's leaves), destinations outside `near[k]` trade too, each
    always with the same partner (recorded there, -1: none yet), and the spines and cores above
    route them (`far.route_far_trades`); the switches over at one index are then served one
    after the other, so that leaves of several pods over at one index share one pair — one
    destination more on each link into the pair's leaf, where a pod alone piles its trades onto
    the few partners it has.  A near pair is taken first at equal cost: it adds nothing above
    the leaves."""
    roles = extra.shape[2]
    switches = len(sends)
    load = np.zeros((switches, indices, roles), np.int64)
    for k in range(switches):
        load[k] = np.bincount(index[sends[k]] * roles + role[sends[k]], minlength=indices * roles).reshape(indices, roles)
    load += extra
    bound_r = -(-load.sum(axis=1) // indices)
    bound = -(-load.sum(axis=(1, 2)) // indices)
    out, taken = [], {k: set() for k in range(switches)}  # per switch: destinations it moved already
    enters = Entering(index, key, indices)
    todo = np.argwhere(load > bound_r[:, None, :])  # [switch, index, role] over
    if partner is not None:  # an index at a time: the switches over at it share pairs
        todo = todo[np.lexsort((todo[:, 0], todo[:, 1]))]
    for k, hi, r in todo:
        k, hi, r = int(k), int(hi), int(r)
        pool = sends[k] & movable & (near[k] if partner is None else True)
        while load[k, hi, r] > bound_r[k, r]:
            room = np.flatnonzero((same == same[hi]) & (load[k, :, r] < bound_r[k, r]) & (load[k].sum(axis=1) < bound[k]))
            alone = [int(i) for i in np.flatnonzero(sends[k] & movable & (role == r) & (index == hi)) if int(i) not in taken[k]]
            if len(room) and alone:
                out.append((k, alone[0], int(room[0])))
                taken[k].add(alone[0])
                load[k, hi, r] -= 1
                load[k, room[0], r] += 1
                continue
            pair = _trade(index, role, is_ca, key, pool, hi, r, load[k], bound_r[k], taken[k], klass, enters,
                          None if partner is None else (~near[k], partner))
            if pair is None:
                break
            i, j = pair  # i: role r at hi -> lo; j: role r2 at lo -> hi
            if partner is not None and not near[k, i]:
                partner[i], partner[j] = j, i
            lo, r2 = int(index[j]), int(role[j])
            enters.add(i, lo)
            enters.add(j, hi)
            out += [(k, i, lo), (k, j, hi)]
            taken[k] |= {i, j}
            load[k, hi, r] -= 1
            load[k, lo, r] += 1
            load[k, lo, r2] -= 1
            load[k, hi, r2] += 1
    return out


def crowding(index: np.ndarray, key: np.ndarray, indices: int, moves: list[tuple[int, int, int]]) -> int:
    """The most destinations entering their subtree over one link once `moves` (`trades`) are
    made: what a spine's link into a leaf carries."""
    enters = Entering(index, key, indices)
    for _, d, link in moves:
        enters.add(d, link)
    return int(enters.count.max()) if enters.count.size else 0


class Entering:
    """Over which links (indices) each destination enters its subtree (`key`): its own index, and
    every index a trade sends it up (`via`, [destination, index]); and how many destinations enter
    over each link (`count`, [key, index])."""

    def __init__(self, index: np.ndarray, key: np.ndarray, indices: int) -> None:
        self.key = key
        self.via = np.zeros((len(index), indices), bool)
        self.via[np.arange(len(index)), index] = True
        self.count = np.zeros((int(key.max()) + 1 if len(key) else 1, indices), np.int64)
        np.add.at(self.count, (key, index), 1)

    def add(self, d: int, link: int) -> None:
        if not self.via[d, link]:
            self.via[d, link] = True
            self.count[self.key[d], link] += 1


def _trade(index, role, is_ca, key, pool, hi, r, load, bound_r, taken, klass, enters: Entering,
           far: tuple[np.ndarray, np.ndarray] | None) -> tuple[int, int] | None:
    """Two destinations of `pool` sharing a key for `trades`: i of role r at hi, j of another role
    at an index lo where the switch has room for r, with room for j's role at hi; of those, the
    pair adding the fewest (destination, link) entries, then onto the least crowded links, then
    a near pair before a far one (the first such in the order lo, role, i, j).  `far` (which
    destinations are far, their partners): a far destination pairs only with its partner, or,
    with none yet, with another such."""
    free = pool.copy()
    free[list(taken)] = False
    first = np.flatnonzero(free & (role == r) & (index == hi))
    best, cost = None, None
    for lo in np.flatnonzero((load[:, r] < bound_r[r]) & (klass == klass[hi])):
        lo = int(lo)
        new_i = ~enters.via[first, lo]
        on_i = enters.count[key[first], lo] + new_i
        for r2 in np.flatnonzero((load[hi] < bound_r) & (load[lo] > 0)):
            if r2 == r:
                continue
            second = np.flatnonzero(free & (role == r2) & (index == lo))
            if not len(first) or not len(second):
                continue
            match = (key[first][:, None] == key[second][None, :]) & (is_ca[first][:, None] == is_ca[second][None, :])
            away = np.zeros(match.shape, bool)
            if far is not None:
                away = np.broadcast_to(far[0][first][:, None], match.shape)  # a pair shares its leaf: i's is j's
                mate = far[1]
                match &= ~away | (mate[first][:, None] == second[None, :]) | (
                    (mate[first][:, None] < 0) & (mate[second][None, :] < 0))
            if not match.any():
                continue
            new_j = ~enters.via[second, hi]
            adds = new_i[:, None].astype(np.int64) + new_j[None, :]
            crowd = np.maximum(on_i[:, None], (enters.count[key[second], hi] + new_j)[None, :])
            score = np.where(match, (adds * (1 << 30) + crowd) * 2 + away, np.iinfo(np.int64).max)
            a, b = np.unravel_index(int(np.argmin(score)), score.shape)
            c = (int(adds[a, b]), int(crowd[a, b]), bool(away[a, b]))
            if cost is None or c < cost:
                best, cost = (int(first[a]), int(second[b])), c
    return best
