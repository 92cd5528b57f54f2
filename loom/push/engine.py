"""The skeleton every apply shares, whatever the technology and the target: the fabric lock
(a dead holder's takeover announced and audited), SIGINT/SIGTERM turned into a restore, the
write-ahead journal around the work, and the resolution of an apply that died — finished if it
had been verified, else restored, by the technology's `Resolver`.  What an apply writes, how it
verifies and how it undoes are the backends' (`loom.fabrics.infiniband.apply`,
`loom.fabrics.ethernet.apply`); every outcome goes to the audit log.

    take_lock → recover (an interrupted apply) → journalled(work, undo) → audit
"""

from __future__ import annotations

import hashlib
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import audit
from .errors import Interrupted, PlanError, TargetError
from .journal import Journal
from .lock import FabricLock, LockHeld


@dataclass(frozen=True)
class Resolver:
    """How a technology ends an apply that died: `finish(target, record, journal)` records a
    verified one as applied; `restore(target, record, timeout)` puts the previous state back and
    says how that went as (ok, message)."""

    finish: Callable
    restore: Callable
    kind: str | None = None  # the journal's `kind` this technology writes (None: InfiniBand, before kinds)


@dataclass
class ApplyResult:
    ok: bool
    message: str
    phases: dict[str, float] = field(default_factory=dict)
    entries_changed: int = 0


def quiet(_: str) -> None:
    pass


def take_lock(d, purpose: str, progress: Callable[[str], None] = quiet, **context) -> FabricLock:
    """The fabric lock, with a dead holder's takeover announced and audited and a refusal audited."""
    try:
        lock = FabricLock(d.dir, purpose).acquire()
    except LockHeld as exc:
        audit.record(d.dir, f"{purpose} refused", reason=str(exc), **context)
        raise PlanError(str(exc)) from None
    except OSError as exc:
        raise PlanError(f"cannot take the fabric lock in {d.dir}: {exc.strerror}; nothing was changed — make the "
                        "state directory writable (or free space) and retry") from None
    if lock.took_over:
        h = lock.took_over
        note = (f"took over the fabric lock of {h.get('purpose', 'a change')} by {h.get('user', '?')} "
                f"(pid {h.get('pid', '?')}, since {h.get('since', '?')}), which died holding it")
        progress(note)
        audit.record(d.dir, "lock taken over", previous_holder=h, by=purpose, **context)
    return lock



def apply_on(d, resolver: Resolver, plan: dict, plan_path: Path | None, timeout: float, progress, keep_live: bool,
             locked: Callable[..., ApplyResult]) -> ApplyResult:
    """Run `locked(plan, d, context, timeout, progress, keep_live)` — a technology's apply of a
    checked plan — on the target the plan was made for, under the fabric lock (see `under_lock`),
    then release the target; `context` names the plan in the audit log."""
    context = {"fabric": plan.get("fabric"), "plan": str(plan_path) if plan_path else None,
               "plan_sha256": file_digest(plan_path), "model_sha256": plan.get("model_sha256")}
    try:
        return under_lock(d, resolver, "apply", context, timeout, progress,
                          lambda: locked(plan, d, context, timeout, progress, keep_live))
    finally:
        d.close()  # the target was made for this plan (a watcher keeps its own open across applies)


def under_lock(d, resolver: Resolver, purpose: str, context: dict, timeout: float, progress,
               work: Callable[[], ApplyResult]) -> ApplyResult:
    """Run `work` holding the fabric lock, after settling an interrupted apply, with SIGINT and
    SIGTERM turned into a restore; every outcome goes to the audit log under `purpose`."""
    t0 = time.perf_counter()
    lock = take_lock(d, purpose, progress, **context)
    result = ApplyResult(False, "not started")
    try:
        recover(d, resolver, timeout, progress)
        with signals_raise():
            result = work()
        return result
    except (PlanError, TargetError) as exc:
        result = ApplyResult(False, f"refused: {exc}")
        raise
    except Interrupted as exc:
        exc.outcome = exc.outcome or "nothing had been written yet"
        result = ApplyResult(False, f"interrupted by signal {exc.signum}: {exc.outcome}")
        raise
    finally:
        lock.release()
        audit.record(d.dir, purpose, ok=result.ok, outcome=result.message, entries_changed=result.entries_changed,
                     phases=result.phases, seconds=round(time.perf_counter() - t0, 3), **context)


def file_digest(path: Path | None) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None


