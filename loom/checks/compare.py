"""`loom diff`: what a model change does to the fabric, for review and for CI.

Both revisions are expanded, routed and checked; then compared by *names*, not numbers
(adding a node shifts the LIDs of later nodes, but no route moves because of that):
- forwarding: for every (switch, destination name) the out-port; LFT entries changed per
  switch; destinations *moved* (their own cabling changed), *rerouted* (cabling unchanged,
  some switch now forwards them elsewhere), added and removed;
- cabling and physical churn (`loom.expand.churn`, the same source as `loom cabling diff`):
  cables added, removed and re-pulled, devices that changed rack or RU, NIC ports re-cabled,
  LIDs renumbered;
- verdicts before/after (reachable, deadlock-free, balance within bound), leaf up-ports above
  the bound, and node types whose host layout changed (the host settings derive from them);
- InfiniBand: the QoS/VL layout (classes' SL/VL, data VLs, VL sets, SL2VL; `loom.checks.qos_layout`),
  a change of its own: it rewrites every port's SL2VL/VLArb tables, so it is never pure growth.
A regression is a verdict that held on base and fails on head, balance further above its
lower bound than on base by more than the tolerance, or physical churn (a device moved, a NIC
port re-cabled, a cable re-pulled, a LID or address renumbered) beyond the nodes whose `pinned` entry the
change edits, unless the head model says `relayout: true`.  Pure growth: nodes or cables added,
nothing removed, no existing destination moved or rerouted; any other difference is a change.
Ethernet fabrics also get their switches' configuration lines changed (`loom.render.roce_diff`),
and their reports speak of routes and NICs (`loom.render.diff_report`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from loom.expand import Fabric
from loom.expand.churn import churn
from loom.qos import QosPlan, fabric_qos
from loom.routing import route
from loom.routing.base import NO_ROUTE, Tables

from . import EBB_SAMPLES, check_tables, qos_layout
from .balance import Judged, group_figures, into_figures, is_intact
from .partitions import talk_changes
from .paths import Walk


@dataclass
class Side:
    label: str
    fabric: Fabric
    tables: list[Tables]
    reports: list[dict]
    qos: QosPlan | None = None

    @property
    def routed(self) -> bool:
        return bool(self.tables)

    def verdicts(self) -> dict:
        if not self.routed:
            return {"reachable": None, "deadlock_free": None, "balance_within_bound": None, "qos_isolation": None}
        return {
            "reachable": all(r["reachable"] for r in self.reports),
            "deadlock_free": all(r["deadlock_free"] for r in self.reports),
            "balance_within_bound": all(r["balance"]["within_bound"] for r in self.reports),
            # no traffic classes in the model: no QoS check exists (loom check skips it too)
            "qos_isolation": None if self.reports[0]["qos"] is None else all(r["qos"]["ok"] for r in self.reports),
        }

    def balance(self) -> dict | None:
        if not self.routed:
            return None
        worst = max(self.reports, key=lambda r: r["balance"]["max_dest_per_up_port"] - r["balance"]["design_bound"])
        b = worst["balance"]
        # a review judges against the intact design: a lost link is a loss even when the rest
        # of the fabric is at its as-built bound
        return {"max_dest_per_up_port": b["max_dest_per_up_port"], "lower_bound": b["design_bound"],
                "as_built_bound": b["lower_bound"], "excess": b["max_dest_per_up_port"] - b["design_bound"],
                "storage": b["per_role"].get("storage", {}).get("max_dest_per_up_port"), "ebb": worst["ebb"]}


def evaluate(label: str, fabric: Fabric, ebb_samples: int = EBB_SAMPLES, hint: Side | None = None) -> Side:
    """Route and check one revision exactly as `loom check` does (same checks, QoS included,
    same eBB samples and seed, so one model shows one figure); with `hint`, keep the other
    revision's routes where balance allows (what `loom plan` does against the live fabric), so
    the diff shows what must move."""
    tables = route(fabric, hint=hint.tables if hint and hint.routed else None)
    qos = fabric_qos(fabric.model)
    return Side(label, fabric, tables, [check_tables(t, ebb_samples, qos) for t in tables], qos)


def _by_names(t: Tables, rows: dict[str, int], width: int, col_of: np.ndarray) -> np.ndarray:
    """`t.lft` re-indexed by switch name (`rows`) and by `col_of[lid]` (-1: a LID left out), the
    rest NO_ROUTE: both revisions' tables side by side however their switches and LIDs are numbered."""
    sn = t.subnet
    out = np.full((len(rows), width), NO_ROUTE, dtype=t.lft.dtype)
    keep = np.flatnonzero(col_of >= 0)
    out[np.ix_([rows[sn.name(r)] for r in range(sn.n)], col_of[keep])] = t.lft[:, keep]
    return out


