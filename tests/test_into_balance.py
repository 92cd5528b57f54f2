"""Balance across groups (issue 33): every link into a leaf or pod judged against the others into
it.  The figures are compared with an independent count from the files `loom route` writes (the
LFT dump and the ibsim net, parsed and walked here, not with Loom's code), and a planted
imbalance on single-link groups — blind to the per-switch check — is caught and named."""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

from loom.checks import Walk, check_balance
from loom.cli import app
from loom.expand import expand
from loom.model import load_model
from loom.model.schema import Model
from loom.render.ibsim import ibsim_net
from loom.render.opensm import lfts_dump
from loom.routing import route

from tests.faults import zone_rows
from tests.load import hogs
from tests.test_as_built import degraded_trees, fat_tree

runner = CliRunner()
SWITCH = re.compile(r"^Switch \d+ \"([^\"]+)\"")
HCA = re.compile(r"^Hca \d+ \"([^\"]+)\"")
LINK = re.compile(r"^\[(\d+)\] \"([^\"]+)\"\[(\d+)\]")
TABLE = re.compile(r"of switch Lid \d+ guid \S+ \('([^']+)'\):")
ENTRY = re.compile(r"^0x([0-9a-f]+) (\d+) # (Channel Adapter|Switch) portguid \S+: '([^']+)'")


def read_net(net: str) -> tuple[dict[tuple[str, int], str], dict[str, str]]:
    """({(switch, port): the node cabled to it}, {CA: its switch}) from an ibsim net file."""
    peer, ca_switch, node, kind = {}, {}, None, None
    for line in net.splitlines():
        if m := SWITCH.match(line):
            node, kind = m[1], "switch"
        elif m := HCA.match(line):
            node, kind = m[1], "hca"
        elif (m := LINK.match(line)) and node:
            if kind == "switch":
                peer[node, int(m[1])] = m[2]
            else:
                ca_switch[node] = m[2]
    return peer, ca_switch


def independent_counts(dump: str, net: str) -> dict[str, tuple[int, int]]:
    """{level: (max CA-to-CA paths, max destinations)} over spine→leaf and core→spine links,
    walking every CA's packets to every LID hop by hop through the dumped tables."""
    peer, ca_switch = read_net(net)
    lft, lid_of_ca, switch_lids, table = defaultdict(dict), {}, set(), None
    for line in dump.splitlines():
        if m := TABLE.search(line):
            table = m[1]
        elif (m := ENTRY.match(line)) and table:
            lid = int(m[1], 16)
            lft[table][lid] = int(m[2])
            if m[3] == "Channel Adapter":
                lid_of_ca[m[4]] = lid
            else:
                switch_lids.add(lid)
    pod = {x: x for x, _ in peer}  # pods: what leaves and spines hold together without the cores

    def find(x):
        while pod[x] != x:
            x = pod[x]
        return x
    for (x, _), y in peer.items():
        if "-core" not in x and "-core" not in y and y in pod:
            pod[find(x)] = find(y)
    pod = {x: find(x) for x in pod}
    sources = defaultdict(int)  # switch: CAs on it (with a table, i.e. live)
    for ca, sw in ca_switch.items():
        if sw in lft and ca in lid_of_ca:
            sources[sw] += 1
    ca_lid_switch = {lid_of_ca[c]: s for c, s in ca_switch.items() if c in lid_of_ca}
    paths, dests = defaultdict(int), defaultdict(set)
    for lid in set(ca_lid_switch) | switch_lids:
        for src, n in sources.items():
            w = n - (ca_lid_switch.get(lid) == src)  # not to itself
            x, hops, delivered = src, [], False
            while x in lft and len(hops) <= len(lft):
                port = lft[x].get(lid, 255)
                nxt = peer.get((x, port))
                if port == 0 or ca_lid_switch.get(lid) == x:
                    delivered = True  # the switch's own LID, or a CA cabled to it
                if port in (0, 255) or nxt is None or nxt not in lft or delivered:
                    break
                hops.append((x, port, nxt))
                x = nxt
            for i, (a, port, b) in enumerate(hops):
                if w and lid in ca_lid_switch:
                    paths[a, port] += w
                # a destination of the subtree the link leads into: delivered at its child (a
                # leaf), or anywhere in the child's pod
                if delivered and (x == b or ("-spine" in b and pod[x] == pod[b])):
                    dests[a, port].add(lid)
    out = {}
    for level, (up, down) in {"spine_down": ("spine", "leaf"), "core_down": ("core", "spine")}.items():
        links = [(s, p) for (s, p), q in peer.items() if f"-{up}" in s and f"-{down}" in q and s in lft and q in lft]
        if links:
            out[level] = (max(paths.get(k, 0) for k in links), max(len(dests.get(k, ())) for k in links))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(degraded_trees())