@contextmanager
def signals_raise():
    """SIGINT and SIGTERM raise Interrupted (so the apply restores and records) instead of
    ending the process mid-write."""
    def handler(signum, _frame):
        raise Interrupted(signum)

    old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def signals_ignored():
    """While restoring, a second Ctrl-C must not abandon the restore half-way (the command ends
    with the restore's outcome anyway)."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def timed(phases: dict, name: str, fn, *args):
    t = time.perf_counter()
    try:
        return fn(*args)
    finally:
        phases[name] = round(time.perf_counter() - t, 3)



def journalled(d, record: dict, work: Callable[[Journal], ApplyResult], undo: Callable[[dict], tuple[bool, str]],
               what: str, progress, phases: dict, texts: dict[str, str | None] | None = None) -> ApplyResult:
    """The skeleton of every apply, whatever it writes: journal the intent (`record` and the big
    `texts` hold what undoes it), run `work`; on any failure — a target error, a full disk, SIGINT/SIGTERM — run
    `undo` on the journal (a second signal ignored meanwhile) and audit it.  The caller holds the
    fabric lock; `work` marks the journal's phases and clears it once verified and recorded."""
    journal = Journal(d.dir)
    try:
        journal.begin({**record, "pid": audit.who()["pid"]}, texts)
    except OSError as exc:
        raise nothing_written(d, exc) from None
    context = {k: record.get(k) for k in ("fabric", "plan", "plan_sha256", "model_sha256") if k in record}
    try:
        return work(journal)
    except (TargetError, OSError, Interrupted) as exc:
        with signals_ignored():
            try:
                progress(f"apply failed ({reason(exc)}); restoring {what}")
            finally:  # nothing about the message may keep the restore from running
                ok, restored = timed(phases, "restore", undo, journal.load())
        audit.record(d.dir, "restore", ok=ok, outcome=restored, cause=reason(exc), **context)
        if isinstance(exc, Interrupted):
            raise Interrupted(exc.signum, restored) from None
        return ApplyResult(False, f"apply failed: {reason(exc)}; {restored}", phases)



def nothing_written(d, exc: OSError) -> PlanError:
    return PlanError(f"cannot write the fabric's input files in {d.where()}: {exc.strerror}; nothing was changed — "
                     "free space or make the directory writable, then apply again")


def reason(exc: BaseException) -> str:
    if isinstance(exc, Interrupted):
        return f"interrupted by {signal.Signals(exc.signum).name}"
    if isinstance(exc, OSError):
        return f"{exc.strerror} ({exc.filename})" if exc.filename else str(exc)
    return str(exc)



def recover(d, resolver: Resolver, timeout: float = 180, progress: Callable[[str], None] = quiet) -> str | None:
    """Resolve an apply that died (its journal is still there) with its technology's `resolver`:
    finished if it had been verified, else restored; the caller holds the fabric lock.  Also
    removes temp files and umad2sim trees killed processes left.  Returns what was done."""
    d.clean_leftovers()
    journal = Journal(d.dir)
    j = journal.load()
    if j is None:
        return None
    if j.get("kind") != resolver.kind:
        raise PlanError(f"the interrupted apply in {d.dir} was of a {j.get('kind') or 'forwarding-table'} plan, which "
                        "this fabric's technology cannot resolve (two models of one name share the state directory?); "
                        "give the models different names, or resolve it with the model that made it")
    if j["phase"] == "verified":
        resolver.finish(d, j, journal)
        ok, outcome = True, "its changes had been verified: recorded as applied"
    else:
        with signals_ignored():
            ok, outcome = resolver.restore(d, j, timeout)
    message = f"an apply (pid {j.get('pid')}) was interrupted after phase '{j['phase']}': {outcome}"
    progress(message)
    audit.record(d.dir, "interrupted apply resolved", ok=ok, outcome=outcome, interrupted_pid=j.get("pid"),
                 interrupted_phase=j["phase"], fabric=j.get("fabric"), plan_sha256=j.get("plan_sha256"),
                 model_sha256=j.get("model_sha256"))
    return message


def settle(d, resolver: Resolver, progress: Callable[[str], None] = quiet, timeout: float = 180) -> str | None:
    """For commands that only read (plan): resolve an interrupted apply first, under the lock."""
    if Journal(d.dir).load() is None:
        return None
    lock = take_lock(d, "recovery", progress)
    try:
        return recover(d, resolver, timeout, progress)
    finally:
        lock.release()


def lock_for_down(d, resolver: Resolver, force: bool, progress: Callable[[str], None] = quiet) -> FabricLock | None:
    """The fabric lock for `sim down`, an interrupted apply resolved first; with `force`, None
    when it cannot be had (the command stops the fabric anyway), else the refusal."""
    lock = None
    try:
        lock = take_lock(d, "sim down", progress)
        recover(d, resolver, progress=progress)
        return lock
    except PlanError as exc:
        if not force:
            if lock:
                lock.release()
            raise PlanError(f"{exc} (or `loom sim down --force`)") from None
        progress(f"--force: stopping anyway ({exc})")
        return lock
    except BaseException:
        if lock:
            lock.release()
        raise
