"""A switch's groups of interchangeable ports (`PortGroup`), as the engine evens them out
(`asbuilt.fit_to_fabric`) and the balance check judges them (`loom.checks.balance`): ports
joined by any destination's set of legal next hops (`UpDown.candidates`) are one group — a
leaf's up-ports, a spine's parallel links down to one leaf, a core's links into one pod."""

from __future__ import annotations

import numpy as np

from .loads import PortGroup
from .updown import UpDown


def port_groups(ud: UpDown, lft: np.ndarray, x: int, target: np.ndarray, lids: np.ndarray, roles: np.ndarray,
                direction: str | None = None) -> list[PortGroup]:
    """The port groups of switch x over the given destinations (those it forwards to a switch
    of its zone), with each destination's legal ports and current choice; only the groups going
    `direction` ("up", "down", "across") if given.  Groups, their ports and patterns are slices
    of one sort each: a spine has a group per leaf below it, and a pass over the ports per
    group cost ~2 s at the LID limit."""
    t = target[lids]
    keep = (t >= 0) & (t != x)
    _, peers = ud.switch_links(x)
    if direction in ("up", "down") and not ud.bigraph[x] and (ud.layer[peers] < ud.layer[x]).any() \
            and (ud.layer[peers] > ud.layer[x]).any() and ud.updown[x, t[keep]].all():
        # no destination turns, so each one's legal ports all go down (x is above its target)
        # or all up: the other direction's destinations share no port with the groups asked
        keep &= ud.down[x, np.maximum(t, 0)] == (direction == "down")
    lids, t = lids[keep], t[keep]
    if len(lids) == 0:
        return []
    ut, inv = distinct(t, ud.sn.n)
    ports, umask = ud.candidates(x, ut)
    if len(ports) == 0:
        return []
    pats, pat_of_t = distinct_rows(umask)
    comp = _joined(pats)  # [port] its group, named by its smallest port
    pat_comp = np.where(pats.any(axis=1), comp[np.argmax(pats, axis=1)], -1)
    dest_pat = pat_of_t[inv]
    dest_comp = pat_comp[dest_pat]
    by_comp, starts = _by_group(dest_comp, len(ports))  # each group's destinations, ascending
    port_order, port_starts = _by_group(comp, len(ports))
    pat_order, pat_starts = _by_group(pat_comp, len(ports))
    at = np.full(256, -1, np.int64)  # a table entry's port -> its index in `ports`
    at[ports] = np.arange(len(ports))
    at = at[lft[x, lids]]
    place = np.empty(len(ports), np.int64)  # a port's index within its group
    place[port_order] = np.arange(len(ports)) - port_starts[comp[port_order]]
    chosen = np.where((at >= 0) & (comp[np.maximum(at, 0)] == dest_comp), place[np.maximum(at, 0)], -1)
    pat_place = np.empty(len(pats), np.int64)  # a pattern's index within its group
    pat_place[pat_order] = np.arange(len(pats)) - pat_starts[np.maximum(pat_comp[pat_order], 0)]
    peer_layer = ud.layer[ud.sn.peer_dev[x, ports]]
    # "across": a BiGraph's link to the other part (both ends node-facing)
    side = np.where(peer_layer > ud.layer[x], "up", np.where(peer_layer < ud.layer[x], "down", "across"))
    out = []
    for c in np.unique(comp):
        rows = by_comp[starts[c]:starts[c + 1]]
        if len(rows) == 0 or direction not in (None, side[c]):
            continue
        cols, mine = port_order[port_starts[c]:port_starts[c + 1]], pat_order[pat_starts[c]:pat_starts[c + 1]]
        out.append(PortGroup(x, ports[cols], str(side[c]), lids[rows], roles[lids[rows]], pats[np.ix_(mine, cols)],
                             pat_place[dest_pat[rows]], chosen[rows], ud.sn.lid_switch[lids[rows]] < 0))
    return out


def _by_group(group: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, starts): the indices of group g (0 <= g < count; -1: none) are
    order[starts[g]:starts[g + 1]], ascending."""
    order = np.argsort(group, kind="stable")
    return order, np.searchsorted(group[order], np.arange(count + 1))


def _joined(pats: np.ndarray) -> np.ndarray:
    """[port] the smallest port of its group: ports joined by any destination's legal set
    (`pats[pattern, port]`) are one group.  Each port takes the smallest label of the patterns
    through it, and each pattern the smallest of its ports, until nothing changes (a pass per
    step of the longest chain of overlapping sets; one or two on a fat tree, where a Python pass
    per pattern or a sparse graph's components cost 1-2 s at the LID limit)."""
    n = pats.shape[1]
    label = np.arange(n)
    while True:
        by_pattern = np.where(pats, label, n).min(axis=1, initial=n)
        joined = np.minimum(label, np.where(pats, by_pattern[:, None], n).min(axis=0, initial=n))
        if (joined == label).all():
            return label
        label = joined


def distinct(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)` for integers in [0, size): a lookup table
    instead of a sort, O(len(values) + size) — the per-switch passes call it with every LID."""
    index = np.full(size, -1, np.int64)
    index[values] = 0
    present = np.flatnonzero(index == 0)
    index[present] = np.arange(len(present))
    return present, index[values]


def distinct_rows(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(mask, axis=0, return_inverse=True)` for a bool matrix, same order: rows
    packed to bytes (first column the high bit) and sorted by those, since sorting whole rows
    as records is slow; up to 63 columns (a 64-port switch's links), each row one integer."""
    if mask.shape[1] <= 63:
        key = mask.astype(np.int64) @ (np.int64(1) << np.arange(mask.shape[1] - 1, -1, -1, dtype=np.int64))
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        return mask[first], inverse.reshape(-1)
    packed = np.packbits(mask, axis=1)
    order = np.lexsort(packed.T[::-1])
    ranked = packed[order]
    first = np.r_[True, (ranked[1:] != ranked[:-1]).any(axis=1)] if len(ranked) else np.zeros(0, bool)
    inverse = np.empty(len(mask), np.int64)
    inverse[order] = np.cumsum(first) - 1
    return mask[order[first]], inverse
