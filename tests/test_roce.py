"""Multi-plane RoCE: routing and checks per plane, configs, and a plane run live on FRR."""

from __future__ import annotations

import ipaddress
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from loom.checks import Walk, check_deadlock
from loom.cli import app
from loom.expand import load_fabric
from loom.fabrics.ethernet.lab import running
from loom.render.frr_intent import desired_configs, interface_names
from loom.render.roce import all_switch_links, destinations, host_config, plane_links_ok, switch_config
from loom.routing import route

from .faults import plant_credit_loop

TOPO = Path(__file__).parent.parent / "topology"
LAB = Path(__file__).parent / "models" / "roce-lab.yaml"
runner = CliRunner()


def test_roce_4plane_checks_per_plane():
    r = runner.invoke(app, ["check", str(TOPO / "roce-4plane.yaml"), "--json", "--ebb-samples", "20"])
    assert r.exit_code == 0, r.output[-2000:]
    d = json.loads(r.output)
    assert len(d["planes"]) == 4
    for p in d["planes"]:
        assert p["reachable"] and p["deadlock_free"]
        assert p["balance"]["max_dest_per_up_port"] == p["balance"]["lower_bound"]
        assert p["reachability"]["ca_pairs"] == 8192 * 8191
        assert set(p["qos"]["per_vl"]) == {"3", "4"}  # the lossless priorities


def test_no_link_between_planes_and_the_check_catches_one():
    f = load_fabric(TOPO / "roce-4plane.yaml")
    assert plane_links_ok(f) == []
    c = f.cables
    bad = type(c)(**{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in c.__dict__.items()})
    host = int(np.flatnonzero(c.kind == 0)[0])
    other = next(s.index for s in f.switches if s.plane == 1 and s.role == "leaf")
    bad.b_dev[host] = other  # a NIC of plane 0 cabled into a plane-1 leaf
    assert plane_links_ok(type(f)(**{**f.__dict__, "cables": bad}))


def test_pfc_deadlock_check_catches_a_planted_bounce():
    f = load_fabric(TOPO / "c4-dualport.yaml")
    t = route(f)[0]
    assert check_deadlock(Walk(t)).deadlock_free
    bad, _ = plant_credit_loop(t, "pod")
    d = check_deadlock(Walk(bad))
    assert not d.deadlock_free and any("pod-spine" in h for h in d.cycle)


def test_static_routes_are_pinned_and_balanced(tmp_path):
    text = LAB.read_text().replace("routing: bgp", "routing: static")
    (tmp_path / "lab.yaml").write_text(text)
    f = load_fabric(tmp_path / "lab.yaml")
    t = route(f)[0]
    files = switch_config(t, 0, destinations(t), all_switch_links(f))
    routes = [l for l in files["staticd.conf"].splitlines() if l.startswith("ip route")]
    pinned = [l for l in routes if not l.endswith(" 250")]
    fallback = [l for l in routes if l.endswith(" 250")]
    assert len(fallback) == 2  # ECMP through both spines
    per_hop = {}
    for l in pinned:
        per_hop[l.split()[3]] = per_hop.get(l.split()[3], 0) + 1
    assert max(per_hop.values()) - min(per_hop.values()) <= 1  # each up-link the same number (±1)


def test_host_source_routing_one_table_per_nic():
    f = load_fabric(TOPO / "roce-4plane.yaml")
    files = host_config(f, 0)
    script = files["loom-routes.sh"]
    assert script.count("ip rule add from") == 8  # one rule per NIC
    assert script.count("table 10") >= 8
    mains = [l for l in script.splitlines() if l.startswith("ip route replace") and "table" not in l]
    assert len(mains) == 4  # the main table reaches each plane through its first NIC
    assert len({l.split()[3] for l in mains}) == 4


def lab_model(tmp_path: Path, mode: str) -> Path:
    path = tmp_path / f"lab-{mode}.yaml"
    path.write_text(LAB.read_text().replace("routing: bgp", f"routing: {mode}"))
    return path


def port_name(f, switch: str, port: int) -> str:
    """The interface the renderer (and so the live lab) gives a switch port."""
    return interface_names(f)[(next(s.index for s in f.switches if s.name == switch), port)]


def no_lab_left(tag: str) -> bool:
    return tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


@pytest.mark.slow
def test_live_bgp_plane(tmp_path):
    f = load_fabric(lab_model(tmp_path, "bgp"))
    configs = desired_configs(route(f))
    with running(f, {k: v["frr.conf"] for k, v in configs.items()}, tmp_path / "run") as lab:
        tag = lab.tag
        lab.wait(lambda: sum(st == "Established" for s in f.switches for st in lab.peers(s.name).values()) == 2 * 6, "12 BGP sessions", 60)
        remote = [str(ipaddress.IPv4Network(f"{p.address}/31", strict=False)) for p in f.ports
                  if f.nodes[p.node].name != "h0"]
        # ECMP over both spines to every remote host
        lab.wait(lambda: all(len(lab.fib("lab-leaf0").get(prefix, ())) == 2 for prefix in remote), "ECMP routes", 30)
        hosts = {f.nodes[p.node].name: p.address for p in f.ports}
        # leaf0 converged first; the other leaves' routes back to h0 follow within BGP's timers
        lab.wait(lambda: all(lab.ping(a, hosts[a], hosts[b]) for a in hosts for b in hosts if a != b),
                 "every host pinging every other", 30)
        lab.link_down("lab-leaf0", port_name(f, "lab-leaf0", 3))  # one of leaf0's two up-links
        lab.wait(lambda: all(lab.ping(a, hosts[a], hosts[b]) for a in hosts for b in hosts if a != b),
                 "traffic around the failed link", 30)
    assert no_lab_left(tag)


@pytest.mark.slow
def test_live_static_plane_fib_equals_loom(tmp_path):
    f = load_fabric(lab_model(tmp_path, "static"))
    t = route(f)[0]
    prefixes = destinations(t)
    links_of = all_switch_links(f)
    with running(f, {k: v["frr.conf"] for k, v in desired_configs([t]).items()}, tmp_path / "run") as lab:
        tag = lab.tag
        for row in range(t.subnet.n):
            name = t.subnet.name(row)
            files = switch_config(t, row, prefixes, links_of)
            want: dict[str, set[str]] = {}
            for line in files["staticd.conf"].splitlines():
                if line.startswith("ip route"):
                    want.setdefault(line.split()[2], set()).add(line.split()[3])
            lab.wait(lambda: lab.fib(name) == want, f"FIB of {name}", 20)
        hosts = {f.nodes[p.node].name: p.address for p in f.ports}
        # leaf0 converged first; the other leaves' routes back to h0 follow within BGP's timers
        lab.wait(lambda: all(lab.ping(a, hosts[a], hosts[b]) for a in hosts for b in hosts if a != b),
                 "every host pinging every other", 30)
        # a pinned up-link of leaf0 goes down: leaf0's traffic takes the ECMP fallback; flows whose
        # return path does not cross the dead link keep working (static routes cannot withdraw
        # remote routes: REFERENCE.md measured that, and bgp mode is the answer)
        lab.link_down("lab-leaf0", port_name(f, "lab-leaf0", 3))
        assert lab.ping("h1", hosts["h1"], hosts["h2"])
    assert no_lab_left(tag)