def test_into_figures_equal_an_independent_count(data):
    fabric = expand(Model.model_validate(data))
    t = route(fabric)[0]
    b = check_balance(Walk(t))
    mine = {level: (f["into"]["max_paths"], f["into"]["max"]) for level, f in b.levels.items() if "into" in f}
    assert mine == independent_counts(lfts_dump(t), ibsim_net(fabric))


def plant_core_link_imbalance(t):
    """Spines of the other pods send as many more destinations of pod 0 to one core as its link
    into pod 0 carries: that link carries twice its share.  Returns (tables, the link's name)."""
    sn, lft = t.subnet, t.lft
    core = zone_rows(sn, sn.switch(0).zone, "core")[0]
    ports = [p for p in range(1, sn.max_port + 1) if sn.peer_kind[core, p] and sn.switch(int(sn.peer_dev[core, p])).pod == 0]
    port, spine = ports[0], int(sn.peer_dev[core, ports[0]])
    # destinations of pod 0 below that spine, now carried in over another core
    below = [int(d) for d in sn.ca_lids if sn.switch(int(sn.ca_switch[d])).pod == 0 and lft[core, d] == port]
    others = [int(d) for d in sn.ca_lids if sn.switch(int(sn.ca_switch[d])).pod == 0 and d not in below
              and sn.peer_dev[spine, lft[spine, d]] >= 0 and sn.switch(int(sn.peer_dev[spine, lft[spine, d]])).role == "leaf"]
    moved = others[:len(below)]
    assert moved
    up = [p for p in range(1, sn.max_port + 1) if sn.peer_kind[spine, p] and int(sn.peer_dev[spine, p]) == core]
    changes = {}
    for s in range(sn.n):  # every spine at this spine's position in another pod sends them up to `core`
        if sn.switch(s).role == "spine" and sn.switch(s).pod != 0:
            link = [p for p in range(1, sn.max_port + 1) if sn.peer_kind[s, p] and int(sn.peer_dev[s, p]) == core]
            if link:
                changes.update({(s, d): link[0] for d in moved})
    changes.update({(core, d): port for d in moved})
    assert up and changes
    return t.with_entries(changes), f"{sn.name(core)} port {port} -> {sn.name(spine)} (core_down)"


