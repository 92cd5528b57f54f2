"""Link health from port counters: per cable, both ends together, judged on error *rates* over a
window, and on the active width and speed against what the cabling plan says the cable is.

A reading ("sample", made by the target: `loom.fabrics.infiniband.port_counters`) holds, per
cable end `device/port`, its PortCounters, the 64-bit PortCountersExtended where the node
answers them, and its PortInfo link [state, width, speed, extended speed], with the time it was
taken.  `History` keeps a fabric's readings and turns them into per-end error counts that only
go up:

- a counter that went *down* was reset by someone else (`perfquery -R`, a switch reboot): the
  errors since then are the new value (a lower bound), never a negative rate or an alarm;
- PortCounters saturate at their maximum (IBA 16.1.3.5: they stop, they do not wrap); a
  saturated error counter no longer counts anything and is reported as degraded until reset;
- a 64-bit extended counter that goes down is taken as a reset too (a wrap of 2^64 bytes does
  not happen within a window).

Rates are errors per hour over the last `window_s` seconds of readings (default an hour), and
a window is never taken shorter than `window_s`: a burst of 5 symbol errors between two
readings 5 s apart counts as 5 in the window (5/h by default), not as 3,600/h.

Verdicts, worst of either end: **failing** (an error rate at or above its `failing` limit: the
watcher drains the link), **degraded** (an error rate at or above `degraded`, a saturated error
counter, the link up at a narrower width or a lower speed than its cable), **down** (not Active:
the watcher's link-down path handles it), **unknown** (an end did not answer), else **healthy**.
Limits are the model's `health.limits` (`loom.model.schema.Health`, which says where the
defaults come from).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from loom.expand import HOST, Fabric
from loom.model.schema import SPEEDS_GBPS, Health

ACTIVE = 4  # PortInfo PortState
#: PortInfo LinkWidthActive codes (IBA 14.2.5.6)
WIDTHS = {1: "1x", 2: "4x", 4: "8x", 8: "12x", 16: "2x"}
#: LinkSpeedExtActive codes, then LinkSpeedActive's (used when no extended speed is active)
EXT_SPEEDS = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR"}
SPEEDS = {1: "SDR", 2: "DDR", 4: "QDR"}
#: width saturation values of the error counters (bits in PortCounters)
COUNTER_BITS = {"SymbolErrorCounter": 16, "LinkErrorRecoveryCounter": 8, "LinkDownedCounter": 8, "PortRcvErrors": 16,
                "LocalLinkIntegrityErrors": 4, "ExcessiveBufferOverrunErrors": 4}
TRAFFIC = ("PortXmitData", "PortRcvData")  # 64-bit where the node has them, in 4-byte words (IBA)
VERDICTS = ("healthy", "unknown", "down", "degraded", "failing")  # worst last


def end_keys(fabric: Fabric, cable: int) -> tuple[str, str]:
    """The two ends of a cable as `device/port` (a CA by its name: `z0-c01-hca0/1`)."""
    c = fabric.cables
    out = []
    for side in ("a", "b"):
        kind, dev, port = (int(getattr(c, f"{side}_{f}")[cable]) for f in ("kind", "dev", "port"))
        if kind == HOST:
            hp = fabric.ports[dev]
            out.append(f"{hp.ca}/{hp.port}")
        else:
            out.append(f"{fabric.switches[dev].name}/{port}")
    return out[0], out[1]


def cables_of_plane(fabric: Fabric, plane: int) -> list[int]:
    """The cables a target of `plane` can read: that plane's, minus those of switches the model lists as down."""
    c, down = fabric.cables, fabric.down_switches
    return [i for i in range(len(c)) if int(c.plane[i]) == plane
            and not any(int(k) != HOST and int(d) in down for k, d in ((c.a_kind[i], c.a_dev[i]), (c.b_kind[i], c.b_dev[i])))]


def expected(fabric: Fabric, cable: int) -> tuple[str, str]:
    """(width, speed) the cabling plan says the cable runs at: 4x at its speed's name."""
    gbps = int(fabric.cables.speed_gbps[cable])
    return "4x", next(k for k, v in SPEEDS_GBPS.items() if v == gbps and not k.endswith("GbE"))


