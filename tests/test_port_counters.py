"""Reading port counters and link state through the target (issue 39, step 1): the values
madquery decodes are the ones `perfquery` / `smpquery` print, both ends of every cable answer.
Real ibsim + OpenSM, the tiny fabric."""

from __future__ import annotations

import re
import subprocess

import pytest

from loom.checks.link_health import cables_of_plane, end_keys
from loom.expand import load_fabric
from loom.fabrics.infiniband.daemon import client_dir
from loom.fabrics.infiniband.sim import console
from loom.fabrics.infiniband.target import SimTarget
from loom.routing import subnet

from .simfabric import TINY

pytestmark = pytest.mark.sim

PLANTED = {"SymbolErrorCounter": 7, "LinkErrorRecoveryCounter": 5, "LinkDownedCounter": 3, "PortRcvErrors": 11,
           "PortRcvRemotePhysicalErrors": 17, "PortXmitDiscards": 9, "LocalLinkIntegrityErrors": 2,
           "ExcessiveBufferOverrunErrors": 4, "VL15Dropped": 13}


def perfquery(d, *args: str) -> dict[str, int]:
    with client_dir() as cwd:
        text = subprocess.run(["perfquery", *args], cwd=cwd, env=d.env(), capture_output=True, text=True,
                              timeout=30, check=True).stdout
    return {m.group(1): int(m.group(2), 0) for m in re.finditer(r"^(\w+):\.+(\S+)$", text, re.M)}


def test_every_cable_end_is_read_and_the_counters_are_perfquerys(tiny_up):
    d, f = tiny_up, load_fabric(TINY)
    console(d.dir, [f'PerformanceSet "z0-leaf0"[5] PortCounters.{k}={v}' for k, v in PLANTED.items()])
    t = SimTarget(d)
    sample = t.read_ports(f, subnet(f, 0))
    want = {k for i in cables_of_plane(f, 0) for k in end_keys(f, i)}
    assert set(sample["ends"]) == want and len(want) == 2 * len(cables_of_plane(f, 0))
    got = sample["ends"]["z0-leaf0/5"]
    assert {k: got["counters"][k] for k in PLANTED} == PLANTED
    lid = next(s.lid for s in f.switches if s.name == "z0-leaf0")
    pq = perfquery(d, str(lid), "5")
    assert all(pq[k] == v for k, v in PLANTED.items())
    assert got["ext"] and got["ext"]["PortXmitData"] >= got["counters"]["PortXmitData"] > 0  # 64-bit, read later
    assert got["link"] == [4, 2, 4, 4]  # Active, 4x, QDR, HDR: the tiny fabric's HDR cables
    assert sample["ends"]["z0-leaf1/5"]["counters"]["SymbolErrorCounter"] == 0  # the planted port only
    perfquery(d, "-R", str(lid), "5")
    again = t.read_ports(f, subnet(f, 0))["ends"]["z0-leaf0/5"]["counters"]
    assert again["SymbolErrorCounter"] == 0 and again["LinkDownedCounter"] == 0