def test_planted_core_link_imbalance_is_caught_and_named(tmp_path):
    """Judged switch by switch, a core's one link into a pod is a group of one and "at its
    bound"; judged against the other links into the pod, the planted one is over: `loom check`
    exits 1 and names it."""
    t = route(expand(load_model("topology/fat-tree-3.yaml")))[0]
    before = check_balance(Walk(t))
    assert before.within_bound and before.into_within_bound and before.intact, before.worst
    planted, name = plant_core_link_imbalance(t)
    b = check_balance(Walk(planted))
    assert not b.into_within_bound and b.intact
    assert any(w.startswith(name) for w in b.worst), b.worst
    dump = tmp_path / "lfts.dump"
    dump.write_text(lfts_dump(planted))
    args = ["check", "topology/fat-tree-3.yaml", "--lfts", str(dump), "--ebb-samples", "0"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert not report["ok"] and report["balance"]["levels"]["core_down"]["into"]["over_bound"] >= 1
    assert any(w.startswith(name) for w in report["balance"]["worst"])
    dump.write_text(lfts_dump(t))
    assert runner.invoke(app, [*args, "--json"]).exit_code == 0  # the engine's own tables pass


def test_a_push_verdict_leaves_the_into_figures_out_and_judges_the_rest_alike():
    """Plan, apply and the watcher judge what `loom check` judges but the links-into figures
    (`push_verdict`, `into=False`): on the planted imbalance every other figure is the same, the
    into verdict is absent (None, not a pass), and no into link is named."""
    t = route(expand(load_model("topology/fat-tree-3.yaml")))[0]
    planted, name = plant_core_link_imbalance(t)
    full, push = check_balance(Walk(planted)).as_dict(), check_balance(Walk(planted), into=False).as_dict()
    assert full["into_within_bound"] is False and push["into_within_bound"] is None
    assert not any(w.startswith(name) for w in push["worst"]) and any(w.startswith(name) for w in full["worst"])
    without_into = {lv: {k: v for k, v in f.items() if k != "into"} for lv, f in full["levels"].items()}
    assert push["levels"] == without_into and any("into" in f for f in full["levels"].values())
    same = {k for k in full if k not in ("levels", "into_within_bound", "worst")}
    assert {k: push[k] for k in same} == {k: full[k] for k in same}


def test_parallel_core_links_into_a_pod_at_their_paths_bound():
    """Cores with 5 parallel links into each pod (3 pods, 128 CAs each, 80 links into a pod):
    the bound is ceil(128 / 80) × 256 CAs outside = 512 paths per core→pod link, what OpenSM
    ftree reaches.  The spine LIDs a spine sends up used to share up-port indices with the core
    LIDs of its group (2 switch LIDs on one port where 1 is the bound); the repair of that one
    spine then split destinations over cores, and a link carried 640."""
    t = route(expand(load_model("bench/models/ft3-parallel-core.yaml")))[0]
    b = check_balance(Walk(t))
    into = b.levels["core_down"]["into"]
    assert (into["max_judged_paths"], into["paths_bound"]) == (512, 512), b.worst
    assert b.within_bound and b.into_within_bound


def test_leaves_of_several_pods_share_one_trade_and_no_link_above_carries_more():
    """ft3-parallel-core: six leaves of each pod are one compute destination over their per-role
    bound at one up-port and must trade it for a storage CA on one leaf (docs/routing.md).  A
    pod trading alone put three computes on each of the two links into that leaf (5
    destinations on a spine→leaf link, OpenSM ftree 3); leaves of several pods over at the same
    index now share one pair of another pod, and the spines and cores above route it within
    their bounds: 3 destinations, and every other level at or under the best OpenSM engine's
    figure (dfsssp: 5 on a spine up-port, 4 on a core link; paths as before)."""
    b = check_balance(Walk(route(expand(load_model("bench/models/ft3-parallel-core.yaml")))[0]))
    got = {level: (f["max_paths"], f["max"]) for level, f in b.levels.items()}
    assert got == {"leaf_up": (736, 54), "spine_down": (736, 3), "spine_up": (512, 5), "core_down": (512, 3)}, got
    assert b.within_bound and b.into_within_bound, b.worst


def test_a_core_link_over_its_paths_bound_is_evened_out_over_its_parallel_links():
    """A core's links into one pod carry destinations of different weights (the channel adapters
    whose traffic passes the core): the per-switch repair counts destinations only.  Planted: a
    destination moved onto the fullest link of its core (within the count bound a parallel
    link allows, over the paths bound); `even_core_paths` brings it back under."""
    from loom.routing.corepaths import even_core_paths
    from loom.routing.fattree import FatTreeEngine
    from loom.routing.loads import carried
    from loom.routing.zone import Zone

    t = route(expand(load_model("bench/models/ft3-parallel-core.yaml")))[0]
    sn, lft = t.subnet, t.lft.copy()
    z = Zone(sn, sn.fabric.model.zones[0])
    core = int(z.cores[0])
    ports = [p for p in range(1, sn.max_port + 1) if sn.peer_kind[core, p] and sn.switch(int(sn.peer_dev[core, p])).pod == 0]
    passing = carried(sn, lft, sn.ca_lids)[core]  # the destinations whose traffic reaches the core
    cas = [int(l) for l in sn.ca_lids[passing] if lft[core, l] in ports]
    full = max(ports, key=lambda p: sum(lft[core, l] == p for l in cas))
    moved = next(l for l in cas if lft[core, l] != full)
    lft[core, moved] = full

    def worst(tables) -> int:
        return check_balance(Walk(tables)).levels["core_down"]["into"]["max_judged_paths"]

    planted = type(t)(sn, lft.copy(), t.engine, t.warnings)
    assert worst(planted) > 512
    even_core_paths(sn, z, lft, FatTreeEngine._roles(sn))
    assert worst(type(t)(sn, lft, t.engine, t.warnings)) <= 512


#: intact trees on which one up-port index per destination cannot meet every leaf's per-role
#: bound, and the per-switch repair then split a destination over the links into its leaf
#: (found by random search; each failed `into_within_bound` before `routing.settle`)
SPLIT_TREES = [
    dict(ports=16, spines=4, links=1, leaves=4, leaf_down=8, storage=4, nodes=22),
    dict(ports=16, spines=3, links=1, leaves=8, leaf_down=4, storage=5, nodes=11),
    dict(ports=16, spines=2, links=2, leaves=7, leaf_down=2, storage=2, nodes=12),
    dict(ports=16, spines=2, links=2, leaves=5, leaf_down=8, storage=2, nodes=10),
    dict(ports=12, spines=3, links=1, leaves=3, pods=2, cores=3, spine_up=1, leaf_down=2, storage=1, nodes=10),
    dict(ports=12, spines=2, links=1, leaves=3, pods=3, cores=2, spine_up=2, leaf_down=4, storage=1, nodes=32),
]


@pytest.mark.parametrize("kw", SPLIT_TREES)
def test_leaf_up_ports_and_links_into_leaves_meet_their_bounds_together(kw):
    """Five leaves with two compute CAs each and four up-ports: every leaf sends 8 compute
    destinations (bound 2 per port) but 10 share 4 indices, so some leaves must send one
    differently — and the links into that destination's leaf must still meet their bound."""
    fabric = expand(Model.model_validate(fat_tree(**kw)))
    t = route(fabric)[0]
    b = check_balance(Walk(t))
    assert b.intact and b.within_bound and b.into_within_bound, b.worst
    assert {level: (f["into"]["max_paths"], f["into"]["max"]) for level, f in b.levels.items() if "into" in f} \
        == independent_counts(lfts_dump(t), ibsim_net(fabric))


def intact_tree(seed: int) -> dict:
    """One of a fixed series of random intact fat trees (2 and 3 layers, parallel links, partly
    populated, up to 2:1 oversubscribed): `degraded_trees` without the missing parts."""
    rng = random.Random(seed)
    if rng.random() < 0.5:
        spines, g = rng.randint(1, 3), rng.randint(1, 2)
        kw = dict(ports=12, spines=spines, links=1, leaves=rng.randint(1, 3), pods=rng.randint(2, 3), cores=spines * g,
                  spine_up=g * rng.randint(1, 2))
    else:
        kw = dict(ports=16, spines=rng.randint(1, 4), links=rng.randint(1, 2), leaves=rng.randint(2, 8))
    up = kw["spines"] * kw["links"]
    kw["leaf_down"] = rng.randint(1, min(kw["ports"] - up, 2 * up))
    total = rng.randint(1, kw["leaves"] * kw.get("pods", 1) * kw["leaf_down"])
    kw["storage"] = rng.randint(0, total // 3)
    kw["nodes"] = max(total - kw["storage"], 1)
    return fat_tree(**kw)


def test_random_intact_trees_meet_the_into_bound():
    """150 of the series (9 of them missed it before `routing.settle`; 2 of the next 1,000 still
    do, on parallel spine links and three layers — not in this sample)."""
    missed = []
    for seed in range(150):
        b = check_balance(Walk(route(expand(Model.model_validate(intact_tree(seed))))[0]))
        assert b.intact and b.within_bound, (seed, b.worst)
        if not b.into_within_bound:
            missed.append((seed, b.worst[0]))
    assert missed == []


@pytest.mark.parametrize("missing", [[("spine", 2)], [("spine", 0)]])
def test_a_dead_spines_destinations_spread_over_the_links_into_their_leaf(missing):
    """Six spines, one down: each leaf's 7 CAs come in over 5 links, so two links carry two of
    them.  The engine used to put every dead spine's destination on the next spine (two whole
    destinations on its link into every leaf: 2 × 35 sources = 70 paths); now the second CA of
    a doubled link is sent by each leaf over a different spine, and no link carries a whole
    destination more than its share.  Counted independently from the dump."""
    fabric = expand(Model.model_validate(fat_tree(ports=16, spines=6, leaves=6, leaf_down=7, nodes=42,
                                                  missing_switches=missing)))
    t = route(fabric)[0]
    b = check_balance(Walk(t))
    assert b.within_bound, b.worst
    paths, _ = independent_counts(lfts_dump(t), ibsim_net(fabric))["spine_down"]
    assert paths == b.levels["spine_down"]["into"]["max_paths"]
    assert paths < 2 * 35, paths  # below two whole destinations (7 CAs over 5 links: 1.4 of 35 sources each)


def leaf_up_ca_loads(dump: str, net: str) -> dict[str, tuple[int, int]]:
    """{leaf: (max CA destinations on one of its up-ports, ceil(the CA destinations it sends up /
    its up-ports))}, counted from the dump and the net alone."""
    peer, ca_switch = read_net(net)
    sent, table = defaultdict(lambda: defaultdict(int)), None
    for line in dump.splitlines():
        if m := TABLE.search(line):
            table = m[1]
        elif (m := ENTRY.match(line)) and table and "-leaf" in table and m[3] == "Channel Adapter" \
                and ca_switch.get(m[4]) != table:
            sent[table][int(m[2])] += 1
    out = {}
    for leaf, ports in sent.items():
        up = [p for (s, p), q in peer.items() if s == leaf and "-spine" in q]
        assert set(ports) <= set(up)
        out[leaf] = (max(ports.values()), -(-sum(ports.values()) // len(up)))
    return out


def test_leaf_up_ports_carry_their_share_of_channel_adapters():
    """11 leaves of 14 or 15 CAs, 21 up-ports each (7 spines, 3 links per pair), 18 switch LIDs:
    a leaf of 15 sends 147 CA destinations, 7 per port.  Balanced per role and in total (switch
    LIDs included, 8 per port) the engine left 8 CAs on some ports of every leaf: 120 CA-to-CA
    paths where OpenSM's updn has 112 (issue 33).  Every leaf's up-ports now carry their share of
    CAs, and the links into the leaves stay at their bound, in paths and in destinations (one
    each, as OpenSM's ftree, whose leaf up-ports carry 150); counted from the dump."""
    fabric = expand(load_model("bench/models/odd-11x7.yaml"))
    t = route(fabric)[0]
    loads = leaf_up_ca_loads(lfts_dump(t), ibsim_net(fabric))
    assert len(loads) == 11 and all(most <= share for most, share in loads.values()), loads
    b = check_balance(Walk(t))
    assert b.within_bound and b.into_within_bound, b.worst
    assert b.levels["leaf_up"]["max_paths"] == 112
    assert b.levels["spine_down"]["into"]["max"] == 1  # one destination per link into a leaf, as ftree


@pytest.mark.slow
def test_the_tables_do_not_depend_on_how_busy_the_machine_is():
    """odd-11x7's zone is settled by an integer program solved at its root node in 1.6 s on a
    quiet machine; under its old 5 s wall-clock limit a busy machine ran out of time, and the
    repair without it put 178 paths on links into leaves bound to 148 — a table that differed
    between two runs of one model.  The search is now limited in nodes (`settle.LIMITS`)."""
    fabric = expand(load_model("bench/models/odd-11x7.yaml"))
    quiet = route(fabric)[0].lft
    with hogs(cpu=4, disk=False):
        busy = route(fabric)[0].lft
    assert np.array_equal(quiet, busy)


def test_a_sparse_leafs_destination_shares_the_idle_links_into_it():
    """partly-populated: 300 CAs on 40 leaves of 20 up-links, filled leaf by leaf.  One up-port
    index per destination put every path to a one-CA leaf's CA on one link into it — 299, where
    OpenSM's updn and dfsssp have 298 — while its other 19 links carried none.  Sources now swap
    such destinations' up-ports (`routing.share`): the most paths on a link into a leaf is a
    full leaf's 280, counted from the dump, with no more destinations per link than before (2,
    as OpenSM's engines) and the leaves' up-ports as they were.  Routed again from these tables
    (what a plan does), the same tables."""
    fabric = expand(load_model("bench/models/partly-populated.yaml"))
    t = route(fabric)[0]
    net = ibsim_net(fabric)
    assert independent_counts(lfts_dump(t), net)["spine_down"] == (280, 2)
    b = check_balance(Walk(t))
    assert b.within_bound and b.into_within_bound, b.worst
    assert b.levels["leaf_up"]["max"] == 18 and b.levels["leaf_up"]["max_paths"] == 280
    assert np.array_equal(route(fabric, hint=[t])[0].lft, t.lft)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(degraded_trees())
def test_sharing_links_never_costs_another_figure(data):
    """On random fat trees (missing links and switches, partly populated): the swaps of
    `routing.share` lower or keep the most paths on a link into a leaf, keep the destinations
    per link into a leaf within the level's bound (or as they were), the leaf up-ports' figures
    and the verdicts, against the same fabric routed without them."""
    import loom.routing.fattree as fattree
    from loom.routing.zone import Zone

    fabric = expand(Model.model_validate(data))
    shared = route(fabric)[0]
    keep = fattree.share_links
    fattree.share_links = lambda *a: 0
    try:
        plain = route(fabric)[0]
    finally:
        fattree.share_links = keep
    # its own result allows no further swap: what routing it again (a plan) finds
    zones = [Zone(shared.subnet, spec) for spec in fabric.model.zones]
    assert sum(fattree.share_links(shared.subnet, z, shared.lft.copy(), fattree.FatTreeEngine._roles(shared.subnet))
               for z in zones) == 0
    a, b = check_balance(Walk(shared)), check_balance(Walk(plain))
    assert a.within_bound == b.within_bound and a.into_within_bound >= b.into_within_bound
    for level, f in b.levels.items():
        g = a.levels[level]
        if "into" in f:
            assert g["into"]["max_paths"] <= f["into"]["max_paths"], level
            assert g["into"]["max"] <= max(f["into"]["max"], f["into"]["bound"]), level
        else:
            assert (g["max"], g["max_paths"]) == (f["max"], f["max_paths"]), level