def active(link: list[int]) -> tuple[str, str]:
    """(width, speed) of a PortInfo reading [state, width, speed, extended speed]."""
    _, width, speed, ext = link
    return WIDTHS.get(width, f"width code {width}"), EXT_SPEEDS.get(ext) or SPEEDS.get(speed, f"speed code {speed}")


@dataclass
class EndHealth:
    end: str
    rates: dict[str, float] = field(default_factory=dict)  # errors per hour over the window
    traffic: dict[str, float] = field(default_factory=dict)  # words per second over the window
    counters: dict[str, int] = field(default_factory=dict)  # the raw values last read
    width: str = ""
    speed: str = ""
    state: int = 0
    saturated: list[str] = field(default_factory=list)


@dataclass
class LinkHealth:
    cable: int
    cable_id: str
    verdict: str
    seen: list[str]  # what was seen, one phrase each, worst first
    ends: list[EndHealth]
    window_s: float
    expected: tuple[str, str]

    def as_json(self) -> dict:
        return {"cable": self.cable_id, "verdict": self.verdict, "seen": self.seen, "window_s": round(self.window_s, 1),
                "expected": {"width": self.expected[0], "speed": self.expected[1]},
                "ends": [{"port": e.end, "state": e.state, "width": e.width, "speed": e.speed,
                          "errors_per_hour": {k: round(v, 1) for k, v in e.rates.items()},
                          "traffic_words_per_s": {k: round(v, 1) for k, v in e.traffic.items()},
                          "counters": e.counters, "saturated": e.saturated} for e in self.ends]}


class History:
    """A fabric's readings over time, as monotonic per-end totals (resets folded in).  Kept
    thinned to about `POINTS` readings per `span_s` (and always the latest), the longest span
    asked of it: a watcher reading a two-zone fabric every few seconds for an hour holds a few
    dozen, not a thousand."""

    POINTS = 30

    def __init__(self, span_s: float) -> None:
        self.span_s = span_s
        self.points: list[tuple[float, dict[str, dict[str, int]]]] = []  # (time, end → counter → total)
        self.last: dict | None = None  # the last reading, raw

    def add(self, sample: dict) -> None:
        totals = self.points[-1][1] if self.points else {}
        prev = self.last["ends"] if self.last else {}
        now: dict[str, dict[str, int]] = {}
        for end, got in sample["ends"].items():
            values, base = _values(got), totals.get(end, {})
            old = _values(prev[end]) if end in prev else {}
            # growth since the last reading: a counter that went down was reset (its value is
            # what it counted since); an end seen for the first time starts from here
            now[end] = {k: base.get(k, 0) + ((v - old[k] if v >= old[k] else v) if k in old else 0)
                        for k, v in values.items()}
        self.points.append((sample["at"], now))
        self.last = sample
        if len(self.points) >= 3 and self.points[-2][0] - self.points[-3][0] < self.span_s / self.POINTS:
            del self.points[-2]
        while len(self.points) > 2 and sample["at"] - self.points[1][0] >= 2 * self.span_s:
            self.points.pop(0)

    def since(self, seconds: float) -> tuple[float, dict, dict]:
        """(seconds covered, end → counter → growth, the latest reading's ends) over the last
        `seconds`: from the newest reading at least that old (or the oldest there is)."""
        if not self.points:
            return 0.0, {}, {}
        t_now, latest = self.points[-1]
        t0, first = next((p for p in reversed(self.points) if t_now - p[0] >= seconds), self.points[0])
        growth = {end: {k: v - first.get(end, {}).get(k, v) for k, v in c.items()} for end, c in latest.items()}
        return t_now - t0, growth, self.last["ends"]

    def quiet(self, ends: tuple[str, ...], seconds: float) -> bool:
        """Have none of `ends`' error counters grown over the last `seconds` (and do the readings
        reach back that far)?  What a drained link must show before it is returned."""
        covered, growth, _ = self.since(seconds)
        return covered >= seconds and all(growth.get(e, {}).get(k, 0) == 0 for e in ends for k in COUNTER_BITS)


def _values(got: dict) -> dict[str, int]:
    """The counters a judgement uses: the error counters, and traffic from the 64-bit ones where there."""
    out = {k: int(got["counters"][k]) for k in COUNTER_BITS}
    ext = got.get("ext") or {}
    out |= {k: int(ext[k]) if k in ext else int(got["counters"][k]) for k in TRAFFIC}
    return out