def _lid_columns(t: Tables, names: bool) -> dict:
    """LID → its column key: the LID itself, or with `names` the destination's name (routed
    LIDs only: a switch or a NIC port)."""
    sn = t.subnet
    if not names:
        return {l: l for l in range(t.lft.shape[1])}
    return {int(l): sn.lid_name(int(l)) for l in np.flatnonzero((sn.lid_switch >= 0) | (sn.lid_port >= 0))}


def side_by_side(tb: Tables, th: Tables, names: bool) -> tuple[np.ndarray, np.ndarray, list[str], list]:
    """Both tables as [switch name × destination] arrays over the union of the two sides' switches
    and destinations (keyed by raw LID, or with `names` by destination name), NO_ROUTE where a side
    has no entry: every comparison of `loom diff` is then one array operation (the dicts of every
    entry it used to build cost ~50 s on the 32,768-GPU RoCE fabric)."""
    lb, lh = _lid_columns(tb, names), _lid_columns(th, names)
    switches = sorted({tb.subnet.name(r) for r in range(tb.subnet.n)} | {th.subnet.name(r) for r in range(th.subnet.n)})
    dests = sorted(set(lb.values()) | set(lh.values()), key=str)
    rows, cols = {n: i for i, n in enumerate(switches)}, {d: i for i, d in enumerate(dests)}

    def grid(t: Tables, lc: dict) -> np.ndarray:
        col_of = np.full(t.lft.shape[1], -1, np.int64)
        for lid, key in lc.items():
            col_of[lid] = cols[key]
        return _by_names(t, rows, len(cols), col_of)

    return grid(tb, lb), grid(th, lh), switches, dests


def ports_above_bound(t: Tables, design: bool = False) -> list[dict]:
    """Every port, at every level, carrying more than the bound that applies (destinations over
    its group's; for a link into a leaf or pod, CA-to-CA paths over the subtree's): the
    as-built bound (what any routing could reach on the fabric as it stands), or with
    `design` the intact design's.  A fabric with links down is not a routing fault, so only the
    as-built bound is a finding by default (the design bound counted every port of a degraded
    group, hundreds on a change the verdicts pass)."""
    walk = Walk(t)
    judged = Judged.of(walk)
    out = []
    for g in group_figures(walk, judged=judged):
        bound = g.design if design else g.bound
        out += [{"switch": g.switch, "level": g.level, "port": int(p), "destinations": int(n), "bound": int(bound)}
                for p, n in zip(g.ports, g.loads) if n > bound]
    # a link into a leaf or pod is judged on its CA-to-CA paths against the other links into
    # the subtree: its own group of one is always at its bound.  Its as-built bound assumes each
    # destination enters over one link, which a lost link can make impossible (a leaf that lost
    # its link to a spine sends that spine's destinations in over others), so as `loom check`
    # does, that bound is a finding on an intact fabric only; the design's applies always
    if not design and not is_intact(judged.ud):
        return out
    for x in into_figures(walk, judged=judged):
        bound = x.paths_design if design else x.paths_bound
        if bound is not None and x.paths > bound:
            out.append({"switch": x.switch, "level": x.level, "port": x.port, "peer": x.peer,
                        "paths": x.paths, "bound": bound, "destinations": x.dests})
    return out


