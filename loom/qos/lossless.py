"""The lossless RoCE numbers every switch and host must agree on: MTUs, PFC priorities, ECN
marking, PFC headroom per port, buffer pools and the PFC watchdog.

Headroom (what a port must still absorb after it sends PAUSE): the bytes in flight during
two cable delays (5 ns/m each way) and the two ends' PFC response times, plus two MTU-sized
frames (one being sent when PAUSE arrives, one being received) — the shape of SONiC's and
NVIDIA's buffer calculators, simplified to one response time for both ends.  A PG resumes
(XON) once two MTUs drained.  So a longer cable or a faster port needs more headroom: the
lengths come from the cabling plan (`loom.render.cabling.cable_lengths`).

Assumptions (the model gives no switch buffer size): a 64 MiB shared buffer, a third of it
for egress lossy traffic; WRED marks ECN from 150 kB to 1.5 MB of queue at 5 % at the top;
the PFC watchdog declares a storm after 200 ms and restores after 200 ms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from loom.model.marking import CNP_TC
from loom.model.schema import Model, Qos, TrafficClass

from .plan import QosPlan, plan_qos

SWITCH_MTU = 9100  # SONiC's port MTU for fabric ports
HOST_MTU = 9000  # NIC MTU: room for an 802.1Q tag and the Ethernet header under the switch's
ROCE_MTU = 4096  # the RDMA path MTU RoCE uses on a 9000-byte link
ROCE_OVERHEAD = 60  # IPv4 20 + UDP 8 + BTH 12 + RETH 16 + ICRC 4 bytes around a RoCE payload
L2_OVERHEAD = 22  # Ethernet header 14 + 802.1Q 4 + FCS 4

CABLE_DELAY_NS_PER_M = 5.0
PFC_RESPONSE_NS = 1000.0  # one end's time to act on PAUSE (ASIC + MAC)
BUFFER_BYTES = 64 * 2**20
ECN = {"min": 150_000, "max": 1_500_000, "probability": 5}  # bytes, bytes, percent: marking starts early
PFCWD = {"detection_time": 200, "restoration_time": 200, "action": "drop", "poll_interval": 200}  # ms


@dataclass(frozen=True)
class Headroom:
    """One lossless PG's buffer on a port of this speed and cable length."""

    speed_gbps: int
    length_m: int
    xoff: int  # bytes
    xon: int

    @property
    def size(self) -> int:
        return self.xoff + self.xon

    @property
    def profile(self) -> str:
        return f"pg_lossless_{self.speed_gbps * 1000}_{self.length_m}m_profile"


def headroom(speed_gbps: int, length_m: int, mtu: int = SWITCH_MTU) -> Headroom:
    """Headroom of one lossless PG; O(1).  E.g. 400G over 5 m: 400e9/8 × (2·25 ns + 2·1 µs)
    = 102,500 bytes in flight + 2 × 9,100 = 120,700 bytes XOFF."""
    in_flight = speed_gbps * 1e9 / 8 * (2 * length_m * CABLE_DELAY_NS_PER_M + 2 * PFC_RESPONSE_NS) * 1e-9
    return Headroom(speed_gbps, length_m, math.ceil(in_flight) + 2 * mtu, 2 * mtu)


@dataclass(frozen=True)
class Lossless:
    """What the lossless configuration of every port and NIC derives from."""

    pfc: tuple[int, ...]  # the lossless priorities (= PGs = queues)
    dscp_to_tc: dict[int, int]  # every marked DSCP value, the CNPs' included
    cnp_dscp: int
    cnp_tc: int
    roce_dscp: int | None  # the DSCP RoCE traffic is sent with (the first lossless class's)
    part_roce_dscp: int | None = None  # a BiGraph: what NICs on the lower part's switches send it with
    switch_mtu: int = SWITCH_MTU
    host_mtu: int = HOST_MTU
    roce_mtu: int = ROCE_MTU


#: RoCE without `qos:` in the model: unmarked traffic lossy, RDMA lossless on DSCP 26, half each
DEFAULT_CLASSES = (TrafficClass(name="other", share=50, default=True), TrafficClass(name="roce", share=50, lossless=True))


def roce_plan(model: Model) -> QosPlan:
    """The model's classes, or `DEFAULT_CLASSES`: a RoCE fabric is always configured lossless."""
    if model.qos is not None:
        return plan_qos(model)
    return plan_qos(model.model_copy(update={"qos": Qos(classes=list(DEFAULT_CLASSES))}))


def dwrr_weights(plan: QosPlan) -> dict[int, int]:
    """Priority → its class's DWRR (switch) and ETS (NIC) weight in percent: the shares rounded,
    the first (default) class taking the remainder so the weights add up to 100.  A class with a
    priority per BiGraph part splits its share between the two."""
    pct = {}
    for c in plan.classes:
        if c.part_tc is None:
            pct[c.tc] = round(c.share * 100)
        else:
            pct[c.tc] = round(c.share * 50)
            pct[c.part_tc] = round(c.share * 50)
    pct[plan.classes[0].tc] += 100 - sum(pct.values())
    return pct


def lossless_plan(plan: QosPlan, cnp_dscp: int = 48) -> Lossless:
    lossless = [c for c in plan.classes if c.lossless]
    parts = [c for c in lossless if c.part_tc is not None]
    return Lossless(pfc=tuple(sorted([c.tc for c in lossless] + [c.part_tc for c in parts])),
                    dscp_to_tc={**{c.dscp: c.tc for c in plan.classes}, **{c.part_dscp: c.part_tc for c in parts},
                                cnp_dscp: CNP_TC},
                    cnp_dscp=cnp_dscp, cnp_tc=CNP_TC, roce_dscp=lossless[0].dscp if lossless else None,
                    part_roce_dscp=lossless[0].part_dscp if lossless else None)
