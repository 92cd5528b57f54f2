"""An Ethernet apply whose read-back waits in vain for a BGP session says which neighbour is down
and why (its state, the last reset, BFD), read from `show bgp neighbors json` — the first thing
an operator would look at — instead of only a count."""

from __future__ import annotations

import json

import pytest

from loom.fabrics.ethernet.apply import verify
from loom.fabrics.ethernet.answers import sessions_down
from loom.fabrics.ethernet.plan import Intent
from loom.push.errors import TargetError

CONFIG = "frr defaults datacenter\nhostname leaf0\n!\n"


def neighbour(state: str, desc: str | None = None, **extra) -> dict:
    return {"bgpState": state, **({"nbrDesc": desc} if desc else {}), **extra}


NEIGHBOURS = {
    "10.0.0.0": neighbour("Established", "spine0 Ethernet32"),
    "10.0.0.2": neighbour("Active", "spine1 Ethernet40", lastResetDueTo="BGP Notification send",
                          lastNotificationReason="Cease/BFD Down", peerBfdInfo={"status": "Down"}),
    "10.0.0.4": neighbour("Connect"),
}


class Stuck:
    """A target whose switch holds its configuration but lacks one of its sessions."""

    def __init__(self, neighbours: str) -> None:
        self._neighbours = neighbours

    def running_config(self, switch: str) -> str:
        return CONFIG

    def fib(self, switch: str) -> dict:
        return {}

    def peers(self, switch: str) -> dict[str, str]:
        return {a: n["bgpState"] for a, n in NEIGHBOURS.items()}

    def neighbours(self, switch: str) -> str:
        if self._neighbours == "unreachable":
            raise TargetError("leaf0: `vtysh` gave no answer within 30s")
        return self._neighbours


def test_sessions_down_names_each_neighbour_with_its_state_and_reason():
    assert sessions_down(json.dumps(NEIGHBOURS)) == [
        "10.0.0.2 (spine1 Ethernet40) Active, last reset: BGP Notification send / Cease/BFD Down, BFD Down",
        "10.0.0.4 Connect"]
    assert sessions_down("{}") == []
    with pytest.raises(TargetError, match=r"leaf0: `show bgp neighbors json` printed no JSON"):
        sessions_down("% bgpd is not running", "leaf0")
    with pytest.raises(TargetError, match=r"printed JSON of another shape \(at 10.0.0.2.bgpState"):
        sessions_down(json.dumps({"10.0.0.2": {"bgpState": 7}}), "leaf0")


@pytest.mark.parametrize("answer, expected", [
    (json.dumps(NEIGHBOURS), "leaf0: BGP sessions 1/3 established (not established: 10.0.0.2 (spine1 Ethernet40) Active, "
                             "last reset: BGP Notification send / Cease/BFD Down, BFD Down; 10.0.0.4 Connect)"),
    ("unreachable", "leaf0: BGP sessions 1/3 established (its neighbours could not be read: leaf0: `vtysh` gave no answer"),
    ("[]", "leaf0: BGP sessions 1/3 established (its neighbours could not be read: leaf0: `show bgp neighbors json` printed "
           "JSON of another shape"),
])
def test_a_read_back_short_of_a_session_says_which_and_why(answer, expected):
    intent = Intent(configs={"leaf0": CONFIG}, startup={}, fibs={}, optional=set(), peers={"leaf0": set(NEIGHBOURS)})
    with pytest.raises(TargetError) as exc:
        verify(Stuck(answer), intent, {}, ["leaf0"], timeout=0)
    assert "read-back of 1 switch(es) differs from the intent after 0s" in str(exc.value)
    assert expected in str(exc.value)


@pytest.mark.parametrize("technology, module, function, default", [
    ("ethernet", "loom.fabrics.ethernet.apply", "apply_frr_plan", 120.0),
    ("infiniband", "loom.fabrics.infiniband.apply", "apply_plan", 180.0),
])
def test_apply_timeout_reaches_the_technologys_apply(tmp_path, monkeypatch, technology, module, function, default):
    """`loom apply --timeout S`: how long the push and read-back may take before the apply
    restores (a large fabric's BGP converges slower than the lab's); each technology's default
    without it."""
    import importlib

    from typer.testing import CliRunner

    import loom.push.planfile
    from loom.cli import app
    from loom.push.errors import PlanError

    def seen(plan, plan_path, timeout, **_):
        raise PlanError(f"timeout {timeout}")

    monkeypatch.setattr(loom.push.planfile, "read_plan", lambda path: {"technology": technology})
    # a plan of no shape: what is seen here is the timeout, past the shape check apply runs first
    monkeypatch.setattr(importlib.import_module(f"loom.fabrics.{technology}.plan"), "check_shape", lambda plan, path: None)
    monkeypatch.setattr(importlib.import_module(module), function, seen)
    plan = tmp_path / "plan.json"
    for args, expected in (([], default), (["--timeout", "600"], 600.0)):
        r = CliRunner().invoke(app, ["apply", str(plan), *args])
        assert r.exit_code == 1 and f"timeout {expected}" in r.output, r.output
    r = CliRunner().invoke(app, ["apply", str(plan), "--timeout", "0"])
    assert r.exit_code == 2 and "--timeout" in r.output


class Flapping(Stuck):
    """All sessions up at the first poll, one down again when the records are read, then up."""

    def __init__(self) -> None:
        super().__init__("{}")
        up = {a: "Established" for a in NEIGHBOURS}
        self.answers = iter([up, {**up, "10.0.0.2": "Idle"}, up, up])

    def peers(self, switch: str) -> dict[str, str]:
        return next(self.answers)


