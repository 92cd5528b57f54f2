"""RoCE marking: which priority (= traffic class = queue) and DSCP value each traffic class gets.

The model's rules check the marking (eight priorities, DSCP values that tell the classes and the
congestion notifications apart) and `loom.qos.plan` uses it to plan RoCE QoS, so it lives here,
below both: the model stage imports nothing of the stages after it.

Each class gets a priority of its own: the default class 0, lossless classes 3 and 4 first (the
priorities SONiC and NVIDIA's RoCE defaults make lossless), the others what is left; priority 6
carries the congestion notification packets (CNP, DSCP 48 by default).  DSCP: the class's own
`dscp`, else 0 for the default class, 26 for the first lossless class (NVIDIA's RoCE default),
AF (8·tc + 2) for further lossless classes and CS (8·tc) for lossy ones.
"""

from __future__ import annotations

from loom.model.schema import TrafficClass

#: RoCE priorities in the order classes take them: lossless classes from the front, lossy ones
#: from the back; 6 is the CNPs'
LOSSLESS_TCS = (3, 4, 2, 5, 1, 7)
ROCE_TCS = (0, 1, 2, 3, 4, 5, 7)
CNP_TC = 6
ROCE_DSCP = 26


def roce_marking(classes: list[TrafficClass]) -> list[tuple[int, int]]:
    """(traffic class, DSCP) per class, the default class first: see the module's docstring."""
    lossless = [c.name for c in classes if c.lossless and not c.default]
    free = [t for t in LOSSLESS_TCS if t not in LOSSLESS_TCS[:len(lossless)]]
    out = []
    for c in classes:
        if c.default:
            tc = 0
        elif c.lossless:
            tc = LOSSLESS_TCS[lossless.index(c.name)]
        else:
            tc = free.pop()
        first_lossless = bool(lossless) and c.name == lossless[0]
        dscp = c.dscp if c.dscp is not None else 0 if c.default else ROCE_DSCP if first_lossless else 8 * tc + 2 * c.lossless
        out.append((tc, dscp))
    return out
