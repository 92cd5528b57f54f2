"""Ethernet plans without a live fabric: the FIB intent (static and eBGP ECMP), FRR's own
configuration diff, drift, the plan's checks, and the live simulation's size limit.  A
`PaperSwitches` target holds running configurations and FIBs in memory (the live target is
exercised by tests/test_roce_live.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric
from loom.push.planfile import content_digest
from loom.push.errors import PlanError
from loom.fabrics.ethernet.plan import LAST_APPLIED, check_frr_plan, config_changes, frr_has_changes, intent_of, make_frr_plan, sha
from loom.fabrics.ethernet.reload import delta
from loom.render.frr_intent import fib_differences, link_prefixes, static_fib

TOPO = Path(__file__).parent.parent / "topology"
LAB = TOPO / "roce-lab.yaml"
SMALL = Path(__file__).parent / "models" / "roce-lab.yaml"  # one plane, 5 switches: quick plans
runner = CliRunner()


class PaperSwitches:
    """A target whose switches run `running` and hold `fibs` (a test double of FrrSimTarget)."""

    kind = "sim"

    def __init__(self, directory: Path, running: dict[str, str], fibs: dict[str, dict],
                 established: dict[str, set[str]] | None = None) -> None:
        self.dir, self.running, self.fibs = directory, running, fibs
        self.established = established or {}  # per switch, the BGP neighbours whose sessions are up
        self.no_carrier: set[str] = set()  # "switch/ifname" of interfaces whose cable is pulled

    def spec(self) -> dict:
        return {"kind": "sim", "technology": "ethernet"}

    def where(self) -> str:
        return "paper"

    def health(self) -> None:
        pass

    def cabled_as(self, fabric) -> bool:
        return True

    def switches(self) -> list[str]:
        return list(self.running)

    def running_config(self, switch: str) -> str:
        return self.running[switch]

    def links(self, switch: str) -> str:
        ifs = {x.split("/", 1)[1] for x in self.no_carrier if x.startswith(switch + "/")}
        return json.dumps([{"ifname": i, "flags": ["BROADCAST", "UP"]} for i in sorted(ifs)])

    def fib(self, switch: str) -> dict:
        return self.fibs[switch]

    def peers(self, switch: str) -> dict[str, str]:
        return {a: "Established" for a in self.established.get(switch, set())}


@pytest.fixture(scope="module")
def intent():
    return intent_of(load_fabric(LAB))


def test_static_fib_keeps_the_lowest_distance_and_its_ecmp():
    conf = "ip route 10.0.0.0/31 10.1.0.1\nip route 10.0.0.0/31 10.1.0.3\nip route 10.0.0.0/31 10.1.0.5 250\n" \
           "ip route 10.9.0.0/16 10.1.0.5 250\n! ip route 1.2.3.0/24 9.9.9.9\n"
    assert static_fib(conf) == {"10.0.0.0/31": {"10.1.0.1", "10.1.0.3"}, "10.9.0.0/16": {"10.1.0.5"}}


def test_bgp_intent_is_up_down_ecmp(intent):
    f = load_fabric(LAB)
    leaf, spine = intent.fibs["p0-lab-leaf0"], intent.fibs["p0-lab-spine0"]
    remote = [p for p in f.ports if p.plane == 0 and f.nodes[p.node].name not in ("n00", "n08")]
    nic = next(k for k in leaf if k.startswith(remote[3].address.rsplit(".", 1)[0]))
    assert len(leaf[nic]) == 4  # through every spine of the plane
    assert all(len(hops) == 1 for hops in spine.values())  # a spine goes down to one leaf
    loopbacks = {s.name: f"{s.loopback}/32" for s in f.switches}
    assert loopbacks["p0-lab-spine1"] not in spine  # eBGP: the shared spine ASN makes spine→leaf→spine a loop
    assert len(leaf[loopbacks["p0-lab-spine1"]]) == 1  # straight up to that spine
    assert not any(k in intent.fibs["p1-lab-leaf0"] for k in leaf if k.startswith("10."))  # planes apart


def test_fib_differences_catch_planted_faults(intent):
    want = intent.fibs["p0-lab-leaf2"]
    prefixes = sorted(want)
    have = {k: set(v) for k, v in want.items()}
    have[prefixes[0]].pop()  # an ECMP member lost
    del have[prefixes[1]]  # a route missing
    have["192.0.2.0/24"] = {"10.0.0.1"}  # a route nobody asked for
    optional = link_prefixes(load_fabric(LAB))
    have[sorted(optional)[0]] = {"10.0.0.1"}  # a switch-to-switch /31 redistributed: allowed
    bad = fib_differences(want, have, optional)
    assert len(bad) == 3, bad
    assert any("missing" in l for l in bad) and any("not in the intent" in l for l in bad) and any(", want " in l for l in bad)
    assert fib_differences(want, want, optional) == []


def test_frr_diff_and_the_residual_of_a_reload(intent):
    desired = intent.configs["p0-lab-leaf0"]
    assert delta(desired, desired) == []
    edited = desired.replace("maximum-paths 64", "maximum-paths 1")
    lines = delta(desired, edited)
    assert [l for l in lines if l.startswith("-")] == [l for l in lines if l.endswith("maximum-paths 1")]
    assert any(l.startswith("+") and l.endswith("maximum-paths 64") for l in lines)
    # lines FRR reports right after a verified reload of the same configuration are left out
    last = {"desired_sha256": sha(desired), "residual": lines[:1]}
    assert config_changes(desired, edited, last) == lines[1:]
    assert config_changes(desired.replace("64", "32"), edited, last) == delta(desired.replace("64", "32"), edited)


def paper(tmp_path: Path, intent) -> PaperSwitches:
    return PaperSwitches(tmp_path, dict(intent.configs), {k: {p: set(h) for p, h in v.items()} for k, v in intent.fibs.items()},
                         {k: set(v) for k, v in intent.peers.items()})


def test_plan_no_changes_then_a_change_and_drift(tmp_path):
    f = load_fabric(SMALL)
    intent = intent_of(f)
    target = paper(tmp_path, intent)
    p = make_frr_plan(SMALL, f, target)
    assert not frr_has_changes(p) and p["drift"] is None
    (tmp_path / LAST_APPLIED).write_text(json.dumps({n: {"desired_sha256": sha(c), "running_sha256": sha(c), "residual": []}
                                                     for n, c in intent.configs.items()}))
    target.running["lab-spine1"] = target.running["lab-spine1"].replace("maximum-paths 64", "maximum-paths 2")
    target.fibs["lab-spine1"].popitem()
    p = make_frr_plan(SMALL, f, target)
    assert frr_has_changes(p)
    assert p["changes"]["switches_touched"] == 1 and p["changes"]["per_switch"] == {"lab-spine1": 2}
    assert p["changes"]["fib_differing"] == 1 and "lab-spine1" in p["drift"]


def test_plan_checks_refuse_edits_and_a_changed_model(tmp_path):
    model = tmp_path / "lab.yaml"
    model.write_text(SMALL.read_text())
    f = load_fabric(model)
    p = make_frr_plan(model, f, paper(tmp_path, intent_of(f)))
    check_frr_plan(p)
    edited = json.loads(json.dumps(p))
    edited["switches"]["lab-leaf1"]["desired"] += "ip route 0.0.0.0/0 10.0.0.1\n"
    with pytest.raises(PlanError, match="modified after"):
        check_frr_plan(edited)
    edited["plan_sha256"] = content_digest(edited)  # re-signed by hand: still not what the model renders
    with pytest.raises(PlanError, match="lab-leaf1 are not what"):
        check_frr_plan(edited)
    for broken in ({"switches": []}, {"switches": {"lab-leaf1": {"desired": 1}}}, {"changes": {"switches_touched": 0}}):
        edited = {**json.loads(json.dumps(p)), **broken}
        edited["plan_sha256"] = content_digest(edited)
        with pytest.raises(PlanError, match="run `loom plan` again"):
            check_frr_plan(edited)
    model.write_text(SMALL.read_text() + "\n# edited\n")
    with pytest.raises(PlanError, match="changed since the plan"):
        check_frr_plan(p)


def test_too_big_to_run_live_is_refused_with_the_size_and_the_lab_model():
    r = runner.invoke(app, ["sim", "up", str(TOPO / "roce-4plane.yaml")])
    assert r.exit_code == 1
    assert "768 switches" in r.output and "GB" in r.output and "topology/roce-lab.yaml" in r.output
    assert "Traceback" not in r.output


def test_show_reads_an_ethernet_plan_with_its_configuration_lines(tmp_path):
    """`loom show PLAN` takes an Ethernet plan too (its backend checks its shape and prints it);
    `--entries` lists the configuration lines it changes, `--json --entries` the same as data;
    a plan whose target lost its kind is refused cleanly."""
    f = load_fabric(SMALL)
    target = paper(tmp_path, intent_of(f))
    target.running["lab-spine1"] = target.running["lab-spine1"].replace("maximum-paths 64", "maximum-paths 2")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(make_frr_plan(SMALL, f, target)))
    r = CliRunner().invoke(app, ["show", str(path), "--entries"])
    assert r.exit_code == 0 and "configuration lines on" in r.output and "lab-spine1  " in r.output, r.output
    assert "maximum-paths" in r.output and "Traceback" not in r.output, r.output
    r = CliRunner().invoke(app, ["show", str(path), "--json", "--entries"])
    entries = json.loads(r.stdout)["entries"]
    assert r.exit_code == 0 and entries and {e["switch"] for e in entries} == {"lab-spine1"}, r.output
    broken = json.loads(path.read_text())
    broken["target"] = {}
    path.write_text(json.dumps(broken))
    r = CliRunner().invoke(app, ["show", str(path)])
    assert r.exit_code == 1 and "make a new plan" in r.output and "Traceback" not in r.output, r.output


def test_a_pulled_cable_is_named_and_planned_as_the_fabric_stands(tmp_path):
    """Issue 32: a cable without carrier is observed down (the switches' own `ip -j link`); the
    plan names it and intends the FIBs BGP leaves without it, the configurations unchanged (the
    session over it just goes down), and apply's check accepts exactly that plan."""
    from loom.expand import SWITCH
    from loom.render.frr_intent import interface_names

    f = load_fabric(SMALL)
    target = paper(tmp_path, intent_of(f))
    c = f.cables
    i = next(i for i in range(len(c)) if int(c.a_kind[i]) == SWITCH and int(c.b_kind[i]) == SWITCH)
    sw, port = int(c.a_dev[i]), int(c.a_port[i])
    target.no_carrier = {f"{f.switches[sw].name}/{interface_names(f)[(sw, port)]}"}
    p = make_frr_plan(SMALL, f, target)
    assert [d["name"] for d in p["as_built"]["observed"]] == [f.cable_id(i)]
    assert p["changes"]["switches_touched"] == 0 and p["changes"]["fib_differing"] > 0  # BGP withdraws, nothing to configure
    assert check_frr_plan(p).fibs != intent_of(f).fibs
    target.fibs = {k: {q: set(h) for q, h in v.items()} for k, v in check_frr_plan(p).fibs.items()}  # BGP converged
    assert not frr_has_changes(make_frr_plan(SMALL, f, target))