def judge(fabric: Fabric, history: History, policy: Health, cables: list[int]) -> list[LinkHealth]:
    """Every cable of `cables`, judged on the readings in `history` (see the module docstring)."""
    covered, growth, latest = history.since(policy.window_s)
    span = max(covered, policy.window_s)
    out = []
    for cable in cables:
        want = expected(fabric, cable)
        ends, seen, worst = [], [], "healthy"
        for key in end_keys(fabric, cable):
            got = latest.get(key)
            if got is None:
                seen.append(f"{key} did not answer")
                worst = _worse(worst, "unknown")
                ends.append(EndHealth(key))
                continue
            e = _end(key, got, growth.get(key, {}), covered, span)
            ends.append(e)
            verdict, said = end_verdict(e, want, policy)
            seen += said
            worst = _worse(worst, verdict)
        out.append(LinkHealth(cable, fabric.cable_id(cable), worst, seen, ends, covered, want))
    return out


def _end(key: str, got: dict, grew: dict[str, int], covered: float, span: float) -> EndHealth:
    counters = {k: int(v) for k, v in got["counters"].items()}
    e = EndHealth(key, counters=counters, state=got["link"][0])
    e.width, e.speed = active(got["link"])
    e.rates = {k: grew.get(k, 0) * 3600.0 / span for k in COUNTER_BITS}
    e.traffic = {k: grew.get(k, 0) / covered for k in TRAFFIC} if covered > 0 else {}
    e.saturated = [k for k, bits in COUNTER_BITS.items() if counters.get(k, 0) >= (1 << bits) - 1]
    return e


def end_verdict(e: EndHealth, want: tuple[str, str], policy: Health) -> tuple[str, list[str]]:
    verdict, seen = "healthy", []
    if e.state != ACTIVE:
        return "down", [f"{e.end} is not active (PortState {e.state})"]
    for name, rate in e.rates.items():
        limit = policy.limit(name)
        if rate >= limit.failing:
            verdict = _worse(verdict, "failing")
            seen.append(f"{e.end} {name} {rate:.0f}/h (failing from {limit.failing:g}/h)")
        elif rate >= limit.degraded:
            verdict = _worse(verdict, "degraded")
            seen.append(f"{e.end} {name} {rate:.0f}/h (degraded from {limit.degraded:g}/h)")
    for name in e.saturated:
        verdict = _worse(verdict, "degraded")
        seen.append(f"{e.end} {name} saturated at {e.counters[name]}: new errors are not counted (reset with perfquery -R)")
    # XDR is reported in LinkSpeedExt2Active, which is not read: such links are judged on width alone
    if e.width != want[0] or (e.speed != want[1] and want[1] in EXT_SPEEDS.values()):
        verdict = _worse(verdict, "degraded")
        seen.append(f"{e.end} up at {e.width} {e.speed}, cabled for {want[0]} {want[1]}")
    return verdict, seen


def _worse(a: str, b: str) -> str:
    return max(a, b, key=VERDICTS.index)


def worst(links: list[LinkHealth]) -> str:
    return max((h.verdict for h in links), key=VERDICTS.index, default="healthy")


TICKET_COLUMNS = ("cable_id", "verdict", "a_rack", "a_ru", "a_device", "a_port", "b_rack", "b_ru", "b_device",
                  "b_port", "part_number", "length_m", "media", "seen")


def ticket_csv(links: list[LinkHealth], plan) -> str:
    """A technician's ticket: one row per link that is not healthy, both ends as rack/U/device/port,
    the cable's part and length from the cabling plan (`loom.render.cabling.cable_plan`), and what was seen."""
    by_index = {c.index: c for c in plan}
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=TICKET_COLUMNS, lineterminator="\n")
    w.writeheader()
    for h in links:
        if h.verdict == "healthy":
            continue
        c = by_index[h.cable]
        w.writerow({"cable_id": h.cable_id, "verdict": h.verdict, "a_rack": c.a.rack, "a_ru": c.a.ru, "a_device": c.a.device,
                    "a_port": c.a.port, "b_rack": c.b.rack, "b_ru": c.b.ru, "b_device": c.b.device, "b_port": c.b.port,
                    "part_number": c.part_number, "length_m": f"{c.length_m:g}", "media": c.media, "seen": "; ".join(h.seen)})
    return buf.getvalue()

