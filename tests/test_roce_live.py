"""The live Ethernet fabric as a push target: `loom sim up` on the lab model (FRR in network
namespaces, both planes), `loom plan` / `loom apply` through it, drift made by hand in one
switch's running configuration, and an apply whose FRR reload fails, rolled back.

One simulation per module (bring-up ~10 s); its state directory and namespace tag are private
to the run, and it is stopped — every daemon and namespace — also when a test fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from loom.expand import load_fabric
from loom.push import audit
from loom.fabrics.ethernet import lab as frr_lab
from loom.fabrics.ethernet.lab import FrrLab
from loom.push.journal import Journal

from .load import wait_for
from .simfabric import loom

pytestmark = pytest.mark.slow

LAB = str(Path(__file__).parent.parent / "topology" / "roce-lab.yaml")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LOOM_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        code, out = loom("sim", "up", LAB)
        lab = FrrLab.of("roce-lab")
        tag = lab.tag
        try:
            assert code == 0, out
            yield lab
        finally:
            loom("sim", "down", "--force", LAB)
            assert tag is None or tag not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
            assert not any(p.name.startswith(f"loom-frr-{tag}-") for p in Path("/tmp").iterdir())


def plan(*extra: str) -> tuple[int, str]:
    return loom("plan", LAB, *extra)


def established(lab: FrrLab, switch: str) -> int:
    """How many of the switch's BGP sessions are established."""
    return sum(st == "Established" for st in lab.peers(switch).values())


def config(text: str) -> list[str]:
    """A running configuration as the sorted list of its top-level blocks (a line and the
    indented lines under it): FRR prints independent items, such as two prefix-lists, in the
    order they were made, which a restore through `frr-reload.py` may change."""
    blocks: list[str] = []
    for line in text.splitlines():
        if line.strip() in ("", "!"):
            continue
        if line.startswith(" ") and blocks:
            blocks[-1] += "\n" + line
        else:
            blocks.append(line)
    return sorted(blocks)


def test_sim_up_plan_apply_plan(lab, tmp_path):
    code, out = loom("sim", "status", LAB, "--format", "json")
    status = json.loads(out)
    assert code == 0 and status["up"] and status["switches"] == 24 and status["hosts"] == 16 and status["daemons"] == 24 * 3  # zebra, bgpd, bfdd
    assert "roce-lab: already up" in loom("sim", "up", LAB)[1]
    # freshly racked switches: interfaces only, so every switch changes and no route is there yet
    code, out = plan("--out", str(tmp_path / "plan.json"))
    assert code == 2, out
    p = json.loads((tmp_path / "plan.json").read_text())
    assert p["technology"] == "ethernet" and p["changes"]["switches_touched"] == 24 and p["changes"]["fib_differing"] == 24
    code, out = loom("apply", str(tmp_path / "plan.json"))
    assert code == 0, out
    assert "applied and verified" in out and "128 BGP sessions established, every FIB as intended" in out
    assert sum(established(lab, s) for s in lab.switches()) == 128
    code, out = plan()
    assert code == 0 and "No changes." in out and "BGP sessions 128/128 established" in out, out
    # every host reaches every other host of each plane, each NIC sourcing its own address
    f = load_fabric(LAB)
    for plane in (0, 1):
        nics = [(f.nodes[p.node].name, p.address) for p in f.ports if p.plane == plane]
        for (a, addr_a), (_, addr_b) in zip(nics, nics[5:] + nics[:5]):
            assert lab.ping(a, addr_a, addr_b), (plane, a, addr_b)
    assert any(r["event"] == "apply" and r["ok"] for r in audit.read(lab.dir))


