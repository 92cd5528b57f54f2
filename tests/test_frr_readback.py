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

    def sessions(self, switch: str) -> tuple[int, int]:
        return 1, 3

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
    intent = Intent(configs={"leaf0": CONFIG}, startup={}, fibs={}, optional=set())
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
    monkeypatch.setattr(importlib.import_module(module), function, seen)
    plan = tmp_path / "plan.json"
    for args, expected in (([], default), (["--timeout", "600"], 600.0)):
        r = CliRunner().invoke(app, ["apply", str(plan), *args])
        assert r.exit_code == 1 and f"timeout {expected}" in r.output, r.output
    r = CliRunner().invoke(app, ["apply", str(plan), "--timeout", "0"])
    assert r.exit_code == 2 and "--timeout" in r.output
