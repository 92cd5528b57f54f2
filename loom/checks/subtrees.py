"""Balance across groups: every link *into* a subtree judged against the others into it.

A spine's link down to a leaf, or a core's link into a pod, is a group of one port on its own
switch: judged switch by switch (`balance.group_figures`) it is always at its bound.  But which
of them a destination's traffic takes is decided by the up-port choices below, so the loads of
all the links into one subtree are the routing's to balance.  Here every down-link is judged
with the others into the same subtree (a leaf, for spine→leaf links; a pod, for core→pod links):
- destinations: the least max-load over those links any assignment of the subtree's carried
  destinations can reach on the links as they stand (each destination enters over one link, on
  one whose child still reaches it going down: `loads.min_max_load`, a flow where the links'
  reach differs), in total and per role (with the total at its bound);
- CA-to-CA paths (the verdict: `loom check` fails on a link over it on an intact fabric): every
  channel adapter outside the subtree sends to each of its channel adapters through one of
  those links, so with each destination entering over one link (what
  ftree and Loom's fattree do: a destination's traffic stays in order on one path set) the least
  max is the CA-destination bound times the CAs outside.  A subtree that also receives traffic
  for another zone (a border leaf), or any subtree of a zone with several border leaves (traffic
  between other zones crosses its leaves), has uneven weights: its paths are reported, not judged.
The figures are counted from the tables as they are (`loads.carried`, `balance.path_counts`), the
bounds from the cabling alone.  Cost: O(switches × LIDs) for the counts, a small flow per
subtree whose links reach different destinations.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loom.routing.groups import distinct_rows
from loom.routing.loads import counting_bound, into_paths_bound, min_max_load
from loom.routing.updown import UpDown

#: the level of a link by its parent's role (its child's subtree: a leaf, a pod)
INTO_LEVELS = {"spine": "spine_down", "core": "core_down"}


@dataclass
class IntoLink:
    """One link into a subtree, its loads and the bounds it is held to."""

    level: str
    row: int
    port: int
    switch: str
    peer: str
    dests: int
    bound: int
    per_role: dict[str, tuple[int, int]]  # role: (load, bound)
    paths: int
    paths_bound: int | None  # None: not judged (the subtree also receives another zone's traffic)
    #: the intact design's paths bound (every designed link into the subtree working): a lost
    #: link shows as a loss against it (`loom diff --design-bound`); None where not judged
    paths_design: int | None = None

    @property
    def over(self) -> bool:
        """The verdict: more CA-to-CA paths than the bound (the traffic the link carries)."""
        return self.paths_bound is not None and self.paths > self.paths_bound

    @property
    def over_dests(self) -> bool:
        """More destinations than their bound, in total or for a role: a figure, not a verdict
        (a destination whose sources are split over several links counts on each)."""
        return self.dests > self.bound or any(m > b for m, b in self.per_role.values())

    def describe(self) -> str:
        said = [f"{self.paths} CA-to-CA paths, bound {self.paths_bound}", f"{self.dests} destinations (bound {self.bound})"]
        said += [f"{r} {m} (bound {b})" for r, (m, b) in self.per_role.items() if m > b]
        return f"{self.switch} port {self.port} -> {self.peer} ({self.level}): " + ", ".join(said)


def into_links(ud: UpDown, lft: np.ndarray, lids: np.ndarray, used: np.ndarray, roles: np.ndarray, names: list[str],
               paths: np.ndarray, only: np.ndarray | None = None) -> list[IntoLink]:
    """Every live down-link of a spine or core (same zone) with its figures and bounds.
    `lids`/`used`: the destinations judged and [switch, j] whether their CA traffic reaches the
    switch; `roles[lid]` an index into `names`; `paths` [switch, port] CA-to-CA paths; `only`
    ([switch] bool): just the subtrees one of whose parents is marked."""
    sn = ud.sn
    r, c, p = ud.links
    parent_role = np.array([sn.switch(int(x)).role for x in r], dtype=object)
    keep = (ud.zone[r] == ud.zone[p]) & (ud.layer[p] < ud.layer[r]) & ud.live[r] & ud.live[p] \
        & np.isin(parent_role, list(INTO_LEVELS))
    r, c, p = r[keep], c[keep], p[keep]
    if not len(r):
        return []
    subtrees: dict[tuple, list[int]] = {}
    for i, x in enumerate(p):
        subtrees.setdefault(_subtree(sn, int(x)), []).append(i)
    target = ud.targets(lft)
    is_ca = sn.lid_switch[lids] < 0
    zone_of = np.where(sn.lid_switch >= 0, sn.lid_switch, sn.ca_switch)
    live_cas = int(ud.live_lids[sn.ca_lids].sum())
    out = []
    member = {key: _members(sn, key) for key in subtrees}
    # leaves with inter-zone links per zone: with several, traffic between other zones crosses
    # this zone's leaves, and a link into a leaf carries paths to more than the leaf's own CAs
    borders = np.bincount(ud.zone[np.flatnonzero(ud.cross_port.any(axis=1))], minlength=int(ud.zone.max(initial=0)) + 1)
    for key, mine in subtrees.items():
        mine = np.array(mine)
        if only is not None and not only[r[mine]].any():
            continue
        rows, ports, kids = r[mine], c[mine], p[mine]
        t = target[ud.zone[rows[0]], lids]
        # the subtree's destinations: those whose target switch is in it, carried in over its links
        inside = np.flatnonzero((t >= 0) & member[key][np.maximum(t, 0)])
        dest = inside[used[rows][:, inside].any(axis=0)]
        # which links can deliver each: their child reaches it going down (none does: a switch
        # reached by a turn, e.g. a spine whose core is down; then any link can carry it in)
        can = ud.down[kids][:, t[dest]]
        can[:, ~can.any(axis=0)] = True
        patterns, pattern = distinct_rows(can.T)
        d_roles = roles[lids[dest]]
        on = used[rows][:, dest] & (lft[rows][:, lids[dest]] == ports[:, None])  # [link, destination]

        def least(sel, others=None, total=None):
            """`min_max_load` of the selected destinations; no flow where the loads as routed
            already meet the quick counting bound (nothing can do better)."""
            mine_c = np.bincount(pattern[sel], minlength=len(patterns))
            quick = counting_bound(patterns, mine_c)
            if on[:, sel].sum(axis=1).max(initial=0) <= quick and on[:, sel].sum(axis=0).max(initial=0) <= 1:
                return quick
            return min_max_load(patterns, mine_c, None if others is None else others - mine_c, total)

        everything = np.ones(len(dest), bool)
        bound = least(everything)
        counts = np.bincount(pattern, minlength=len(patterns))
        per_role = {names[k]: (on[:, d_roles == k].sum(axis=1), least(d_roles == k, counts, bound)) for k in np.unique(d_roles)}
        ca = is_ca[dest]
        zone = ud.zone[rows[0]]
        local = (ud.zone[zone_of[lids[dest]]] == zone).all() and borders[zone] <= 1
        paths_bound = paths_design = None
        if local and ca.any():
            outside = live_cas - int(ca.sum())
            paths_bound = least(ca) * outside
            paths_design = into_paths_bound(int(ca.sum()), _design_links(sn, key, len(rows)), live_cas)
        loads = on.sum(axis=1)
        for i in range(len(rows)):
            out.append(IntoLink(INTO_LEVELS[sn.switch(int(rows[i])).role], int(rows[i]), int(ports[i]),
                                sn.name(int(rows[i])), sn.name(int(kids[i])), int(loads[i]), int(bound),
                                {k: (int(v[i]), int(b)) for k, (v, b) in per_role.items()},
                                int(paths[rows[i], ports[i]]), paths_bound, paths_design))
    return out


def _design_links(sn, key: tuple, live: int) -> int:
    """Links into the subtree in the intact design: a leaf's up-links (all go to its pod's or
    zone's spines), or every spine of the pod's up-links (all go to cores); at least `live`."""
    zone = sn.switch(key[1]).zone if key[0] == "leaf" else key[1]
    z = next(z for z in sn.fabric.model.zones if z.name == zone)
    if key[0] == "leaf":
        counts = getattr(z, "spine_links", None)
        design = sum(counts) if counts else getattr(z, "leaf_up", 0)
    else:
        design = z.spines_per_pod * z.spine_up
    return max(design, live)


def _members(sn, key: tuple) -> np.ndarray:
    """[switch] in the subtree: the leaf, or every leaf and spine of the pod."""
    if key[0] == "leaf":
        out = np.zeros(sn.n, bool)
        out[key[1]] = True
        return out
    return np.array([sn.switch(i).zone == key[1] and sn.switch(i).pod == key[2] and sn.switch(i).role in ("leaf", "spine")
                     for i in range(sn.n)])


def _subtree(sn, child: int) -> tuple:
    """What a down-link into `child` leads into: the leaf itself, or the spine's pod."""
    s = sn.switch(child)
    return ("leaf", child) if s.role == "leaf" else ("pod", s.zone, s.pod)


def level_figures(links: list[IntoLink]) -> dict[str, dict]:
    """Per level: links, max destinations and their worst bound, max paths (all links; and on
    the links judged, beside the largest paths bound), links over a bound."""
    out = {}
    for level in dict.fromkeys(x.level for x in links):
        mine = [x for x in links if x.level == level]
        judged = [x for x in mine if x.paths_bound is not None]
        out[level] = {"links": len(mine), "max": max(x.dests for x in mine), "bound": max(x.bound for x in mine),
                      "max_paths": max(x.paths for x in mine),
                      "max_judged_paths": max((x.paths for x in judged), default=None),
                      "paths_bound": max((x.paths_bound for x in judged), default=None),
                      "over_bound": sum(x.over for x in mine), "over_destination_bound": sum(x.over_dests for x in mine)}
    return out
