"""The worst links into leaves cooled by sharing a destination's sources over other links into its leaf.

The engine's design gives every destination one up-port index (`cover`), so all of a
destination's traffic enters its leaf over one link.  On a leaf with fewer channel adapters
than up-links that link carries every path to its CA while others into the leaf carry none:
on partly-populated (300 CAs on 40 leaves of 20 up-links, filled leaf by leaf) a leaf with
one CA receives all 299 paths on one link, where OpenSM's updn and dfsssp, which choose per
source, have 298 at most.

`share_links` lowers a two-layer zone's worst spine→leaf links, round after round: a source
leaf that sends a destination d over one swaps the up-ports of d and of another channel
adapter d2 on another leaf (of the same role, or of another where neither port goes over the
source's most of that role).  The swap keeps every leaf's up-port loads — in total and over
CAs, in destinations and in paths; per role, its maximum — and moves the source's paths to d
onto another link into d's leaf, and its paths to d2 likewise.  Two objectives, in turn:
1. the most excess of a link over its own paths bound (`checks.subtrees`; on a degraded zone
   some links are over it: degraded-zone, 842 paths on a link bound to 763, now 783), where
   a link within its bound stays within it;
2. the most paths on any link (partly-populated: 299, now 280, a full leaf's share), where a
   link stays within its bound.
A round takes one swap for every link at the top value, each loading links only below it; a
link a destination newly enters stays within the zone's destinations-per-link bound (in
total: per role, a link may go over its figure, which `loom check` reports, not judges).  When a
link at the top has no such swap the round is undone (no entry moves without lowering the
top) and the objective is done.  Run after a fresh route only (not in a repair: minimal
churn), on zones with one link per spine and leaf and no inter-zone links (another zone's
traffic would weigh a border leaf's links more than its CAs).  Everything it reads is in the
tables and the cabling, so routing its result again allows no further swap (a plan's
fixpoint).
"""

from __future__ import annotations

import numpy as np

from .loads import into_paths_bound
from .subnet import TO_SWITCH
from .updown import UpDown


def share_links(sn, z, lft: np.ndarray, roles: np.ndarray) -> int:
    """Swaps made in `lft` (leaf rows of zone `z`) to lower its hottest links into leaves."""
    ud = UpDown.of(sn)
    leaves, spines = z.leaves, z.spines
    if z.three or z.links != 1 or not len(leaves) or ud.cross_port[leaves].any() \
            or (ud.link_count[np.ix_(spines, leaves)] > 1).any():
        return 0
    state = _Links(sn, z, lft, roles)
    swaps, before = 0, -1
    # both objectives again until neither swaps: lowering the most paths can open swaps for the
    # excess (and the converse), and a result that allowed another swap would not be the
    # fixpoint a plan needs.  It ends: neither objective raises the other's top
    while swaps != before:
        before = swaps
        for over in (True, False):  # first links over their own bound (a degraded leaf's), then the most
            while True:
                value = state.paths - state.paths_bound[None, :] if over else state.paths
                top = int(value.max(initial=0))
                if top <= 0:
                    break
                made = _round(state, np.argwhere(value == top), top, over)
                if made is None:
                    break
                swaps += made
    return swaps


def _round(state: "_Links", hot: np.ndarray, top: int, over: bool) -> int | None:
    """Every link at the top value cooled by a swap each: how many, or None (the top stays: every
    swap of the round undone, no entry moves for nothing)."""
    made, most = [], state.hottest
    for j, e in hot:
        now = state.paths[j, e] - (state.paths_bound[e] if over else 0)
        if now < top:
            continue  # cooled by a swap made for another link at the top
        swap = state.cool(int(j), int(e), lambda spine, leaf: state.limit(spine, leaf, top, over, most))
        if swap is None:
            for k, i, c in reversed(made):
                state.swap(k, i, c)
            return None
        made.append(swap)
    return len(made)


def _sends_down(sn, spines: np.ndarray, entries: np.ndarray, leaves) -> np.ndarray:
    """Where each spine's table `entries` (one per spine row) lead straight down to `leaves`."""
    out = sn.out_port(entries)
    at = spines.reshape(-1, *([1] * (out.ndim - 1)))
    return (sn.peer_kind[at, out] == TO_SWITCH) & (sn.peer_dev[at, out] == leaves)