def test_hand_edit_shows_as_drift_and_apply_repairs_it(lab):
    assert plan()[0] == 0 or loom("apply", "--model", LAB)[0] == 0
    asn = next(s.asn for s in load_fabric(LAB).switches if s.name == "p1-lab-leaf5")
    lab.vtysh("p1-lab-leaf5", "configure terminal", f"router bgp {asn}", "address-family ipv4 unicast", "maximum-paths 1")
    code, out = plan()
    assert code == 2, out
    assert "drift:" in out and "p1-lab-leaf5" in out
    p = json.loads((lab.dir / "last-plan.json").read_text())
    assert any(l.startswith("- ") and l.endswith("maximum-paths 1") for l in p["switches"]["p1-lab-leaf5"]["changes"])
    assert p["changes"]["switches_touched"] == 1 and p["switches"]["p1-lab-leaf5"]["drift"]
    assert p["switches"]["p1-lab-leaf5"]["fib"]  # one next hop instead of four: the FIB shows it too
    code, out = loom("apply", "--model", LAB)
    assert code == 0 and "on 1 switches" in out, out
    assert plan()[0] == 0


def test_failed_reload_is_rolled_back(lab, tmp_path, monkeypatch):
    """Two switches edited by hand; the apply's reload of the second fails after changing it
    (planted): both go back to what they ran before, verified, and the apply says so."""
    assert plan()[0] == 0 or loom("apply", "--model", LAB)[0] == 0
    for s in ("p0-lab-spine1", "p0-lab-spine2"):
        lab.vtysh(s, "configure terminal", "interface lo", "description hand-edit")
    before = {s: config(lab.running_config(s)) for s in ("p0-lab-spine1", "p0-lab-spine2")}
    assert plan()[0] == 2
    once = tmp_path / "fail-once"
    once.touch()
    wrapper = tmp_path / "frr-reload-failing"
    wrapper.write_text(f"#!/bin/sh\n{frr_lab.FRR_RELOAD} \"$@\" || exit $?\n"
                       f"case \"$*\" in *p0-lab-spine2*) [ -e {once} ] && rm {once} && echo planted >&2 && exit 1;; esac\nexit 0\n")
    wrapper.chmod(0o755)
    monkeypatch.setattr(frr_lab, "FRR_RELOAD", wrapper)
    code, out = loom("apply", "--model", LAB)
    assert code == 1, out
    assert "frr-reload.py failed on p0-lab-spine2" in out and "previous configurations of 2 switches restored and verified" in out
    assert not once.exists()  # the planted failure did happen
    assert {s: config(lab.running_config(s)) for s in before} == before
    assert Journal(lab.dir).load() is None
    restore = [r for r in audit.read(lab.dir) if r["event"] == "restore"][-1]
    assert restore["ok"] and "planted" in restore["cause"]
    monkeypatch.undo()
    assert loom("apply", "--model", LAB)[0] == 0
    assert plan()[0] == 0


@pytest.mark.parametrize("phase", ["reloaded", "verified"])
def test_killed_apply_is_settled_by_the_next_command(lab, phase):
    """An apply killed (SIGKILL) after the reloads: the next command restores the previous
    configuration; killed once verified: it records the apply as done."""
    assert plan()[0] == 0 or loom("apply", "--model", LAB)[0] == 0
    lab.vtysh("p1-lab-spine0", "configure terminal", "interface lo", "description hand-edit")
    before = config(lab.running_config("p1-lab-spine0"))
    assert plan()[0] == 2
    res = subprocess.run([sys.executable, str(Path(__file__).parent / "apply_with_fault.py"), str(lab.dir / "last-plan.json"),
                          phase, "KILL"], capture_output=True, text=True, timeout=300)
    assert res.returncode == -9 and "Traceback" not in res.stderr, res.stderr
    assert Journal(lab.dir).load()["phase"] == phase
    code, out = plan()  # the next command takes the lock and settles the journal first
    assert f"was interrupted after phase '{phase}'" in out, out
    assert Journal(lab.dir).load() is None
    if phase == "reloaded":
        assert "previous configurations of 1 switches restored and verified" in out
        assert config(lab.running_config("p1-lab-spine0")) == before and code == 2
        assert loom("apply", "--model", LAB)[0] == 0
    else:
        assert "recorded as applied" in out and code == 0, out