def compare(base: Side, head: Side, tolerance: int = 0, design_bound: bool = False) -> dict:
    vb, vh = base.verdicts(), head.verdicts()
    # balance is judged by its excess over the bound, with the tolerance; the rest are yes/no
    regressions = [f"{k} held on base and fails on head" for k in vb
                   if k != "balance_within_bound" and vb[k] is True and vh[k] is False]
    bb, bh = base.balance(), head.balance()
    if bb and bh and bh["excess"] > bb["excess"] + tolerance:
        regressions.append(f"balance: max {bh['max_dest_per_up_port']} destinations per up-port vs bound {bh['lower_bound']} "
                           f"(base {bb['max_dest_per_up_port']} vs {bb['lower_bound']}; tolerance {tolerance})")
    ch = churn(base.fabric, head.fabric)
    cables = {k: sorted(c.text for c in ch.cables if c.action == a)
              for k, a in (("added", "add"), ("removed", "remove"), ("moved", "move"))}
    moved_cas = ch.recabled_cas
    regressions += _churn_regressions(ch, base.fabric, head.fabric)
    out = {
        "base": {"label": base.label, "fabric": base.fabric.name, "verdicts": vb, "balance": bb},
        "head": {"label": head.label, "fabric": head.fabric.name, "verdicts": vh, "balance": bh},
        "cables": cables,
        "churn": {**ch.counts(), "devices_moved": ch.devices_moved, "ports_recabled": ch.ports_recabled,
                  "lids_renumbered": ch.lids_renumbered, "addresses_renumbered": ch.addresses_renumbered,
                  "relayout": head.fabric.model.relayout},
        "host_settings_changed": _host_changes(base.fabric, head.fabric),
    }
    if head.fabric.technology == "infiniband" and base.routed and head.routed:
        lb, lh = qos_layout.layout(base.qos, base.reports), qos_layout.layout(head.qos, head.reports)
        out["qos_layout"] = {"base": lb, "head": lh, "changes": qos_layout.changes(lb, lh)}
    routing = {"lft_entries_changed": 0, "entries_added": 0, "entries_removed": 0, "per_switch": {}, "destinations_moved": [],
               "destinations_rerouted": [], "destinations_added": [], "destinations_removed": [], "ports_above_bound": []}
    if base.routed and head.routed:
        for tb, th in zip(base.tables, head.tables):
            a, b, switches, _ = side_by_side(tb, th, names=False)  # (switch name, LID) → port
            per_row = (a != b).sum(axis=1)
            routing["per_switch"].update({switches[i]: int(per_row[i]) for i in np.flatnonzero(per_row)})
            routing["lft_entries_changed"] += int(per_row.sum())
            routing["entries_added"] += int(((a == NO_ROUTE) & (b != NO_ROUTE)).sum())
            routing["entries_removed"] += int(((a != NO_ROUTE) & (b == NO_ROUTE)).sum())
            a, b, _, dests = side_by_side(tb, th, names=True)  # (switch name, destination name) → port
            has_b, has_h = (a != NO_ROUTE).any(axis=0), (b != NO_ROUTE).any(axis=0)
            moved = ((a != b) & (a != NO_ROUTE) & (b != NO_ROUTE)).any(axis=0)
            routing["destinations_added"] += sorted(dests[i] for i in np.flatnonzero(has_h & ~has_b))
            routing["destinations_removed"] += sorted(dests[i] for i in np.flatnonzero(has_b & ~has_h))
            changed = {dests[i] for i in np.flatnonzero(moved)}
            routing["destinations_moved"] += sorted(d for d in changed if d in moved_cas)
            routing["destinations_rerouted"] += sorted(d for d in changed if d not in moved_cas)
            routing["ports_above_bound"] += ports_above_bound(th, design_bound)
    out["routing"] = routing
    out["bound"] = "design" if design_bound else "as-built"
    out["technology"] = head.fabric.technology
    talk = talk_changes(base.fabric, head.fabric)
    if talk is not None:  # who can talk to whom through the partitions: a verdict of its own
        out["who_can_talk"] = talk
        if talk["intent_base"] is not False and talk["intent_head"] is False:
            regressions.append("partition intent held on base and fails on head: " + talk["problems_head"][0])
    if head.fabric.technology == "ethernet" and base.routed and head.routed:
        from loom.render.roce_diff import config_changes

        out["configs"] = config_changes(base.fabric, base.tables, head.fabric, head.tables)
    # Ethernet: what changes on a switch is its configuration (static routes included); BGP's ECMP
    # does not pin the reference tables' choices, so entries moving between up-links are no change
    switch_changes = out["configs"]["lines_changed"] if "configs" in out else routing["per_switch"]
    layout_changed = bool(out.get("qos_layout", {}).get("changes"))
    out["changed"] = bool(switch_changes or routing["entries_added"] or routing["entries_removed"] or any(cables.values())
                          or out["host_settings_changed"] or (talk is not None and talk["changed"]) or layout_changed)
    # a new VL layout rewrites every port's SL2VL/VLArb tables and the SLs jobs use: not pure growth
    out["growth"] = bool(cables["added"]) and not cables["removed"] and not cables["moved"] and not layout_changed and \
        not routing["destinations_moved"] and not routing["destinations_rerouted"] and not routing["destinations_removed"]
    out["regressions"] = regressions
    out["exit"] = 1 if regressions else 0
    return out


def _churn_regressions(ch, base: Fabric, head: Fabric) -> list[str]:
    """Churn the change did not ask for: anything but the nodes whose `pinned` entry it edits."""
    if head.model.relayout:
        return []
    pins_b = {n: p for g in base.model.node_groups for n, p in g.pinned.items()}
    pins_h = {n: p for g in head.model.node_groups for n, p in g.pinned.items()}
    intended = {n for n in pins_b.keys() | pins_h.keys() if pins_b.get(n) != pins_h.get(n)}
    extra = {k: v for k, v in ch.outside(intended).items() if v}
    if not extra:
        return []
    words = {"devices_moved": "devices moved (rack/RU)", "ports_recabled": "NIC ports re-cabled",
             "cables_repulled": "cables re-pulled", "lids_renumbered": "LIDs renumbered",
             "addresses_renumbered": "addresses renumbered"}
    return ["physical churn on a change that is not a relayout: " + ", ".join(f"{v} {words[k]}" for k, v in extra.items())
            + " (keep the lock file next to the model, or say `relayout: true` in the model if this is on purpose)"]


def _host_changes(a: Fabric, b: Fabric) -> list[str]:
    ta, tb = a.model.node_types, b.model.node_types
    out = [f"node type {n}: host layout changed" for n in sorted(set(ta) & set(tb)) if ta[n] != tb[n]]
    out += [f"node type {n}: added" for n in sorted(set(tb) - set(ta))]
    out += [f"node type {n}: removed" for n in sorted(set(ta) - set(tb))]
    return out