class _Links:
    """Paths and destinations on each spine→leaf link of the zone, kept as swaps are made."""

    def __init__(self, sn, z, lft: np.ndarray, roles: np.ndarray) -> None:
        ud = UpDown.of(sn)
        self.lft, self.leaves = lft, z.leaves
        n_leaf, n_spine = len(z.leaves), len(z.spines)
        edge_of = np.full(sn.n, -1, np.int64)
        edge_of[z.leaves] = np.arange(n_leaf)
        spine_of = np.full(sn.n, -1, np.int64)
        spine_of[z.spines] = np.arange(n_spine)
        live = sn.ca_lids[ud.live_lids[sn.ca_lids]]  # as `checks.subtrees`: a cut-off CA sends nothing
        self.d = live[edge_of[sn.ca_switch[live]] >= 0]  # the zone's CA destinations
        self.home = edge_of[sn.ca_switch[self.d]]
        self.role = roles[self.d]
        self.w = np.bincount(self.home, minlength=n_leaf)  # a source leaf's paths to each destination
        up0 = z.down + 1
        # spine_at[k, p]: the zone spine leaf k's port p goes up to (-1: not an up-link to one);
        # every "which spine does this entry go up to" below reads it
        up = sn.peer_kind[z.leaves] == TO_SWITCH
        self.spine_at = np.where(up, spine_of[np.where(up, sn.peer_dev[z.leaves], 0)], -1)
        self.spine_at[:, :up0] = -1
        self.spine_at[:, up0 + z.U:] = -1
        self.up_port = np.full((n_leaf, n_spine), -1, np.int64)  # [leaf, spine] its port to that spine
        k, p = np.nonzero(self.spine_at >= 0)
        self.up_port[k, self.spine_at[k, p]] = p
        rows = np.arange(n_leaf)[:, None]
        # via[k, i]: the spine source leaf k sends destination i up to (-1: none of the zone's, or
        # k has no CAs, or i is k's own, or the spine does not send i straight down to its leaf)
        self.via = self.spine_at[rows, sn.out_port(lft[np.ix_(z.leaves, self.d)])]
        self.via[(self.w == 0)[:, None] | (self.home[None, :] == rows)] = -1
        # deliver[j, i]: spine j sends destination i straight down to its leaf
        self.deliver = _sends_down(sn, z.spines, lft[np.ix_(z.spines, self.d)], z.leaves[self.home][None, :])
        self.via[(self.via >= 0) & ~self.deliver[np.maximum(self.via, 0), np.arange(len(self.d))[None, :]]] = -1
        self.count = np.zeros((n_spine, len(self.d)), np.int64)  # [spine, destination] sources using it
        k, i = np.nonzero(self.via >= 0)
        np.add.at(self.count, (self.via[k, i], i), 1)
        self.paths = np.zeros((n_spine, n_leaf), np.int64)
        np.add.at(self.paths, (self.via[k, i], self.home[i]), self.w[k])
        self.dests = np.zeros((n_spine, n_leaf), np.int64)
        j, i = np.nonzero(self.count)
        np.add.at(self.dests, (j, self.home[i]), 1)
        # a leaf's own LID enters over the links of the spines that sources with CAs send it to
        # and that send it down to the leaf, as `checks.subtrees` counts it
        links = self.up_port.T >= 0  # [spine, leaf] cabled
        senders = np.flatnonzero(self.w > 0)
        for e, row in enumerate(z.leaves):
            lid = np.flatnonzero(sn.lid_switch == row)
            if not len(lid):
                continue
            ks = senders[senders != e]
            js = np.unique(self.spine_at[ks, sn.out_port(lft[z.leaves[ks], lid[0]])])
            js = js[js >= 0]
            self.dests[js, e] += _sends_down(sn, z.spines[js], lft[z.spines[js], lid[0]], row)
        # [leaf, spine, role] destinations each source sends up to each spine, every LID counted,
        # and each source's most per role: a swap of two roles never raises it
        self.role_load = np.zeros((n_leaf, n_spine, int(roles.max(initial=0)) + 1), np.int64)
        lids = np.flatnonzero(ud.live_lids)
        for k in senders:
            j = self.spine_at[k, sn.out_port(lft[z.leaves[k], lids])]
            np.add.at(self.role_load[k], (j[j >= 0], roles[lids[j >= 0]]), 1)
        self.role_cap = self.role_load.max(axis=1)  # [leaf, role]
        n_links = np.maximum(links.sum(axis=0), 1)
        cas, total = self.w, int(self.w.sum())
        self.paths_bound = into_paths_bound(cas, n_links, total)  # [leaf], as `checks.subtrees` on an intact leaf
        # destinations per link: the zone's worst leaf bound (a leaf's CAs and its own LID over
        # its links), the figure `loom check` reports for the level.  Not each leaf's own: a
        # leaf's LID, sent up by each source on its own choice, enters over every link, so a
        # one-CA leaf (bound 1) has a link with 2 whatever the routing.  From the cabling alone,
        # so that routing the result again (a plan's fixpoint) allows the same swaps
        self.dest_bound = int((-(-(cas + 1) // n_links)).max(initial=0))

    @property
    def hottest(self) -> int:
        return int(self.paths.max(initial=0))

    def limit(self, j, e, top: int, over: bool, most: int) -> np.ndarray:
        """The most paths link(s) (spine j → leaf e) may carry after a swap.  Lowering the most
        excess over a link's own bound (`over`): a link within its bound stays within it, one
        over it stays below the top excess, neither above the zone's most paths (`most`).
        Lowering the most paths: below the top, within the bound."""
        bound = self.paths_bound[e]
        if over:
            return np.where(self.paths[j, e] > bound, np.minimum(bound + top - 1, most), bound)
        return np.minimum(bound, top - 1)

    def cool(self, ja: int, ea: int, allowed) -> tuple[int, int, int] | None:
        """One swap that takes a source off link (spine ja → leaf ea) and loads no link (j, e)
        beyond `allowed(j, e)` paths, made: (source, destination, the other); None where there
        is none."""
        best = None
        eb, ja_load = self.home, self.paths[ja, self.home]  # each other destination's leaf; link ja into it
        room_b = ja_load < allowed(ja, eb)  # before the source's weight
        for i in np.flatnonzero(self.home == ea):
            ks = np.flatnonzero(self.via[:, i] == ja)  # the sources sending i over the hot link
            if not len(ks):
                continue
            w = self.w[ks][:, None]
            jb = self.via[ks]  # [source, destination] the spine each sends each other destination to
            jbs = np.maximum(jb, 0)
            r = self.role[i]
            ok = (jb >= 0) & (jb != ja) & (eb != ea)[None, :] & room_b[None, :] & self.deliver[jbs, i] & self.deliver[ja][None, :]
            # another role: each of the two takes the other's spine, within k's most per role
            ok &= (self.role == r)[None, :] | ((self.role_load[ks[:, None], jbs, r] < self.role_cap[ks, r][:, None])
                                                & (self.role_load[ks, ja][:, self.role] < self.role_cap[ks][:, self.role]))
            load_a = self.paths[jbs, ea] + w  # i's paths on the link from jb into ea
            load_b = ja_load[None, :] + w  # the other's on the link from ja into its leaf
            ok &= (load_a <= allowed(jbs, ea)) & (load_b <= allowed(ja, eb)[None, :])
            new_a = self.count[jbs, i] == 0
            new_b = np.broadcast_to(self.count[ja] == 0, ok.shape)
            ok &= ~new_a | (self.dests[jbs, ea] < self.dest_bound)
            ok &= ~new_b | (self.dests[ja, eb] < self.dest_bound)[None, :]
            if not ok.any():
                continue
            score = np.where(ok, np.maximum(load_a, load_b) * 4 + new_a + new_b, np.iinfo(np.int64).max)
            a, c = np.unravel_index(int(np.argmin(score)), score.shape)  # the first (source, destination) of the least
            key = (int(score[a, c]), int(ks[a]), int(i), int(c))
            if best is None or key < best[0]:
                best = (key, int(ks[a]), int(i), int(c))
        if best is None:
            return None
        _, k, i, c = best
        self.swap(k, i, c)
        return k, i, c

    def swap(self, k: int, i: int, c: int) -> None:
        """Source leaf k sends destination i up the port it sent c, and c up i's (made twice: undone)."""
        ja, jb = int(self.via[k, i]), int(self.via[k, c])
        row = self.leaves[k]
        self.lft[row, self.d[i]], self.lft[row, self.d[c]] = self.up_port[k, jb], self.up_port[k, ja]
        w = int(self.w[k])
        for x, old, new in ((i, ja, jb), (c, jb, ja)):
            e = self.home[x]
            self.role_load[k, old, self.role[x]] -= 1
            self.role_load[k, new, self.role[x]] += 1
            self.via[k, x] = new
            self.paths[old, e] -= w
            self.paths[new, e] += w
            self.count[old, x] -= 1
            self.dests[old, e] -= self.count[old, x] == 0
            self.dests[new, e] += self.count[new, x] == 0
            self.count[new, x] += 1