def test_ssh_target_plans_and_applies_on_the_switches(lab, tmp_path, monkeypatch):
    """The same plan and apply through the SSH target: each switch an ssh host (the lab's FRR
    behind one sshd on 127.0.0.1, tests/frrsshd.py), vtysh and frr-reload.py run over ssh."""
    from .frrsshd import SwitchesOverSsh

    assert plan()[0] == 0 or loom("apply", "--model", LAB)[0] == 0
    monkeypatch.setenv("LOOM_SSH_STATE_DIR", str(tmp_path / "ssh-state"))
    with SwitchesOverSsh(lab, tmp_path / "sshd") as ssh:
        via_ssh = ("--target", "ssh", "--inventory", str(ssh.inventory), "--ssh-config", str(ssh.ssh_config))
        lab.vtysh("p0-lab-leaf2", "configure terminal", "interface lo", "description hand-edit")
        code, out = plan(*via_ssh)
        assert code == 2, out
        p = json.loads((tmp_path / "ssh-state" / "roce-lab" / "last-plan.json").read_text())
        assert p["target"]["kind"] == "ssh" and len(p["target"]["switches"]) == 24
        assert any("hand-edit" in l for l in p["switches"]["p0-lab-leaf2"]["changes"])
        code, out = loom("apply", "--model", LAB, "--target", "ssh")
        assert code == 0 and "every FIB as intended" in out, out
        assert "hand-edit" not in lab.running_config("p0-lab-leaf2")
        code, out = plan(*via_ssh)
        assert code == 0 and "No changes." in out, out
        key = ssh.key.read_text()
        for f in (tmp_path / "ssh-state" / "roce-lab").iterdir():
            if f.is_file():
                assert str(ssh.key) not in f.read_text() and key not in f.read_text()


def test_sim_link_pulls_a_cable_of_the_live_lab(lab):
    """`loom sim link down|up` on an Ethernet model: both ends of the cable's veth go down (BGP on
    that link drops), status lists it, and `up` brings the session back."""
    assert plan()[0] == 0 or loom("apply", "--model", LAB)[0] == 0
    f = load_fabric(LAB)
    c = f.cables
    up = next(i for i in range(len(c)) if c.a_kind[i] == c.b_kind[i] == 0 and f.switches[int(c.a_dev[i])].role == "leaf")
    leaf, port = f.switches[int(c.a_dev[up])], int(c.a_port[up])  # a leaf's up-link to a spine
    sessions_up = established(lab, leaf.name)
    code, out = loom("sim", "link", "down", LAB, f"{leaf.name}:{port}")
    assert code == 0 and "link down:" in out, out
    cable = out.split("link down:")[1].strip()
    status = json.loads(loom("sim", "status", LAB, "--format", "json")[1])
    assert status["links_down"] == [cable]
    ends = frr_lab.cable_ends(f)[next(i for i in range(len(f.cables)) if f.cable_id(i) == cable)]
    for device, ifname in ends:
        shown = subprocess.run(["ip", "-n", lab.netns(device), "-j", "link", "show", ifname], capture_output=True, text=True)
        assert json.loads(shown.stdout)[0]["operstate"] == "DOWN", (device, ifname)
    lab.wait(lambda: established(lab, leaf.name) < sessions_up, "the BGP session over the pulled cable to drop", 30)
    assert loom("sim", "link", "down", LAB, f"{leaf.name}:{port}")[1].startswith("already down")
    code, out = loom("sim", "link", "up", LAB, f"{leaf.name}:{port}")
    assert code == 0 and f"link up: {cable}" in out, out
    lab.wait(lambda: established(lab, leaf.name) == sessions_up, "the BGP session back", 60)
    assert json.loads(loom("sim", "status", LAB, "--format", "json")[1])["links_down"] == []