def test_the_records_keep_a_read_that_was_itself_verified():
    """A session that drops between the wait's last poll and the read the records keep sends the
    read-back back to waiting: what `last-applied-frr.json` keeps is a state that passed."""
    intent = Intent(configs={"leaf0": CONFIG}, startup={}, fibs={}, optional=set(), peers={"leaf0": set(NEIGHBOURS)})
    target = Flapping()
    records = verify(target, intent, {}, ["leaf0"], timeout=30)
    assert records["leaf0"]["sessions"] == [3, 3] and records["leaf0"]["residual"] == []
    assert next(target.answers, None) is None  # polled again after the drop


def test_what_a_switch_prints_cannot_break_the_message_or_the_restore():
    """A neighbour description is the switch's text: Rich markup in it is printed as text (an
    unbalanced tag would raise before the restore), and an integer longer than Python converts
    is refused like any other unreadable answer."""
    from loom.cli.common import progress

    down = sessions_down(json.dumps({"10.0.0.2": neighbour("Active", "to spine1 [/uplinks] [bold]")}), "leaf0")
    progress(f"apply failed (read-back: {down[0]}); restoring the previous configurations")
    with pytest.raises(TargetError, match="leaf0: `show bgp summary json` printed JSON Loom cannot read"):
        from loom.fabrics.ethernet.answers import bgp_peers

        bgp_peers('{"x": ' + "9" * 5000 + "}", "leaf0")


def test_the_readers_on_real_answers_from_the_lab():
    """The fuzzer's seeds are the live lab's answers on p1-lab-leaf0 with its cable to spine0
    pulled: each reader gives what that state is (independent of the fuzz cases built on them)."""
    from pathlib import Path

    from loom.fabrics.ethernet.answers import bgp_peers, carriers, kernel_routes

    seeds = Path(__file__).parent / "fuzz" / "seeds"
    peers = bgp_peers((seeds / "frr-bgp-summary.json").read_text())
    assert len(peers) == 4 and [a for a, st in peers.items() if st != "Established"] == ["10.0.128.0"]
    down = sessions_down((seeds / "frr-bgp-neighbors.json").read_text())
    assert len(down) == 1 and down[0].startswith("10.0.128.0 (p1-lab-spine0 Ethernet32) Active") and "BFD Down" in down[0]
    routes = kernel_routes((seeds / "frr-ip-route.json").read_text())
    assert routes["10.0.128.66/31"] == {"10.0.128.2", "10.0.128.4", "10.0.128.6"}  # ECMP over the three spines left
    assert all("10.0.128.0" not in gws for gws in routes.values())
    links = carriers((seeds / "frr-ip-link.json").read_text())
    assert links["Ethernet32"] is False and all(v for k, v in links.items() if k != "Ethernet32")


class Silent(Stuck):
    """A switch whose bgpd does not answer (over SSH, `vtysh -d bgpd` exits 1): no neighbours."""

    def peers(self, switch: str) -> dict[str, str]:
        return {}

    def neighbours(self, switch: str) -> str:
        return "{}"


def test_a_switch_without_its_neighbours_is_short_of_the_intent_not_of_itself():
    """The read-back counts against the sessions the intent expects, not against what the switch
    says it has: a switch whose bgpd is down (no neighbours at all) is 0/3, each named — before,
    it read 0/0 and passed.  A neighbour over a cable that is down (not in the intent's peers of
    the fabric as it stands) is not waited for."""
    intent = Intent(configs={"leaf0": CONFIG}, startup={}, fibs={}, optional=set(), peers={"leaf0": set(NEIGHBOURS)})
    with pytest.raises(TargetError) as exc:
        verify(Silent("{}"), intent, {}, ["leaf0"], timeout=0)
    assert "leaf0: BGP sessions 0/3 established (not established: 10.0.0.0 not configured on leaf0; " in str(exc.value)
    as_it_stands = Intent(configs={"leaf0": CONFIG}, startup={}, fibs={}, optional=set(), peers={"leaf0": {"10.0.0.0"}})
    assert verify(Stuck("{}"), as_it_stands, {}, ["leaf0"], timeout=0)["leaf0"]["sessions"] == [1, 1]


def test_a_route_over_a_next_hop_of_the_other_family_is_read_with_it():
    """An IPv4 route with an IPv6 next hop (`via`, RFC 5549 — unnumbered BGP) is a route with
    that next hop, not a missing route; single and multipath alike."""
    from loom.fabrics.ethernet.answers import kernel_routes

    answer = json.dumps([
        {"dst": "10.0.0.8/31", "via": {"family": "inet6", "host": "fe80::1"}, "dev": "Ethernet0", "flags": []},
        {"dst": "10.0.0.10/31", "nexthops": [{"via": {"family": "inet6", "host": "fe80::2"}, "dev": "Ethernet4"},
                                            {"gateway": "10.0.0.3", "dev": "Ethernet8"}], "flags": []},
        {"dst": "10.0.0.12/31", "dev": "Ethernet0", "flags": []}])
    assert kernel_routes(answer) == {"10.0.0.8/31": {"fe80::1"}, "10.0.0.10/31": {"fe80::2", "10.0.0.3"}}
    with pytest.raises(TargetError, match=r"at 0.via.host"):
        kernel_routes(json.dumps([{"dst": "10.0.0.8/31", "via": {"family": "inet6"}}]), "leaf0")
