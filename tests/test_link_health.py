"""Judging link health from readings (issue 39, step 2): rates over a window, resets and
saturation, width and speed against the cabling plan, both ends of a cable together.  Synthetic
readings of the tiny fabric: no simulator."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from loom.checks.link_health import History, cables_of_plane, end_keys, judge, ticket_csv, worst
from loom.expand import load_fabric
from loom.model.schema import ErrorLimit, Health
from loom.model.catalogue import load_catalogue
from loom.render.cabling import cable_plan

from .simfabric import TINY

ERRORS = ("SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
          "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors")
HDR = [4, 2, 4, 4]  # Active, 4x, QDR, extended HDR


@pytest.fixture(scope="module")
def tiny():
    return load_fabric(TINY)


def reading(fabric, at: float, changes: dict[str, dict] | None = None, links: dict[str, list[int]] | None = None,
            missing: tuple[str, ...] = ()) -> dict:
    ends = {}
    for i in cables_of_plane(fabric, 0):
        for key in end_keys(fabric, i):
            counters = {k: 0 for k in ERRORS} | {"PortXmitData": 1000, "PortRcvData": 1000}
            ends[key] = {"counters": counters | (changes or {}).get(key, {}), "ext": {},
                         "link": (links or {}).get(key, HDR)}
    for key in missing:
        del ends[key]
    return {"at": at, "ends": ends}


def verdicts(fabric, samples, policy=None):
    h = History(3600)
    for s in samples:
        h.add(s)
    return {l.cable_id: l for l in judge(fabric, h, policy or Health(), cables_of_plane(fabric, 0))}


def test_a_quiet_fabric_is_healthy_and_old_counts_are_not_rates(tiny):
    old = {"z0-leaf0/5": {"SymbolErrorCounter": 5000, "LinkDownedCounter": 40}}  # counted long ago, not rising
    got = verdicts(tiny, [reading(tiny, 0, old), reading(tiny, 10, old)])
    assert {l.verdict for l in got.values()} == {"healthy"}


def test_rising_symbol_errors_degrade_then_fail_on_either_end(tiny):
    policy = Health(window_s=60)
    # 1 error in a minute's window: 60/h, over the 10/h at which a link is degraded
    one = verdicts(tiny, [reading(tiny, 0), reading(tiny, 5, {"z0-leaf0/5": {"SymbolErrorCounter": 1}})], policy)
    assert one["z0-leaf0/5"].verdict == "degraded" and "SymbolErrorCounter 60/h" in one["z0-leaf0/5"].seen[0]
    # 10 in the window: 600/h, failing; seen on the other (spine) end of the same cable
    far = end_keys(tiny, next(i for i in range(len(tiny.cables.kind)) if tiny.cable_id(i) == "z0-leaf0/5"))[1]
    bad = verdicts(tiny, [reading(tiny, 0), reading(tiny, 5, {far: {"SymbolErrorCounter": 10}})], policy)
    assert bad["z0-leaf0/5"].verdict == "failing" and far in bad["z0-leaf0/5"].seen[0]
    assert worst(list(bad.values())) == "failing"
    assert sum(l.verdict != "healthy" for l in bad.values()) == 1  # that cable only


def test_a_burst_counts_as_spread_over_the_window_not_over_the_gap_between_readings(tiny):
    burst = {"z0-leaf0/5": {"SymbolErrorCounter": 5}}
    got = verdicts(tiny, [reading(tiny, 0), reading(tiny, 5, burst)])  # the default window: an hour
    assert got["z0-leaf0/5"].verdict == "healthy"  # 5 in an hour, not 3,600/h
    assert got["z0-leaf0/5"].ends[0].rates["SymbolErrorCounter"] == pytest.approx(5.0)
    later = verdicts(tiny, [reading(tiny, 0), reading(tiny, 5, burst), reading(tiny, 7200, burst)], Health(window_s=600))
    assert later["z0-leaf0/5"].verdict == "healthy"  # the burst left the window


def test_a_reset_by_another_tool_is_not_an_error_and_errors_after_it_count(tiny):
    policy = Health(window_s=60)
    high = {"z0-leaf0/5": {k: 200 for k in ERRORS}}
    reset = verdicts(tiny, [reading(tiny, 0, high), reading(tiny, 5)], policy)  # perfquery -R: every counter to 0
    assert reset["z0-leaf0/5"].verdict == "healthy", reset["z0-leaf0/5"].seen
    after = verdicts(tiny, [reading(tiny, 0, high), reading(tiny, 5), reading(tiny, 10, {"z0-leaf0/5": {"SymbolErrorCounter": 20}})],
                     policy)
    assert after["z0-leaf0/5"].verdict == "failing"  # 20 since the reset, in a minute
    again = verdicts(tiny, [reading(tiny, 0, high), reading(tiny, 5, {"z0-leaf0/5": {"SymbolErrorCounter": 3}})], policy)
    assert again["z0-leaf0/5"].ends[0].rates["SymbolErrorCounter"] == pytest.approx(3 * 60)  # reset, then 3


def test_a_saturated_counter_is_degraded_until_reset(tiny):
    stuck = {"z0-leaf0/5": {"SymbolErrorCounter": 0xFFFF}}
    got = verdicts(tiny, [reading(tiny, 0, stuck), reading(tiny, 5, stuck)])
    assert got["z0-leaf0/5"].verdict == "degraded" and "saturated" in got["z0-leaf0/5"].seen[0]


def test_wrong_width_or_speed_is_degraded_a_down_port_is_down_a_silent_end_unknown(tiny):
    narrow = verdicts(tiny, [reading(tiny, 0, links={"z0-leaf0/5": [4, 1, 4, 4]})])
    assert narrow["z0-leaf0/5"].verdict == "degraded"
    assert narrow["z0-leaf0/5"].seen == ["z0-leaf0/5 up at 1x HDR, cabled for 4x HDR"]
    slow = verdicts(tiny, [reading(tiny, 0, links={"z0-leaf0/6": [4, 2, 4, 2]})])
    assert slow["z0-leaf0/6"].seen == ["z0-leaf0/6 up at 4x EDR, cabled for 4x HDR"]
    down = verdicts(tiny, [reading(tiny, 0, links={"z0-leaf0/5": [1, 2, 4, 4]})])
    assert down["z0-leaf0/5"].verdict == "down"
    silent = verdicts(tiny, [reading(tiny, 0, missing=("z0-leaf0/5",))])
    assert silent["z0-leaf0/5"].verdict == "unknown" and silent["z0-leaf0/5"].seen == ["z0-leaf0/5 did not answer"]


def test_limits_come_from_the_model_with_defaults_for_the_rest(tiny):
    policy = Health(window_s=60, limits={"SymbolErrorCounter": ErrorLimit(degraded=1000, failing=5000)})
    got = verdicts(tiny, [reading(tiny, 0), reading(tiny, 5, {"z0-leaf0/5": {"SymbolErrorCounter": 20, "PortRcvErrors": 20}})],
                   policy)
    assert got["z0-leaf0/5"].verdict == "failing"  # PortRcvErrors at the default limits
    assert not any("SymbolErrorCounter" in x and "failing" in x for x in got["z0-leaf0/5"].seen)  # under 5,000/h
    assert any("SymbolErrorCounter 1200/h (degraded from 1000/h)" in x for x in got["z0-leaf0/5"].seen)


def test_history_stays_small_and_knows_when_a_link_has_been_quiet(tiny):
    h = History(60)
    for t in range(0, 600, 2):
        h.add(reading(tiny, t, {"z0-leaf0/5": {"SymbolErrorCounter": min(t, 300)}}))
    assert len(h.points) <= 2 * History.POINTS + 3
    ends = ("z0-leaf0/5",)
    assert h.quiet(ends, 60) and not h.quiet(ends, 400)
    assert not History(60).quiet(ends, 60)  # no readings: not known to be quiet


def test_ticket_names_both_ends_the_part_and_what_was_seen(tiny):
    plan = cable_plan(tiny, load_catalogue(Path(TINY), tiny.model.cabling.catalogue))
    got = verdicts(tiny, [reading(tiny, 0), reading(tiny, 5, {"z0-leaf0/5": {"SymbolErrorCounter": 30}})], Health(window_s=60))
    rows = list(csv.DictReader(io.StringIO(ticket_csv(list(got.values()), plan))))
    assert len(rows) == 1
    row, cable = rows[0], next(c for c in plan if c.cable_id == "z0-leaf0/5")
    assert row["cable_id"] == "z0-leaf0/5" and row["verdict"] == "failing"
    assert (row["a_device"], row["a_port"], row["a_rack"], row["a_ru"]) == (cable.a.device, cable.a.port, cable.a.rack, str(cable.a.ru))
    assert (row["b_device"], row["b_port"]) == (cable.b.device, cable.b.port)
    assert row["part_number"] == cable.part_number and row["length_m"] == f"{cable.length_m:g}"
    assert "SymbolErrorCounter 1800/h" in row["seen"]


def test_an_xdr_link_is_judged_on_width_alone(tiny):
    from loom.checks.link_health import EndHealth, end_verdict

    e = EndHealth("x/1", width="4x", speed="speed code 0", state=4)
    assert end_verdict(e, ("4x", "XDR"), Health()) == ("healthy", [])
    e.width = "1x"
    assert end_verdict(e, ("4x", "XDR"), Health())[0] == "degraded"
