"""The watcher: follow the fabric, reroute around what fails, return to the design when it heals.

    detect → discover → reroute (minimal churn) → check → apply (lock, journal, read-back) → log

Detection: OpenSM resweeps as soon as a switch reports a link-state change (a trap), so a new
`SUBNET UP` in its log is the cheapest signal there is; a discovery every `interval` seconds
catches anything a trap missed (and is all there is where the log cannot be followed).
After a trap, discovery asks only the switches that sent one for their ports' states
(`loom.fabrics.infiniband.link_states`); otherwise — and whenever that cannot answer — it is `ibnetdiscover`
through the target, compared with the model (`loom.checks.cabling`): the model cables found on
neither end are down.

What is applied is always computed from the design tables (`design.py`: the tables loom applied
on the intact fabric, else the design's routing), never from the previous reroute, by the
function plan uses (`design.as_it_stands`): the minimal repair for what is down now — observed
here, or declared in the model and the lock (`loom mark`) — widened if it fails a check, or the
design itself when nothing is down.  A cable that comes back is treated as down until it has
stayed up for `hold_down` seconds (a flapping link does not make the fabric reroute twice a
second); a cable that goes down is acted on at once.  A new watcher starts from what the last
one routed around (`watch.down.json`) and makes sure loom's last tables are the ones for the
fabric as it finds it (its predecessor may have died in the middle of a reroute).

Failing links are drained the same way (`drained`): every `health_interval` seconds the
watcher reads the port counters of both ends of every cable (`health.Monitor`, judged by
`loom.checks.link_health`); a link whose error rates reach the model's failing limits is
routed around like a cable that went down — the same minimal-churn reroute, checked, applied
and read back — although it is still up.  It is held down in the watcher's own state
(`watch.drained.json`: a drain is the watcher's judgement, not an operator's `loom mark`,
and a new watcher keeps it) until no error counter of either end has grown for the model's
`health.clean_s` seconds; then it is returned, again by the same path.  A counter reset by
another tool (`perfquery -R`) counts as no errors, never as a reason to act.

Every event is logged (JSON lines, `watch.log` in the target's state directory) with the time
from detection to verified tables and the entries changed; every apply is in the audit log,
a drain with what was seen on the link.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from loom.checks.cabling import compare
from loom.checks.link_health import end_keys
from loom.expand import HOST, Fabric
from loom.expand.asbuilt import AsBuilt, Down, load_as_built
from loom.expand.failures import FailureSet, without
from loom.expand.live import parse_ibnetdiscover
from loom.qos import plan_qos
from loom.routing import Tables, get_engine, subnet
from loom.routing.asbuilt import unsettled

from .apply import apply_tables
from .checked import failing_checks, push_verdict
from .design import applied_last, as_it_stands, design_tables, last_applied
from .drains import read_drained, write_drained
from .health import Monitor, cuts_off
from loom.push.errors import TargetError
from loom.push.links import watcher_down, watching
from .link_states import ACTIVE, DOWN, cable_states, trapped_guids
from loom.push.packing import digest_tables
from .target import Target


@dataclass
class Event:
    kind: str  # down | up | drain | return | refused | failed
    cables_down: list[str]  # cables the applied tables route around (after the event)
    changed: list[str]  # cables that went down or came back
    detected: str  # wall-clock time the change was noticed
    seconds: dict[str, float] = field(default_factory=dict)  # discover, reroute, check, apply, total
    entries: int = 0
    ok: bool = True
    message: str = ""

    def line(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


class Watcher:
    def __init__(self, model: Path, fabric: Fabric, target: Target, engine: str = "auto",
                 hold_down: float = 10.0, log: Callable[[Event], None] = lambda e: None,
                 health_interval: float | None = None) -> None:
        self.model, self.target = Path(model), target
        # the design, and what the model and the lock declare down (`loom.expand.asbuilt`): routed
        # around whatever discovery says, as plan does
        self._declared_stamp = self._stamp()
        self.state = load_as_built(self.model)
        self.fabric = self.state.design
        self.engine = get_engine(engine).name
        self.hold_down = hold_down
        self.log = log
        self.qos = plan_qos(fabric.model) if fabric.technology == "infiniband" else None
        self.design = self._design()
        # cables the tables in force route around: where the last watcher left them (its state
        # outlives it, so a watcher started after the cables came back returns to the design)
        self.down: frozenset[int] = self._recorded_down()
        self.synced = False  # has a step checked that loom's last tables are the ones for `down`?
        self.around = self.down | self.state.cables_down  # what the tables in force route around, declared too
        self.seen_down: frozenset[int] = frozenset()  # cables the last discovery found down
        self.trapped: set[int] = set()  # switches (GUIDs) whose link-state traps are not yet looked at
        # the tables this watcher verified last, or the design when it is what loom applied last (`_in_force`)
        self.applied: Tables | None = self.design if self._is_last_applied(self.design) else None
        # the design's failing checks once known: none if loom applied it last (every apply checks first)
        self._design_failing: list[str] | None = [] if self.applied is not None else None
        self.back_since: dict[int, float] = {}  # cable → when it was seen up again
        self._log_offset = 0
        # link health: None turns the port-counter readings off
        self.health_interval = health_interval
        self.monitor = Monitor(target, self.fabric) if health_interval is not None else None
        # links between switches: the ones a reroute can avoid (a node's only cable is ticketed, not
        # drained), unless one is its switch's last way out (`health.cuts_off`)
        self.switch_links = frozenset(int(i) for i in np.flatnonzero(self.fabric.cables.a_kind != HOST))
        self.drained: dict[int, list[str]] = read_drained(target.dir, self.fabric)  # cable → what was seen when drained
        self.links: list = []  # the last verdicts (`loom.checks.link_health.LinkHealth`), for the metrics
        self.returning: set[int] = set()  # drained links found clean, until the tables no longer avoid them
        self.kept: dict[int, list[str]] = {}  # failing links not drained: it would cut a switch off, or was refused
        self.refused_drains: set[int] = set()  # drains whose reroute failed a check: not tried again while failing

    def _design(self) -> Tables:
        """The design tables, found as plan finds them (`design.design_tables`)."""
        from .plan import routing_key

        return design_tables(self.target.dir, self.fabric, routing_key(self.fabric),
                             last_applied(self.target.dir, self.fabric))[0]

    # ------------------------------------------------------------------ detection
    def sweeps_seen(self) -> bool:
        """Has OpenSM finished a sweep since the last call (new `SUBNET UP` in its log) with a
        link-state trap still to look at?  (The sweeps of the watcher's own applies have none.)
        Only targets whose OpenSM log is local (`sweep_log()`) offer this; others rely on
        `interval`."""
        log = self.target.sweep_log() if hasattr(self.target, "sweep_log") else None
        if log is None or not Path(log).exists():
            return False
        size = Path(log).stat().st_size
        if size < self._log_offset:  # OpenSM restarted with a fresh log
            self._log_offset = 0
        with open(log, "rb") as f:
            f.seek(self._log_offset)
            new = f.read()
        self._log_offset = size
        self.trapped |= trapped_guids(new)
        return b"SUBNET UP" in new and bool(self.trapped)

    def cables_down(self) -> frozenset[int]:
        """Model cables that are down: after traps, the last discovery updated with the states of
        the trapping switches' ports; else (or if they cannot be read) a full discovery."""
        trapped, self.trapped = self.trapped, set()
        if trapped:
            believed = subnet(without(self.fabric, FailureSet(self.seen_down, frozenset(), ())), 0)
            try:
                states = cable_states(self.target, self.fabric, believed, trapped)
            except (KeyError, TargetError):
                pass
            else:
                up = {c for c, (state, _) in states.items() if state == ACTIVE}
                down = {c for c, (state, _) in states.items() if state == DOWN}
                self.trapped |= {guid for state, guid in states.values() if state not in (ACTIVE, DOWN)}
                self.seen_down = frozenset((self.seen_down - up) | down)
                return self.seen_down
        report = compare(self.fabric, parse_ibnetdiscover(self.target.run(["ibnetdiscover"]), "ibnetdiscover"))
        self.seen_down = frozenset(f.cable for f in report.findings if f.kind == "missing" and f.cable is not None)
        return self.seen_down

    # ------------------------------------------------------------------ one step
    def step(self, now: float | None = None) -> Event | None:
        """Discover, and if the set of cables to route around changed, reroute and apply."""
        now = time.monotonic() if now is None else now
        detected = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        t0 = time.perf_counter()
        self._reread_declared()
        found = self.cables_down()
        seconds = {"discover": round(time.perf_counter() - t0, 3)}
        # a new watcher holds nothing down: what is up is up; a drained link served its hold-down (clean_s)
        for c in (self.down - found - set(self.drained) - self.returning) if self.synced else ():
            self.back_since.setdefault(c, now)
        for c in found:
            self.back_since.pop(c, None)
        held = {c for c, t in self.back_since.items() if now - t < self.hold_down}
        self.back_since = {c: t for c, t in self.back_since.items() if c in held}
        want = frozenset(found | held | set(self.drained))
        if want == self.down and self.synced:
            return None
        around = want | self.state.cables_down  # observed and declared
        changed = sorted(self.fabric.cable_id(c) for c in around ^ self.around)
        kind = self._kind(around - self.around, self.around - around, found)
        t1 = time.perf_counter()
        tables, failed, checking = self._reroute(want)
        if not changed and self._is_last_applied(tables):  # a new watcher, and loom's tables are right
            self.synced, self.down = True, want
            return None
        seconds["reroute"] = round(time.perf_counter() - t1 - checking, 3)
        seconds["check"] = round(checking, 3)
        checked = self._in_force()
        names = sorted(self.fabric.cable_id(c) for c in around)
        if failed:
            event = Event("refused", sorted(self.fabric.cable_id(c) for c in self.down), changed, detected, seconds,
                          ok=False, message=f"the reroute fails {failed[0]}; the tables in force stay")
            self._give_up_drains(around - self.around)
        else:
            t3 = time.perf_counter()
            drains = {self.fabric.cable_id(c): seen for c, seen in self.drained.items() if c in around}
            result = apply_tables(self.target, self.model, tables, "watch", previous=checked, cables_down=names,
                                  **({"drained": drains} if drains else {}))
            seconds["apply"] = round(time.perf_counter() - t3, 3)
            if result.ok:
                self.down, self.applied, self.synced, self.around = want, tables, True, around
                self.returning &= around
                self._record_down()
            event = Event(kind if result.ok else "failed", sorted(self.fabric.cable_id(c) for c in self.down), changed,
                          detected, seconds, result.entries_changed, result.ok, result.message)
        event.seconds["total"] = round(time.perf_counter() - t0, 3)
        self._write(event)
        return event

    def _give_up_drains(self, going: frozenset) -> None:
        """Drains whose reroute was refused stay in service (reported failing) instead of being
        tried again at every step; they are not drained again while they keep failing."""
        refused = going & set(self.drained)
        for c in refused:
            self.kept[c] = self.drained.pop(c)
        self.refused_drains |= refused
        if refused:
            write_drained(self.target.dir, self.fabric, self.drained)

    def _kind(self, going: frozenset, coming: frozenset, found: frozenset) -> str:
        """down / up for links that failed or came back, drain / return for the watcher's drains."""
        if going:
            return "drain" if not (going & found) and going <= set(self.drained) else "down"
        return "return" if coming and coming <= self.returning else "up"

    # ------------------------------------------------------------------ link health
    def health_step(self) -> bool:
        """Read every cable's port counters and judge the links: drain those failing, return
        drained ones whose counters stayed still for `health.clean_s`.  True when the set of
        drained links changed (the caller then steps: `run` does at once)."""
        if self.monitor is None:
            return False
        self.monitor.read()
        self.links = self.monitor.judge()
        before, clean = dict(self.drained), self.monitor.policy.clean_s
        self.kept = {}
        self.refused_drains &= {h.cable for h in self.links if h.verdict == "failing"}
        quiet = lambda c: self.monitor.history.quiet(end_keys(self.fabric, c), clean)
        for h in self.links:
            # a link returned while its old errors are still in the window is drained again only if they grow
            if h.verdict == "failing" and h.cable in self.switch_links and h.cable not in self.drained \
                    and h.cable not in self.seen_down and not quiet(h.cable):
                if h.cable in self.refused_drains or cuts_off(self.fabric, set(self.around | self.seen_down) | set(self.drained), {h.cable}):
                    self.kept[h.cable] = h.seen  # its switch's last way out: failing, reported, kept in service
                else:
                    self.drained[h.cable] = h.seen
        clean_now = {c for c in before if quiet(c)}
        self.returning |= clean_now
        for c in clean_now:
            del self.drained[c]
        if self.drained != before:
            write_drained(self.target.dir, self.fabric, self.drained)
            return True
        return False

    def _reread_declared(self) -> None:
        """Take what the model and the lock declare down afresh when either file changed (an
        operator's `loom mark` while the watcher runs routes around the mark at the next step)."""
        from loom.push.errors import PlanError

        from .plan import routing_key

        stamp = self._stamp()
        if stamp != self._declared_stamp:
            state = load_as_built(self.model)
            if routing_key(state.design) != routing_key(self.fabric):
                raise PlanError(f"{self.model} now describes another fabric (its design changed): this watcher stops; "
                                "start it again for the new design (`loom plan` and `loom apply` first)")
            self.state, self._declared_stamp = state, stamp
            self.synced = False  # the tables for what is down may differ now

    def _stamp(self) -> tuple:
        from loom.expand import lock_path

        out = []
        for path in (self.model, lock_path(self.model)):
            try:
                st = path.stat()
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def _failing(self, tables: Tables, checked: Tables | None) -> list[str]:
        """The checks `tables` fail.  Balance is re-judged only where the tables in force
        (`checked`, which passed) could change; the design's verdict is kept once known."""
        if tables is self.design and self._design_failing is not None:
            return self._design_failing
        only = unsettled(checked, tables) if checked is not None else None
        failed = failing_checks(push_verdict(tables, self.qos, only))
        if tables is self.design and only is None:
            self._design_failing = failed
        return failed

    def _reroute(self, down: frozenset[int]) -> tuple[Tables, list[str], float]:
        """The tables for the fabric with `down` and what is declared down (the design's if
        nothing is: `design.as_it_stands`, as plan makes them), the checks they fail, and the
        seconds the checks took."""
        checked, spent = self._in_force(), [0.0]

        def failing(t: Tables) -> list[str]:
            t0 = time.perf_counter()
            try:
                return self._failing(t, checked)
            finally:
                spent[0] += time.perf_counter() - t0

        seen = tuple(Down(self.fabric.cable_id(c), "observed", (c,)) for c in sorted(down))
        tables, _, failed = as_it_stands(AsBuilt(self.fabric, self.state.declared, seen), self.design, failing, self.engine)
        return tables, failed, spent[0]

    def _in_force(self) -> Tables | None:
        """The tables this watcher applied last, if they are still what loom last applied (nobody
        applied since: `last-applied.sha256` is their digest): the apply then need not read every
        table to know what changes.  None makes it read them."""
        return self.applied if self.applied is not None and self._is_last_applied(self.applied) else None

    def _recorded_down(self) -> frozenset[int]:
        """The cables `watch.down.json` says the applied tables route around (none if it is
        absent, unreadable or names cables this model does not have: then discovery decides)."""
        from loom.expand.failures import FailureSpecError, parse_failures

        try:
            names = watcher_down(self.target.dir)
            return frozenset(parse_failures(self.fabric, [str(n) for n in names]).cables)
        except (OSError, ValueError, KeyError, TypeError, FailureSpecError):
            return frozenset()

    def _is_last_applied(self, tables: Tables) -> bool:
        return applied_last(self.target.dir, digest_tables(tables))

    def _record_down(self) -> None:
        """What the applied tables route around, beside the target's state (a human's next plan
        must know the fabric is degraded; `loom sim status` shows it)."""
        from loom.files import write_atomic

        path = self.target.dir / "watch.down.json"
        if self.down:  # true of the tables with this digest only: an apply of a plan since makes it stale
            write_atomic(path, json.dumps({"down": sorted(self.fabric.cable_id(c) for c in self.down),
                                           "tables_sha256": digest_tables(self.applied)}) + "\n")
        else:
            path.unlink(missing_ok=True)

    def _write(self, event: Event) -> None:
        with open(self.target.dir / "watch.log", "a") as f:
            f.write(event.line() + "\n")
        self.log(event)

    # ------------------------------------------------------------------ the loop
    def run(self, interval: float = 5.0, poll: float = 0.1, until: Callable[[], bool] = lambda: False,
            ready: Callable[[], None] = lambda: None) -> None:
        """Step at once (then call `ready`: the watcher is live), then on every finished OpenSM
        sweep and at least every `interval` seconds (and while a recovery is held down, when its
        hold-down ends); read the port counters every `health_interval` seconds and step at
        once when a link is drained or returned.  While it runs, `watch.pid` says so (`watching`):
        `loom status` then takes its record of what it routes around as current.
        A fabric or subnet manager not running stops it at once, named (TargetError): its first
        reading failed with a traceback on a simulation never started (run from another directory)."""
        self.target.health()
        with watching(self.target.dir):
            self._run(interval, poll, until, ready)

    def _run(self, interval: float, poll: float, until: Callable[[], bool], ready: Callable[[], None]) -> None:
        self.sweeps_seen()
        self.health_step()
        self.step()
        ready()
        last = last_health = time.monotonic()
        while not until():
            time.sleep(poll)
            now = time.monotonic()
            if self.monitor is not None and now - last_health >= self.health_interval:
                last_health = now
                if self.health_step():
                    self.step(now)
                    last = time.monotonic()
                    continue
            due = now - last >= interval or any(now - t >= self.hold_down for t in self.back_since.values())
            if self.sweeps_seen() or due:
                self.step(now)
                last = time.monotonic()
