"""`loom show PLAN --entries --moved | --switch GLOB`: the entries a reviewer reads (issue 37).
A new switch's whole table and a new destination's routes are additions, not moves."""

from __future__ import annotations

import pytest

from loom.render.plan_report import EntryFilterError, changed_entries, select_entries


def _plan() -> dict:
    rows = lambda *r: {"rows": [list(x) for x in r]}  # noqa: E731 - a table as the plan file holds it
    return {"changes": {"destinations_moved": [{"lid": 1, "name": "gpu000"}]},
            "previous_lfts": {"z0-leaf0": rows((1, 3), (2, 4)), "z0-spine0": rows((1, 1))},
            "desired_lfts": {"z0-leaf0": rows((1, 5), (2, 4), (3, 6)), "z0-spine0": rows(),
                             "z0-leaf9": rows((1, 7), (2, 7), (3, 7))}}  # z0-leaf9: new, its whole table


def test_moved_keeps_only_routes_that_change_port_or_go():
    every = changed_entries(_plan())
    assert len(every) == 1 + 1 + 1 + 3  # leaf0: LID 1 moved, LID 3 new; spine0: LID 1 gone; leaf9: 3 new
    moved = select_entries(every, moved=True)
    assert [(e["switch"], e["lid"], e["from"], e["to"]) for e in moved] == [("z0-leaf0", 1, 3, 5), ("z0-spine0", 1, 1, None)]


def test_switch_glob_and_both_filters():
    every = changed_entries(_plan())
    assert {e["switch"] for e in select_entries(every, switch="z0-leaf*")} == {"z0-leaf0", "z0-leaf9"}
    assert select_entries(every, switch="z0-leaf[0-4]", moved=True) == [every[0]]
    assert select_entries(every, switch="Z0-LEAF*") == []  # names are case-sensitive, as everywhere in loom


def test_moved_is_refused_on_configuration_lines():
    with pytest.raises(EntryFilterError, match="--switch"):
        select_entries([{"switch": "p0-leaf0", "change": "+ router bgp 65001"}], moved=True)
