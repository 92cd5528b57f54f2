"""Link health of a running fabric: readings through the target (`port_counters`), kept over
time and judged per cable (`loom.checks.link_health`).  `loom health` takes two readings
`interval` seconds apart; the watcher keeps one `Monitor` and reads at every step."""

from __future__ import annotations

import time

from loom.checks.link_health import History, LinkHealth, cables_of_plane, judge
from loom.expand import Fabric
from loom.routing import subnet


class Monitor:
    """Readings of one fabric through one target, and the verdicts they give."""

    def __init__(self, target, fabric: Fabric) -> None:
        self.target, self.fabric = target, fabric
        self.policy = fabric.model.health
        self.sn = subnet(fabric, 0)
        self.cables = cables_of_plane(fabric, 0)
        self.history = History(max(self.policy.window_s, self.policy.clean_s))
        self.last_seconds = 0.0  # how long the last reading took

    def read(self) -> None:
        sample = self.target.read_ports(self.fabric, self.sn)
        self.last_seconds = sample["seconds"]
        self.history.add(sample)

    def judge(self) -> list[LinkHealth]:
        return judge(self.fabric, self.history, self.policy, self.cables)


def survey(target, fabric: Fabric, interval: float) -> tuple[list[LinkHealth], float]:
    """Two readings `interval` seconds apart, judged; and how long a reading took."""
    m = Monitor(target, fabric)
    m.read()
    time.sleep(interval)
    m.read()
    return m.judge(), m.last_seconds
