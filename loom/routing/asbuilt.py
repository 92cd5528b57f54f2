"""Make an engine's tables right for the fabric as it stands, then even them out per switch.

An engine plans for the design; the floor has links missing, switches down, parts cut off.
`fit_to_fabric` is the last pass of the fat-tree engine:
1. switches and LIDs outside the subnet manager's part of the subnet get no entries (a warning
   names them: OpenSM could never reach them, so read-back could never match);
2. every other entry is checked against the up/down rule (`UpDown.candidates`); an illegal one
   (a dead port, a spine that no longer reaches the leaf, a turn anywhere but the turn leaf)
   takes the least-loaded legal port of its switch, or "no route" if the switch cannot reach
   the destination legally (reachability then reports it);
3. every group of interchangeable ports is brought to its exact as-built bound, in total and
   per role, over the destinations whose traffic reaches it (`loads.carried`), by a min-cost
   flow that moves as few entries as it can (`loads.rebalance_switch`); level by level, leaf
   up-ports first, since their choices decide what reaches the spines (a BiGraph has one
   level: each switch's ports across to the other part).
Because every entry of every switch is legal, any packet goes up, then down (one turn at the
turn leaf for switch-to-switch traffic): no forwarding loop is possible.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
from scipy.sparse import csr_matrix

from loom.forked import Forked

from .base import NO_ROUTE
from .groups import distinct, port_groups
from .kernels import halves, kernels
from .loads import DownLoads, IntoPaths, carried, even_cas, rebalance_switch
from .subnet import TO_SWITCH, Subnet
from .updown import UpDown


def fit_to_fabric(sn: Subnet, lft: np.ndarray, roles: np.ndarray, priority: np.ndarray,
                  soft: np.ndarray | None = None, settled: np.ndarray | None = None,
                  made_for: Subnet | None = None) -> list[str]:
    """Fix `lft` in place as described in the module doc; returns warnings.  `priority[lid]` ≥ 1
    (higher moves last); `soft[switch, lid]` entries move first (priority 0 on that switch).
    `settled[switch]` (a repair): the switch has the ports the tables were made for, so it was
    at its bound and is rebalanced only if its entries, or the destinations reaching it, changed
    — leaving the others alone is both the minimal churn and most of the speed of a repair.
    What reached a switch is counted on `made_for`, the subnet the tables were made for: on the
    failed one, traffic the failure cut would already be missing, and a switch that lost some
    (a spine in another zone, fed over the inter-zone links) would look unchanged while its
    bound fell."""
    ud = UpDown.of(sn)
    warnings = []
    cut = ud.cut_off()
    if cut:
        shown = ", ".join(cut[:8]) + (f" and {len(cut) - 8} more" if len(cut) > 8 else "")
        warnings.append(f"plane {sn.plane}: cut off from the subnet manager, left out of the tables: {shown}")
    lids = np.flatnonzero(ud.live_lids)
    if settled is not None:  # before the cut-off part is cleared: a destination gone is a change too
        start, reached = lft.copy(), carried(made_for or sn, lft, lids)
    lft[~ud.live, :] = NO_ROUTE
    lft[:, ~ud.live_lids] = NO_ROUTE
    target = ud.targets(lft)
    _legalize(ud, lft, target, lids, roles)
    # level by level, since a lower level's choices decide what reaches the next one
    as_carried = None  # the tables `used` was computed for (its LIDs' columns): what a level moved is walked again
    for lay, direction in ((0, "up"), (0, "across"), (1, "up"), (2, "down"), (1, "down")):
        if direction == "across" and not ud.bigraph.any():
            continue  # only BiGraph switches have ports across (and `carried` is the costly part)
        rows = np.flatnonzero(ud.live & (ud.layer == lay))
        if direction == "down":
            rows = rows[~ud.single_down[rows]]  # each destination has one legal port down: nothing to even out
        if not len(rows):
            continue
        if as_carried is None:
            used, as_carried = carried(sn, lft, lids), lft.copy()
            full = _by_lid(used, lids, lft.shape)
        else:
            # a LID's column of `carried` depends on that LID's column of the tables alone: only
            # the destinations a level moved are walked again (at the LID limit the leaves move
            # few, and a full walk is 3 s of CPU); whole rows compared, then the LIDs picked:
            # picking columns first copies the table twice (3.7 s there, against 0.07 s)
            moved = np.flatnonzero((lft != as_carried).any(axis=0)[lids])
            if len(moved):
                used[:, moved] = carried(sn, lft, lids[moved])
                full[:, lids[moved]] = used[:, moved]
                as_carried[:, lids[moved]] = lft[:, lids[moved]]
        downs: dict[int, DownLoads] = {}  # per zone, shared by its leaves: each sees the others' moves
        intos: dict[int, IntoPaths] = {}
        # zones `even_cas` judges: two layers (IntoPaths sees spine->leaf links only).  With
        # inter-zone links, a border leaf's links also carry another zone's traffic, which
        # IntoPaths does not weigh: there it only keeps CAs off crowded links (tiny: the most
        # paths on a spine->leaf link 55 -> 50, OpenSM dfsssp's figure)
        judged = {z: int(ud.layer[ud.zone == z].max()) <= 1 for z in np.unique(ud.zone)}

        def even_out(part: np.ndarray, lay=lay, direction=direction, used=used, full=full) -> None:
            for x in part:
                if settled is not None and settled[x] and (lft[x] == start[x]).all() and (used[x] == reached[x]).all():
                    continue
                prio = priority if soft is None or not soft[x].any() else np.where(soft[x], 0, priority)
                z = int(ud.zone[x])
                if direction == "up" and lay == 0 and z not in downs:
                    downs[z] = _down_loads(ud, lft, full, target[z], lids)
                down = downs.get(z) if direction == "up" and lay == 0 else None
                for group in port_groups(ud, lft, int(x), target[ud.zone[x]], lids[used[x]], roles, direction):
                    rebalance_switch(lft, group, prio, down, sn.peer_dev[x, group.ports])
                    # not in a repair (minimal churn: CAs at their bound before a failure stay)
                    if down is not None and settled is None and judged[z]:
                        into = intos[z] if z in intos else intos.setdefault(z, _into_paths(ud, lft, z))
                        even_cas(lft, group, prio, into, sn.peer_dev[x, group.ports])

        if direction == "up" and lay == 0:
            even_out(rows)  # leaves share their zone's spine-to-leaf loads (`downs`): in order, here
        else:
            _by_halves(lft, rows, even_out)  # a switch above the leaves moves only its own row
    return warnings


def _by_lid(used: np.ndarray, lids: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """[switch, lid] from [switch, j] of `lids[j]` (False elsewhere): a band of rows at a time,
    which keeps the scattered writes in cache (3x faster than all rows at once)."""
    full = np.zeros(shape, bool)
    for r in range(0, shape[0], 64):
        full[r:r + 64, lids] = used[r:r + 64]
    return full


def same_ports(made_for: Subnet, now: Subnet) -> np.ndarray:
    """[switch] True where every port is cabled as it was in the subnet the tables were made for
    (a repair's `settled` switches)."""
    return ((made_for.peer_kind != 0) == (now.peer_kind != 0)).all(axis=1)


def unsettled(before, after) -> np.ndarray:
    """[switch] True where a switch's balance figures may differ between two tables: its ports,
    its entries or the destinations whose traffic reaches it changed.  The others have the
    figures they had (a watcher re-checks only these after a repair of checked tables)."""
    return ~same_ports(before.subnet, after.subnet) | (before.lft != after.lft).any(axis=1) | \
        (_reached(before) != _reached(after)).any(axis=1)


def _reached(tables) -> np.ndarray:
    """[switch, lid] the destinations whose CA traffic reaches each switch (`loads.carried`)."""
    ud = UpDown.of(tables.subnet)
    lids = np.flatnonzero(ud.live_lids)
    return _by_lid(carried(tables.subnet, tables.lft, lids), lids, tables.lft.shape)


def affected_destinations(tables, failed: Subnet) -> np.ndarray:
    """[lid] True where a switch that still has links sends the LID out of a port whose cable
    `failed` (the same fabric after failures) no longer has: the destinations a failure forces
    to move.  A switch left with no links at all is out of service; its entries do not count,
    and a destination cut off with it does not move, it is gone (`loom.routing.changes`)."""
    sn = tables.subnet
    lost = (sn.peer_kind != 0) & (failed.peer_kind == 0)  # [sw, port] cabled in the design, gone now
    lost &= (failed.peer_kind != 0).any(axis=1)[:, None]
    return lost[np.arange(sn.n)[:, None], sn.out_port(tables.lft)].any(axis=0) & UpDown.of(failed).live_lids


def _into_paths(ud: UpDown, lft: np.ndarray, zone: int) -> IntoPaths:
    """The zone's links into its leaves, for `loads.even_cas` (see `loads.IntoPaths`)."""
    sn = ud.sn
    weight = np.bincount(sn.ca_switch[sn.ca_lids], minlength=sn.n)
    r, _, p = ud.links
    mine = (ud.zone == zone) & ud.live
    ups = np.bincount(r[(ud.layer[p] > ud.layer[r]) & (ud.zone[p] == ud.zone[r])], minlength=sn.n)
    outside = int(weight[mine].sum()) - weight
    return IntoPaths(sn, lft, weight, np.flatnonzero(mine & (ud.layer == 0) & (weight > 0)), ud.link_count, np.maximum(ups, 1), outside)


def _down_loads(ud: UpDown, lft: np.ndarray, carries: np.ndarray, target: np.ndarray, lids: np.ndarray) -> DownLoads:
    """Spine-to-leaf loads as they stand, for the leaf-level repair (see `loads.DownLoads`)."""
    sn = ud.sn
    t = np.full(sn.max_lid + 1, -1, np.int64)
    t[lids] = target[lids]
    # [switch, target] destinations delivered at the target whose traffic the switch carries:
    # the switch's carried row times a [target × LID] one-hot, a band of switches above the
    # leaves at a time (a sparse product; summing gathered columns cost twice as much)
    cols = np.flatnonzero(t >= 0)
    onehot = csr_matrix((np.ones(len(cols), np.float32), (t[cols], cols)), shape=(sn.n, sn.max_lid + 1))
    above = np.flatnonzero(ud.layer > 0)
    into = np.zeros((sn.n, sn.n), np.int64)
    for r in range(0, len(above), 512):
        rows = above[r:r + 512]
        into[rows] = (onehot @ carries[rows].T.astype(np.float32)).T  # exact: counts stay far below 2^24
    into[ud.layer[:, None] <= ud.layer[None, :]] = 0  # only what comes down into the target
    delivered = np.bincount(t[t >= 0], minlength=sn.n)
    r, _, p = ud.links
    ups = np.bincount(r[(ud.layer[p] > ud.layer[r]) & (ud.zone[p] == ud.zone[r])], minlength=sn.n)
    links = np.zeros((sn.n, sn.n), np.int64)
    np.add.at(links, (r, p), 1)
    cap = -(-delivered // np.maximum(ups, 1))[None, :] * links
    return DownLoads(carries.copy(), into, cap, t)


def _legalize(ud: UpDown, lft: np.ndarray, target: np.ndarray, lids: np.ndarray, roles: np.ndarray) -> None:
    """`_legalize_switch` on every live switch.  Where walk.c is built, it first finds the entries
    that are not plainly legal (`loom_suspect`, every cell: 2 threads, ~0.3 s at the LID limit,
    where judging each switch's every entry in numpy cost 6 s on two cores), and only switches
    with such entries are judged, on those entries alone; else half the switches in a forked
    child (`_by_halves`)."""
    ud.computed()
    rows = np.flatnonzero(ud.live)
    native = kernels()
    if native is None or target.shape[1] != lft.shape[1]:  # walk.c reads both with one width
        def repair(part: np.ndarray) -> None:
            for x in part:
                _legalize_switch(ud, lft, int(x), target[ud.zone[x]], lids, roles)

        _by_halves(lft, rows, repair)
        return
    for z in range(len(target)):  # no way into this zone's part of the path (as `_legalize_switch`)
        lft[np.ix_(rows[ud.zone[rows] == z], np.flatnonzero(target[z] == -1))] = NO_ROUTE
    for x in rows[ud.bigraph[rows]]:
        _legalize_switch(ud, lft, int(x), target[ud.zone[x]], lids, roles)
    for x, suspect in _suspect(ud, lft, target, lids, native):
        _legalize_switch(ud, lft, x, target[ud.zone[x]], lids, roles, suspect)


def _suspect(ud: UpDown, lft: np.ndarray, target: np.ndarray, lids: np.ndarray, native) -> Iterator[tuple[int, np.ndarray]]:
    """(switch, bool per `lids`): the entries walk.c (`loom_suspect`) cannot call plainly legal,
    for the switches outside BiGraphs that have any (a BiGraph's rule is not in C)."""
    sn = ud.sn
    port = sn.out_port(np.arange(256))
    peer = np.where(sn.peer_kind[:, port] == TO_SWITCH, sn.peer_dev[:, port], -1)
    via = np.ascontiguousarray(np.where(ud.zone[np.maximum(peer, 0)] == ud.zone[:, None], peer, -1).astype(np.int16))
    rows = np.ascontiguousarray(np.flatnonzero(ud.live & ~ud.bigraph), np.int64)
    lft, columns, target = np.ascontiguousarray(lft), np.ascontiguousarray(lids, np.int64), np.ascontiguousarray(target)
    args = (ud.zone, ud.layer, np.ascontiguousarray(ud.down), np.ascontiguousarray(ud.updown), np.ascontiguousarray(ud.turn_leaf, np.int64))
    counts = np.zeros(len(rows), np.int64)
    halves(len(rows), sn.n * len(lids), lambda lo, hi: native.suspect(
        lft, via, sn.n, lft.shape[1], rows, lo, hi, columns, len(columns), target, *args, counts, None))
    for i in np.flatnonzero(counts):  # a row's mask only when its turn comes (other rows' repairs leave it as it was)
        mask = np.zeros(len(columns), bool)
        native.suspect(lft, via, sn.n, lft.shape[1], rows, int(i), int(i) + 1, columns, len(columns), target, *args, counts, mask.ctypes.data)
        yield int(rows[i]), mask


def _by_halves(lft: np.ndarray, rows: np.ndarray, work) -> None:
    """`work(part)` changes only the rows of `lft` in `part`: the first half of `rows` here, the
    second in a forked child on a large subnet (`loom.forked`), which sends back the rows it
    changed."""
    mine, theirs = rows[: len(rows) // 2], rows[len(rows) // 2:]

    def done(part: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        before = lft[part].copy()
        work(part)
        changed = part[(lft[part] != before).any(axis=1)]
        return changed, lft[changed]

    other = Forked(lambda: done(theirs), lft.size)
    try:
        work(mine)
        changed, new_rows = other.result()
        lft[changed] = new_rows
    finally:
        other.close()


def _legalize_switch(ud: UpDown, lft: np.ndarray, x: int, target: np.ndarray, lids: np.ndarray, roles: np.ndarray,
                     suspect: np.ndarray | None = None) -> None:
    """Move each illegal entry of switch x to the legal port least loaded with its destination's
    role (then in total), so the repair already keeps per-role balance and the rebalance after
    it has little or nothing to move.  `suspect` (bool per `lids`, from walk.c): only those
    entries are judged, the others being plainly legal."""
    t = target[lids]
    routed = (t >= 0) & (t != x)
    lft[x, target == -1] = NO_ROUTE  # no way into this zone's part of the path
    judged = np.flatnonzero(routed if suspect is None else routed & suspect)
    if len(judged) == 0:
        return
    ut, inv = distinct(t[judged], ud.sn.n)
    ports, umask = ud.candidates(x, ut)
    col = np.full(256, -1, np.int64)
    col[ports] = np.arange(len(ports))
    cur = col[lft[x, lids].astype(np.int64)]
    fine = (cur[judged] >= 0) & umask[inv, np.maximum(cur[judged], 0)]  # by target: no [destination × port] matrix
    if fine.all():
        return
    ok = routed.copy()  # the entries that stay, as they count in the loads
    ok[judged] = fine
    load = np.bincount(cur[ok], minlength=len(ports)).astype(np.int64)
    role = roles[lids]
    load_r = np.zeros((int(role.max()) + 1, len(ports)), np.int64)
    np.add.at(load_r, (role[ok], cur[ok]), 1)
    for i, legal_ports in zip(judged[~fine], umask[inv[~fine]]):
        legal = np.flatnonzero(legal_ports)
        if len(legal) == 0:
            lft[x, lids[i]] = NO_ROUTE
            continue
        j = int(legal[np.lexsort((load[legal], load_r[role[i], legal]))[0]])
        lft[x, lids[i]] = ports[j]
        load[j] += 1
        load_r[role[i], j] += 1