def test_a_pulled_cable_and_a_marked_one_are_planned_as_the_fabric_stands(lab, tmp_path):
    """Issue 32 on Ethernet: a pulled cable is named by the plan (observed on the switches' own
    links), BGP withdraws its routes and the plan says so ("as it stands"), applying whatever
    is left verifies (a hand edit undone on the switch whose session is down: the read-back
    waits for the sessions of the fabric as it stands, not for the one over the pulled cable); a cable marked down takes its BGP neighbours out of the configuration;
    marked up and back, the next plan returns to the design.  Every leg ends with "No changes"."""
    import shutil

    for name in ("roce-lab.yaml", "roce-lab.lock.json"):  # a copy: the mark goes into its lock
        shutil.copy(Path(LAB).with_name(name), tmp_path / name)
    model = str(tmp_path / "roce-lab.yaml")

    def settled() -> str:
        """Plan until BGP has converged (a plan made while it reconverges shows FIB differences;
        applying such a plan only waits for the same), then apply if needed: "No changes"."""
        code, out = loom("plan", model)
        if code == 2:
            assert loom("apply", "--model", model)[0] == 0
            code, out = loom("plan", model)
        assert code == 0 and "No changes" in out, out
        return out

    settled()
    assert loom("sim", "link", "down", model, "p0-lab-leaf0:5")[0] == 0
    out = wait_for("BGP to withdraw the pulled cable's routes", lambda: (lambda r: r[1] if r[0] == 0 else None)(loom("plan", model)), 60)
    assert "observed: p0-lab-leaf0/5" in out and "as it stands" in out, out
    # a change applied while the cable is out verifies: the session over it is not waited for
    lab.vtysh("p0-lab-leaf0", "configure terminal", "interface lo", "description hand-edit")
    assert loom("plan", model)[0] == 2
    code, out = loom("apply", "--model", model, "--timeout", "60")
    assert code == 0 and "applied and verified" in out, out
    code, out = loom("plan", model)
    assert code == 0 and "No changes" in out and "as it stands" in out, out
    code, out = loom("mark", "down", model, "p0-lab-leaf0/5", "--reason", "CRC errors")
    assert code == 0, out
    code, out = loom("plan", model)
    assert code == 2 and "declared: p0-lab-leaf0/5 (CRC errors)" in out, out  # its BGP neighbours leave the configuration
    assert "as it stands" in settled()
    assert loom("sim", "link", "up", model, "p0-lab-leaf0:5")[0] == 0
    assert loom("mark", "up", model, "p0-lab-leaf0/5")[0] == 0
    code, out = loom("plan", model)
    assert code == 2 and "as built" not in out, out
    assert "as it stands" not in settled()


def test_sim_up_settles_an_apply_that_died_while_the_lab_went_down(lab):
    """Issue 34: an apply killed after its reloads, then the lab stopped (a reboot) with the
    journal pending: `loom sim up` brings the daemons up and restores the previous configuration
    there and then, instead of leaving the journal to the next command.  Runs last: the lab
    comes back under a new tag."""
    assert plan()[0] == 0 or loom("apply", "--model", LAB)[0] == 0
    lab.vtysh("p1-lab-spine0", "configure terminal", "interface lo", "description hand-edit")
    before = config(lab.running_config("p1-lab-spine0"))
    assert plan()[0] == 2
    res = subprocess.run([sys.executable, str(Path(__file__).parent / "apply_with_fault.py"), str(lab.dir / "last-plan.json"),
                          "reloaded", "KILL"], capture_output=True, text=True, timeout=300)
    assert res.returncode == -9 and Journal(lab.dir).load()["phase"] == "reloaded", res.stderr
    FrrLab.of("roce-lab").down()  # the machine went down: no loom command settled it
    code, out = loom("sim", "up", LAB)
    assert code == 0 and "was interrupted after phase 'reloaded'" in out and "restored and verified" in out, out
    assert Journal(lab.dir).load() is None
    assert config(FrrLab.of("roce-lab").running_config("p1-lab-spine0")) == before  # the state before the apply, hand edit and all
    assert [e for e in audit.read(lab.dir) if e["event"] == "interrupted apply resolved"][-1]["ok"]
