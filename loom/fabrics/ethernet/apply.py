"""Apply a checked Ethernet plan to the switches' FRR, journalled, verified by reading back.

    lock → settle an interrupted apply → check the plan (frr_plan.check_frr_plan) → health →
    stale? → journal intent (running configurations saved) → frr-reload.py per switch →
    read back (every BGP session the intent expects established, every FIB as intended) →
    records → journal cleared

The skeleton (lock, journal, restore on any failure or SIGINT/SIGTERM, audit) is the shared
engine's (`loom.push.engine`: `apply_on`, `journalled`); only the steps differ.  A restore
reloads each touched switch with the configuration it ran before and checks FRR's diff against
it is empty again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Callable

from loom.push import engine
from loom.push.engine import ApplyResult, Resolver, apply_on, journalled, quiet, timed
from loom.push.errors import PlanError, TargetError
from loom.files import write_all_atomic
from loom.push.journal import Journal
from loom.push.packing import pack, unpack
from loom.render.frr_intent import fib_differences

from .answers import sessions_down
from .plan import LAST_APPLIED, Intent, check_frr_plan, frr_has_changes, observe, parallel, read_last, sessions, sha
from .reload import delta
from .target import FrrTarget
from .targets import frr_target_of_plan

STARTUP = "startup"  # <state dir>/startup/<switch>.conf: what a switch starts with at the next `loom sim up`
READ_BACK_TIMEOUT = 120.0  # s the read-back waits for every session and FIB (`loom apply --timeout`)


def apply_frr_plan(plan: dict, plan_path: Path | None = None, timeout: float = READ_BACK_TIMEOUT,
                   progress: Callable[[str], None] = quiet, keep_live: bool = False) -> ApplyResult:
    """Apply an Ethernet plan to the target it was made for and verify it by reading back.
    Raises PlanError on a refusal (nothing changed) and Interrupted after SIGINT/SIGTERM."""
    return apply_on(frr_target_of_plan(plan), RESOLVER, plan, plan_path, timeout, progress, keep_live, _apply_locked)


def _apply_locked(plan: dict, d: FrrTarget, context: dict, timeout: float, progress, keep_live: bool) -> ApplyResult:
    phases: dict[str, float] = {}
    progress("checking the plan (digests, model, rendered configurations)")
    intent = timed(phases, "check plan", check_frr_plan, plan)
    d.health()
    names = sorted(plan["switches"])
    progress(f"reading the running configurations of {len(names)} switches")
    running = dict(zip(names, timed(phases, "read live", parallel, d.running_config, names)))
    stale = [n for n in names if sha(running[n]) != plan["switches"][n]["running_sha256"]]
    if stale:
        raise PlanError(f"the running configuration of {', '.join(stale[:3])} changed since this plan was made "
                        "(stale plan); run `loom plan` again")
    if keep_live and plan["drift"]:
        raise PlanError(f"--keep-live: the fabric holds changes made outside loom ({plan['drift']}); "
                        "nothing was applied — put them in the model, or apply without --keep-live to overwrite them")
    if not frr_has_changes(plan):
        return ApplyResult(True, "no changes: every switch already runs its configuration", phases)
    touched = [n for n in names if plan["switches"][n]["changes"]]
    lines = sum(len(plan["switches"][n]["changes"]) for n in touched)

    def work(journal: Journal) -> ApplyResult:
        progress(f"reloading {len(touched)} switches with frr-reload.py ({lines} lines change)")
        timed(phases, "reload", parallel, lambda n: d.reload(n, intent.configs[n]), touched)
        journal.mark("reloaded")
        progress("reading back: BGP sessions and kernel FIBs of every switch")
        last = timed(phases, "read back", verify, d, intent, read_last(d.dir), touched, timeout)
        journal.mark("verified", last=last)
        finish(d, journal.load(), journal)
        established = sum(s["sessions"][0] for s in last.values())
        bgp = f"{established} BGP sessions established, " if established else ""
        return ApplyResult(True, f"applied and verified: {lines} configuration lines on {len(touched)} switches; "
                           f"{bgp}every FIB as intended", phases, lines)

    record = {**context, "kind": "frr", "model": plan["model"], "touched": touched,
              "previous": {n: pack(running[n]) for n in touched}, "desired": {n: pack(intent.configs[n]) for n in names}}
    return journalled(d, record, work, lambda j: restore(d, j, timeout), "the previous configurations",
                      progress, phases)


def verify(d: FrrTarget, intent: Intent, last: dict, touched: list[str], timeout: float) -> dict:
    """Wait until every switch has the BGP sessions the intent expects established (one per
    cable of the fabric as it stands, `Intent.peers`) and holds the intended FIB (the
    functional read-back); return the new records (`last-applied-frr.json`), with the
    lines FRR's diff still reports once the switch runs its configuration (`residual`, see
    `loom.fabrics.ethernet.plan`; kept visible in that file) — measured on the `touched` switches and
    on those without a record, so a switch edited by hand meanwhile never has its edit recorded
    as residual.  TargetError naming the first switch that did not get there within `timeout`.

    The wait reads only sessions and FIBs; the configurations are read and diffed once, when
    every switch is there: diffing each poll cost two FRR parser runs per switch, CPU that the
    daemons (BFD's sub-second timers) need while they converge — on a shared simulation host
    that is what made sessions flap."""
    deadline = time.monotonic() + timeout
    names = sorted(intent.configs)
    while True:
        behind = {n: why for n, why in zip(names, parallel(lambda n: _behind(d, intent, n), names)) if why}
        if not behind:  # the read the records keep must itself be the state verified (a session may drop meanwhile)
            seen = observe(d, intent, {})
            behind = {n: why for n, s in seen.items() if (why := _short(s["sessions"], s["fib"]))}
        if not behind or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if behind:
        name, why = next(iter(behind.items()))
        raise TargetError(f"read-back of {len(behind)} switch(es) differs from the intent after {timeout:.0f}s: "
                          f"{name}: {why}{_why_down(d, intent, name)}")
    previous = dict(last)
    for n, s in seen.items():
        if n not in touched and n in last:
            continue
        residual = s["changes"]  # what FRR still reports once the switch runs the configuration
        previous[n] = {"desired_sha256": s["desired_sha256"], "running_sha256": s["running_sha256"],
                       "residual": residual, "sessions": s["sessions"]}
    return previous


def _behind(d: FrrTarget, intent: Intent, switch: str) -> str | None:
    """Why `switch` is not yet where the intent puts it (None once it is): sessions first, and
    its FIB only once they are all up."""
    counts = sessions(d.peers(switch), intent.peers[switch])
    if counts[0] < counts[1]:
        return _short(counts, [])
    return _short(counts, fib_differences(intent.fibs.get(switch, {}), d.fib(switch), intent.optional))


def _short(counts: list[int], fib: list[str]) -> str | None:
    established, expected = counts
    if established < expected:
        return f"BGP sessions {established}/{expected} established"
    if fib:
        return f"FIB: {fib[0]}" + (f" (and {len(fib) - 1} more)" if len(fib) > 1 else "")
    return None


def _why_down(d: FrrTarget, intent: Intent, switch: str) -> str:
    """Which of the neighbours the intent expects up are not, and why (at most three); "" when
    all are (the switch is behind on its FIB)."""
    expected = intent.peers[switch]
    try:
        established, want = sessions(d.peers(switch), expected)
        if established == want:
            return ""
        down = sessions_down(d.neighbours(switch), switch, expected)
    except TargetError as exc:
        return f" (its neighbours could not be read: {exc})"
    more = f"; {len(down) - 3} more" if len(down) > 3 else ""
    return f" (not established: {'; '.join(down[:3])}{more})" if down else ""


def finish(d: FrrTarget, j: dict, journal: Journal) -> None:
    """Record what is now live as loom's (digests, residual lines, each switch's configuration as
    its startup configuration), then drop the journal."""
    write_all_atomic({d.dir / LAST_APPLIED: json.dumps(j["last"], indent=1, sort_keys=True) + "\n",
                      **{d.dir / STARTUP / f"{n}.conf": unpack(text) for n, text in j["desired"].items()}})
    journal.clear()


def restore(d: FrrTarget, j: dict, timeout: float) -> tuple[bool, str]:
    """Reload every switch the apply touched with the configuration it ran before and check
    FRR's diff against it is empty.  The journal is cleared once that is done (a target that
    cannot be reached keeps it for the next command to retry)."""
    bad = []
    try:
        d.health()
        for n in j["touched"]:
            previous = unpack(j["previous"][n])
            d.reload(n, previous)
            left = delta(previous, d.running_config(n))
            if left:
                bad.append(f"{n}: {left[0]}")
    except TargetError as exc:
        return False, (f"RESTORE FAILED ({exc}): the journal is kept and the next loom command on this fabric "
                       "retries the restore")
    Journal(d.dir).clear()
    if bad:
        return False, f"RESTORE FAILED: {len(bad)} switch(es) run another configuration than before ({bad[0]}); " \
                      "run `loom plan` to see it"
    return True, f"previous configurations of {len(j['touched'])} switches restored and verified (FRR's diff empty)"


#: how an Ethernet apply that died is finished or undone (`loom.push.engine.recover`)
RESOLVER = Resolver(finish=finish, restore=restore, kind="frr")


def recover(d: FrrTarget, timeout: float = 120, progress: Callable[[str], None] = quiet) -> str | None:
    """Resolve an interrupted apply on `d` (the caller holds the fabric lock)."""
    return engine.recover(d, RESOLVER, timeout, progress)


def settle(d: FrrTarget, progress: Callable[[str], None] = quiet, timeout: float = 120) -> str | None:
    """Resolve an interrupted apply on `d` under the lock, for commands that only read (plan)."""
    return engine.settle(d, RESOLVER, progress, timeout)
