"""Where a zone has links or switches missing: the `fattree` engine's design choice made around
them before the per-switch repair (`asbuilt.fit_to_fabric`) evens each switch out.

Each leaf sends a destination up one index of its up-ports, and the spine at that index carries
it down the one link into the destination's leaf; so an index choice decides two loads at once,
the leaves' up-ports and the links into the destination's leaf.  Three passes keep both even
when the floor differs from the design:
- `avoid_missing`: a destination whose spine no longer reaches its leaf takes another index for
  every leaf (the link into its leaf with the fewest of the leaf's CAs, then the index its role
  and all destinations use least), and where a leaf's CAs do not divide evenly over its links
  some are marked to be spread;
- `spread_crowded`: each leaf sends a marked destination up a different spine, so its paths
  spread over the links into its leaf;
- `detour`: a leaf that lost an up-link sends what went there to another spine, piling such
  detours onto a few links into each leaf (at most `PILE` beyond the least).
"""

from __future__ import annotations

import numpy as np

from .base import NO_ROUTE
from .subnet import Subnet
from .zone import Zone

#: detours a link into a leaf takes beyond the least-detoured one before the next link takes them
#: (`detour`).  On 25 degraded variants of the reference and bench fabrics, links over their
#: paths bound / summed max destinations per spine→leaf port: 3 → 801 / 311, 4 → 748 / 310,
#: 5 → 728 / 315, 8 → 732 / 330 (the engine before: 1,192 / 340)
PILE = 4


def spine_reach(z: Zone, cabled: np.ndarray) -> np.ndarray:
    """[leaf edge, spine position]: the spine still has a link (one of its parallel links) to the
    leaf, from `cabled` [leaf edge, up-port index]."""
    return np.stack([cabled[:, s::z.S].any(axis=1) for s in range(z.S)], axis=1)


def avoid_missing(z: Zone, cabled: np.ndarray, att_edge: np.ndarray, u: np.ndarray, role: np.ndarray,
                  is_ca: np.ndarray, movable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Move u(d) to an index whose spine position still has a link down to d's leaf.  Every
    leaf sends d up that index, so it decides two loads: the spine's link into d's leaf (a
    CA destination goes where the leaf's CAs are fewest: their paths are judged against
    ceil(CAs / links) of them per link) and every other leaf's up-port (the index its role,
    then all destinations, use least; then the next after u(d)).  Before, all went to the
    next index: a spine that is down put its destinations on one spine, two per link into
    every leaf and on one up-port of every leaf, which the per-switch repair could only even
    out by splitting them."""
    reach = spine_reach(z, cabled)
    u = u.copy()
    moving = ~reach[att_edge, u % z.S]
    load = np.bincount(u[~moving], minlength=z.U)
    load_r = np.zeros((int(role.max()) + 1, z.U), np.int64)
    np.add.at(load_r, (role[~moving], u[~moving]), 1)
    cas_in = np.zeros(cabled.shape, np.int64)  # [leaf edge, index]: CA destinations sent down that link
    stay = ~moving & is_ca & (att_edge >= 0)
    np.add.at(cas_in, (att_edge[stay], u[stay]), 1)
    # the CAs a link into each leaf carries at best: ceil(the leaf's CAs / its working links)
    per_link = -(-np.bincount(att_edge[is_ca & (att_edge >= 0)], minlength=len(cabled)) // np.maximum(cabled.sum(axis=1), 1))
    for i in np.flatnonzero(moving):
        after = (u[i] + 1 + np.arange(z.U - 1)) % z.U  # every other index, the next first
        e = att_edge[i]
        ok = after[reach[e, after % z.S]]
        if not len(ok):
            continue  # no spine reaches the leaf: fit_to_fabric finds another way, or none
        crowd = np.where(cabled[e, ok], cas_in[e, ok] >= per_link[e], 2) if is_ca[i] else np.zeros(len(ok), np.int64)
        j = int(ok[np.lexsort((np.arange(len(ok)), load[ok], load_r[role[i], ok], crowd))[0]])
        u[i] = j
        load[j] += 1
        load_r[role[i], j] += 1
        if is_ca[i]:
            cas_in[e, j] += 1
    # a leaf with more CAs than working links up has links carrying two of them down (the
    # design's own doubling, or one added here): one stays, the others go to a link that
    # carries none where there is one, else are spread (`spread_crowded`); a destination whose hinted
    # index was kept (the tables in force) stays where it is
    crowded = np.zeros(len(u), bool)
    ca = np.flatnonzero(is_ca & (att_edge >= 0))
    for i in ca[np.lexsort((u[ca], att_edge[ca]))]:
        e, here = att_edge[i], u[i]
        if cas_in[e, here] <= per_link[e] or crowded[i]:
            continue
        same = ca[(att_edge[ca] == e) & (u[ca] == here) & ~crowded[ca]]
        same = same[np.lexsort((same, movable[same]))]  # kept ones first, then in LID order
        for x in same[per_link[e]:]:
            if not movable[x]:
                continue
            free = np.flatnonzero(cabled[e] & (cas_in[e] < per_link[e]))
            if len(free):
                j = int(free[np.argmin(load[free])])
                load[u[x]] -= 1
                load_r[role[x], u[x]] -= 1
                u[x] = j
                load[j] += 1
                load_r[role[x], j] += 1
                cas_in[e, here] -= 1
                cas_in[e, j] += 1
            else:
                crowded[x] = True
    # where a leaf's CAs do not divide evenly over its links, r of them carry one more than the
    # others: one of theirs is spread, which brings the most any link carries from q + 1 CAs'
    # worth to about q + r/links (dfsssp's figure) when r is at most half the links
    n, m = np.bincount(att_edge[ca], minlength=len(cabled)), np.maximum(cabled.sum(axis=1), 1)
    q, r = n // m, n % m
    for e in np.flatnonzero((q >= 1) & (r > 0) & (2 * r <= m)):  # else spreading lowers no link's load
        for link in np.flatnonzero(cabled[e] & (cas_in[e] == per_link[e])):
            on = ca[(att_edge[ca] == e) & (u[ca] == link) & movable[ca] & ~crowded[ca]]
            if len(on):
                crowded[on[-1]] = True
    return u, crowded


def spread_crowded(z: Zone, lft: np.ndarray, cabled: np.ndarray, att_lid: np.ndarray, att_edge: np.ndarray,
                   role: np.ndarray, local_ca: np.ndarray, crowded: np.ndarray) -> None:
    """Spread the `crowded` CA destinations (`avoid_missing`): each leaf sends one up an index
    with room under the leaf's per-role and total bounds, to the spine whose link into the
    destination's leaf carries the fewest CA-to-CA paths so far (then rotated by the leaf and
    the destination's rank), so its paths spread over the links into its leaf and every
    leaf's up-ports stay even.  Traffic from one source leaf still takes one path; only
    different sources take different spines.  With a hint (the tables in force),
    the engine keeps the leaves' choices as they are."""
    reach = spine_reach(z, cabled)
    ranked = crowded[np.lexsort((att_lid[crowded], role[crowded]))]
    moving = np.zeros(len(att_lid), bool)
    moving[crowded] = True
    nr = int(role.max()) + 1
    sources = np.bincount(att_edge[local_ca], minlength=len(z.leaves))  # CAs on each leaf
    ups = lft[z.leaves][:, att_lid].astype(np.int64) - z.down - 1  # [leaf edge, destination]
    whole = (ups >= 0) & (ups < z.U) & (local_ca & ~moving)[None, :]
    paths = np.zeros((z.S, len(z.leaves)), np.int64)  # [spine position, leaf]: CA-to-CA paths into it
    e_, i_ = np.nonzero(whole)
    np.add.at(paths, (ups[e_, i_] % z.S, att_edge[i_]), sources[e_])
    for e, row in enumerate(z.leaves):
        up = ups[e]
        sends = (up >= 0) & (up < z.U)
        sent = sends & ~moving
        load = np.bincount(up[sent], minlength=z.U)
        load_r = np.zeros((nr, z.U), np.int64)
        np.add.at(load_r, (role[sent], up[sent]), 1)
        ports = max(int(cabled[e].sum()), 1)
        cap = -(-int(sends.sum()) // ports)
        cap_r = -(-np.bincount(role[sends], minlength=nr) // ports)
        for rank, i in enumerate(ranked):
            t = att_edge[i]
            if t == e:
                continue
            ok = np.flatnonzero(reach[t, np.arange(z.U) % z.S] & cabled[e])
            if not len(ok):
                continue  # `detour` and the repair find a way, or none
            room_r = load_r[role[i], ok] < cap_r[role[i]]
            room = room_r & (load[ok] < cap)
            j = int(ok[np.lexsort(((ok - e - rank) % z.U, paths[ok % z.S, t], ~room, ~room_r))[0]])
            lft[row, att_lid[i]] = z.down + 1 + j
            load[j] += 1
            load_r[role[i], j] += 1
            paths[j % z.S, t] += sources[e]


def detour(sn: Subnet, z: Zone, lft: np.ndarray, cabled: np.ndarray, att_lid: np.ndarray, att_edge: np.ndarray) -> None:
    """Entries that point at an uncabled port: a leaf takes another up-port (a parallel link to
    the same spine first), a spine another link to the same leaf.  Otherwise the leaf sends the
    destination to another spine that forwards it on, which adds its sources to that spine's
    link into the destination's leaf: among the links that carry at most `PILE` more split
    destinations than the least such link, the spine that carries the fewest whole destinations
    into that leaf (its link has the most room), then the one already carrying the most
    detours (they pile onto a few links rather than a little onto every one: fewer links over
    their bound; the cap keeps a border leaf, which receives hundreds of another zone's
    destinations, from taking a leaf's whole detour on one link), then the leaf's least
    loaded up-port.  The balance repair evens the leaf's up-ports afterwards."""
    where = np.full(sn.max_lid + 1, -1, np.int64)  # LID → index into att_*
    where[att_lid] = np.arange(len(att_lid))
    leaf_lft = lft[z.leaves][:, att_lid].astype(np.int64) - z.down - 1  # [leaf edge, destination] up index
    sent = (leaf_lft >= 0) & (leaf_lft < z.U) & (att_edge[None, :] != np.arange(len(z.leaves))[:, None])
    via = np.zeros((z.S, len(att_lid)), np.int64)  # [spine position, destination]: leaves sending it that way
    e_, i_ = np.nonzero(sent)
    np.add.at(via, (leaf_lft[e_, i_] % z.S, i_), 1)
    carried = np.zeros((z.S, len(z.leaves)), np.int64)  # [spine position, leaf]: destinations sent down
    p_, j_ = np.nonzero(via > 0)
    np.add.at(carried, (p_, att_edge[j_]), 1)
    whole = np.zeros_like(carried)  # ... of which the spine carries from most leaves
    has = via.any(axis=0)
    np.add.at(whole, (via.argmax(axis=0)[has], att_edge[has]), 1)
    for e, row in enumerate(z.leaves):
        load = np.bincount(np.where(sent[e], leaf_lft[e], z.U), minlength=z.U + 1)[:z.U]
        for u_m in np.flatnonzero(~cabled[e]):
            port = z.down + 1 + int(u_m)
            lids = np.flatnonzero(lft[row] == port)
            same = [uu for uu in range(int(u_m) % z.S, z.U, z.S) if cabled[e, uu]]
            others = np.array([uu for uu in range(z.U) if cabled[e, uu] and uu not in same], np.int64)
            for lid in lids:
                i = int(where[lid])
                if i >= 0 and len(others):
                    w, c = whole[others % z.S, att_edge[i]], carried[others % z.S, att_edge[i]]
                    piled = (c - w) - (c - w).min() >= PILE  # detours onto one link, at most PILE more than the least
                    others = others[np.lexsort((load[others], w - c, w, piled))]
                for uu in same + others.tolist():
                    peer = int(sn.peer_dev[row, z.down + 1 + uu])
                    nxt = int(lft[peer, lid])
                    if nxt != NO_ROUTE and sn.peer_kind[peer, nxt] != 0:
                        lft[row, lid] = z.down + 1 + uu
                        load[uu] += 1
                        if i >= 0 and uu not in same and not via[uu % z.S, i]:
                            via[uu % z.S, i] = 1
                            carried[uu % z.S, att_edge[i]] += 1
                        break
    for row in z.spines:
        bad = np.flatnonzero((lft[row] != NO_ROUTE) & (lft[row] != 0)
                             & (sn.peer_kind[row, np.minimum(lft[row], sn.max_port)] == 0))
        for lid in bad:
            port = int(lft[row, lid])
            first = port - 1 - (port - 1) % z.links + 1  # first parallel link to the same leaf
            for alt in range(first, first + z.links):
                if sn.peer_kind[row, alt] != 0:
                    lft[row, lid] = alt
                    break
