"""Apply a checked plan to the running fabric, write-ahead journalled, verified by reading back.

    lock → settle an interrupted apply → check the plan (checked.py) → health → stale? →
    journal intent (previous inputs saved) → write all inputs → push → read back LFTs + QoS →
    journal verified → records → journal cleared

Any failure after the journal's intent — a mismatch, a dead daemon, a full disk, SIGINT or
SIGTERM — restores the saved inputs, pushes them and verifies routing *and* QoS; SIGKILL or
power loss leaves the journal, and the next command that takes the lock (`recover`) finishes
or restores it.  Every attempt, refusal, takeover and recovery goes to the audit log.
The push itself is OpenSM restarted on the new inputs, which programs every entry and every
QoS table whatever the switches hold, so drift made on a switch is repaired, not missed.
"""

from __future__ import annotations

import hashlib
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from loom.expand import load_fabric
from loom.expand.failures import parse_failures, without
from loom.render.opensm import lfts_dump, tables_from_dump
from loom.routing import Tables, subnet
from loom.routing.base import NO_ROUTE
from loom.routing.updown import UpDown

from . import audit
from .checked import check_plan
from .errors import Interrupted, PlanError, TargetError
from .files import write_all_atomic
from .journal import Journal
from .lock import FabricLock, LockHeld
from .lft_readback import Entries, block_mismatch, blocks_of, changed_entries, read_blocks
from .packing import digest_live, digest_tables, mismatch, unpack
from .plan import has_changes
from .qos_conf import UNMANAGED, conf_intent, restore_conf
from .qos_readback import digest, mismatches
from .target import Target, target_of_plan


@dataclass
class ApplyResult:
    ok: bool
    message: str
    phases: dict[str, float] = field(default_factory=dict)
    entries_changed: int = 0


def _quiet(_: str) -> None:
    pass


def take_lock(d: Target, purpose: str, progress: Callable[[str], None] = _quiet, **context) -> FabricLock:
    """The fabric lock, with a dead holder's takeover announced and audited and a refusal audited."""
    try:
        lock = FabricLock(d.dir, purpose).acquire()
    except LockHeld as exc:
        audit.record(d.dir, f"{purpose} refused", reason=str(exc), **context)
        raise PlanError(str(exc)) from None
    except OSError as exc:
        raise PlanError(f"cannot take the fabric lock in {d.dir}: {exc.strerror}; make the state directory "
                        "writable (or free space) and retry") from None
    if lock.took_over:
        h = lock.took_over
        note = (f"took over the fabric lock of {h.get('purpose', 'a change')} by {h.get('user', '?')} "
                f"(pid {h.get('pid', '?')}, since {h.get('since', '?')}), which died holding it")
        progress(note)
        audit.record(d.dir, "lock taken over", previous_holder=h, by=purpose, **context)
    return lock


def apply_plan(plan: dict, plan_path: Path | None = None, timeout: float = 180,
               progress: Callable[[str], None] = _quiet, keep_live: bool = False) -> ApplyResult:
    """Apply a plan to the target it was made for and verify it by reading back.
    Raises PlanError on a refusal (nothing changed) and Interrupted after SIGINT/SIGTERM."""
    d = target_of_plan(plan)
    return apply_on(d, plan, plan_path, timeout, progress,
                    lambda context: _apply_locked(plan, d, context, timeout, progress, keep_live))


def apply_on(d, plan: dict, plan_path: Path | None, timeout: float, progress,
             locked: Callable[[dict], ApplyResult]) -> ApplyResult:
    """Run `locked(context)` on the target a plan was made for, under the fabric lock (see
    `_under_lock`), then release the target; `context` names the plan in the audit log."""
    context = {"fabric": plan.get("fabric"), "plan": str(plan_path) if plan_path else None,
               "plan_sha256": _file_digest(plan_path), "model_sha256": plan.get("model_sha256")}
    try:
        return _under_lock(d, "apply", context, timeout, progress, lambda: locked(context))
    finally:
        d.close()  # the target was made for this plan (a watcher keeps its own open across applies)


def apply_tables(d: Target, model: Path, tables: Tables, purpose: str, timeout: float = 180,
                 progress: Callable[[str], None] = _quiet, previous: Tables | None = None, **context) -> ApplyResult:
    """Push tables made for the fabric as it stands (a watcher's reroute after a failure, or its
    return to the design tables), through the same lock, journal, read-back and restore as a
    plan.  Only the forwarding tables change — OpenSM's options and pinned LIDs stay — and
    OpenSM re-reads its file (SIGHUP: it sends only the blocks that differ from what it
    programmed) instead of restarting, so only the entries that change are read back
    (`loom.push.lft_readback`).  `previous`: the tables the caller last applied and verified
    (a watcher), which spares reading every table first; without it the live tables are read.
    Drift that OpenSM does not know of is apply's to repair (`push`), not a watcher's.  The
    caller has checked `tables` on the fabric they were made for."""
    context = {"fabric": tables.subnet.fabric.name, **context}

    in_service = [int(x) for x in np.flatnonzero(UpDown(tables.subnet).live)]

    def work() -> ApplyResult:
        phases: dict[str, float] = {}
        d.health()
        inputs = d.read_inputs()
        live, live_text = previous, None
        if previous is None or inputs["lfts"] is None:  # the restore needs what is live
            live_text = _timed(phases, "read live", d.read_lfts, len(in_service))
            live = tables_from_dump(tables.subnet, live_text, "live")
        touched = changed_entries(live, tables, in_service)
        entries = sum(len(lids) for lids in touched.values())
        if not entries:
            return ApplyResult(True, "no changes: the fabric already holds these tables", phases)
        want = lfts_dump(tables)
        conf = inputs["conf"] if inputs["conf"] is not None else UNMANAGED
        guids = [int(tables.subnet.switch(x).guid) for x in in_service]
        change = Change({"lfts": want}, want, None, tables.subnet, entries, len(touched), conf, guids,
                        reload=True, touched=touched, tables=tables)
        record = {**context, "model": str(Path(model).resolve())}
        return _push_verified(d, change, {**inputs, "conf": conf}, record, timeout, progress, phases,
                              {"desired_lfts": want, "previous_live": live_text})

    return _under_lock(d, purpose, context, timeout, progress, work)


def _under_lock(d: Target, purpose: str, context: dict, timeout: float, progress, work: Callable[[], ApplyResult]) -> ApplyResult:
    """Run `work` holding the fabric lock, after settling an interrupted apply, with SIGINT and
    SIGTERM turned into a restore; every outcome goes to the audit log under `purpose`."""
    t0 = time.perf_counter()
    lock = take_lock(d, purpose, progress, **context)
    result = ApplyResult(False, "not started")
    try:
        recover(d, timeout, progress)
        with _signals_raise():
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


def _file_digest(path: Path | None) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None
    except OSError:
        return None


@contextmanager
def _signals_raise():
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
def _signals_ignored():
    """While restoring, a second Ctrl-C must not abandon the restore half-way (the command ends
    with the restore's outcome anyway)."""
    old = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _timed(phases: dict, name: str, fn, *args):
    t = time.perf_counter()
    try:
        return fn(*args)
    finally:
        phases[name] = round(time.perf_counter() - t, 3)


def _apply_locked(plan: dict, d: Target, context: dict, timeout: float, progress, keep_live: bool) -> ApplyResult:
    phases: dict[str, float] = {}
    progress("checking the plan (digests, reachability, loops, deadlock per VL, balance, QoS)")
    checked = _timed(phases, "check plan", check_plan, plan)
    d.health()
    progress("reading live tables")
    live_text = _timed(phases, "read live", d.read_lfts)
    q = plan["qos"]
    # stale: forwarding tables read back, QoS by the options OpenSM programs the ports from (a full
    # QoS read-back costs minutes on a big fabric; plan did one, apply's verify does the next)
    inputs = d.read_inputs()
    current_conf = inputs["conf"] if inputs["conf"] is not None else UNMANAGED
    if digest_live(live_text) != plan["live_sha256"] or current_conf != q["previous_conf"]:
        raise PlanError("the live tables changed since this plan was made (stale plan); run `loom plan` again")
    if keep_live and plan["drift"]:
        raise PlanError(f"--keep-live: the fabric holds changes made outside loom ({plan['drift']}); "
                        "nothing was applied — put them in the model, or apply without --keep-live to overwrite them")
    if not has_changes(plan):
        _remember_key(d, plan)
        return ApplyResult(True, "no changes: live tables already match the plan", phases)
    c = plan["changes"]
    if _tables_only(plan, d, inputs, current_conf):
        t = checked.tables
        touched = changed_entries(tables_from_dump(t.subnet, live_text, "live"), t,
                                  [r for r in range(t.subnet.n) if (t.lft[r] != NO_ROUTE).any()])
        change = Change({"lfts": checked.desired_lfts}, checked.desired_lfts, None, t.subnet, c["entries_changed"],
                        c["switches_touched"], current_conf, reload=True, touched=touched, tables=t)
    else:
        change = Change({"guid2lid": plan["guid2lid"], "conf": q["desired_conf"], "lfts": checked.desired_lfts},
                        checked.desired_lfts, checked.qos_intent, checked.tables.subnet, c["entries_changed"],
                        c["switches_touched"], restore_conf(plan["fabric"], current_conf, q["desired_conf"]))
    record = {**context, "model": plan["model"], "routing_key": plan.get("routing_key")}
    return _push_verified(d, change, {**inputs, "conf": current_conf}, record, timeout, progress, phases,
                          {"desired_lfts": checked.desired_lfts, "previous_live": checked.previous_lfts})


def _tables_only(plan: dict, d: Target, inputs: dict, current_conf: str) -> bool:
    """Does only the routing change, on a fabric that holds what loom applied last?  Then OpenSM
    re-reading its file is enough: it sends the blocks that differ from what it programmed,
    which are the entries that change, and only those are read back.  Loom must have applied
    before (else drift could not show), and options, pinned LIDs and QoS must stand as they are;
    otherwise OpenSM restarts and reprograms everything, which is also what repairs drift."""
    q = plan["qos"]
    return (plan["drift"] is None and (d.dir / "last-applied.sha256").exists() and inputs["lfts"] is not None
            and q["desired_conf"] == current_conf and not q["ports_differing"] and plan["guid2lid"] == inputs["guid2lid"])


@dataclass
class Change:
    """What an apply writes to the target's input files and must then read back."""

    files: dict[str, str | None]  # input files by role ("lfts", "conf", "guid2lid")
    lfts: str  # the tables the fabric must hold afterwards (OpenSM's dump format)
    qos_intent: dict | None  # QoS the ports must hold afterwards; None: not read back
    subnet: object  # the subnet the QoS is read over
    entries: int
    switches: int
    restore_conf: str | None  # the options a restore writes back
    in_service: list[int] | None = None  # GUIDs of the switches that must answer (None: all)
    reload: bool = False  # only the LFT file changes: OpenSM re-reads it (SIGHUP) instead of restarting
    touched: Entries | None = None  # with reload: the entries that change, the only ones read back
    tables: Tables | None = None  # with touched: what they must hold


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
        raise _nothing_written(d, exc) from None
    context = {k: record.get(k) for k in ("fabric", "plan", "plan_sha256", "model_sha256") if k in record}
    try:
        return work(journal)
    except (TargetError, OSError, Interrupted) as exc:
        with _signals_ignored():
            progress(f"apply failed ({_reason(exc)}); restoring {what}")
            ok, restored = _timed(phases, "restore", undo, journal.load())
        audit.record(d.dir, "restore", ok=ok, outcome=restored, cause=_reason(exc), **context)
        if isinstance(exc, Interrupted):
            raise Interrupted(exc.signum, restored) from None
        return ApplyResult(False, f"apply failed: {_reason(exc)}; {restored}", phases)


def _push_verified(d: Target, change: Change, previous: dict[str, str | None], record: dict, timeout: float,
                   progress, phases: dict, texts: dict[str, str | None]) -> ApplyResult:
    """Write, push, read back, verify (`journalled`: on any failure the previous inputs are
    restored and verified).  The caller holds the fabric lock."""
    def work(journal: Journal) -> ApplyResult:
        conf_changes = change.files.get("conf", previous.get("conf")) != previous.get("conf")
        progress(f"writing {change.entries} changed entries{' and the QoS options' if conf_changes else ''}")
        try:
            d.write_inputs(change.files)
        except OSError as exc:
            journal.clear()
            raise _nothing_written(d, exc) from None
        journal.mark("written")
        if change.reload:
            progress("pushing: OpenSM re-reads its tables and sends the blocks that changed")
            engine = _timed(phases, "push", d.reload, timeout)
        else:
            progress("pushing: " + ("OpenSM restarts on the new inputs and programs every switch and port" if d.kind == "sim"
                                    else "the master's OpenSM restarts on its inputs (standbys hold the same files)"))
            engine = _timed(phases, "push", d.push, timeout)
        if engine != "file":
            raise TargetError(f"OpenSM rejected the tables and fell back to {engine}")
        journal.mark("reloaded")
        progress("reading back and verifying")
        if change.touched is not None:
            back = _timed(phases, "read back", read_blocks, d, change.subnet, blocks_of(change.touched))
            wrong, live_sha = block_mismatch(change.tables, change.touched, back), digest_tables(change.tables)
        else:
            back = _timed(phases, "read back", d.read_lfts, _expect(change.in_service))
            wrong, live_sha = mismatch(back, change.lfts, _only(change.in_service)), digest_live(back)
        if wrong:
            raise TargetError(f"read-back differs from the plan: {wrong}")
        qos_back = None
        if change.qos_intent is not None:
            qos_back = _timed(phases, "read back QoS", d.read_qos, change.subnet)
            bad = mismatches(qos_back, change.qos_intent)
            if bad:
                raise TargetError(f"QoS read-back differs from the intent on {len(bad)} ports, e.g. {bad[0]}")
        standbys = _timed(phases, "verify standbys", d.standby_drift, {**previous, **change.files})
        if standbys:
            raise TargetError(f"a standby does not hold the applied files: {standbys[0]}")
        d.health()  # OpenSM must still run once verified, not only while it was read
        journal.mark("verified", live_sha256=live_sha, qos_sha256=digest(qos_back) if qos_back else None)
        _finish(d, journal.load(), journal)
        ports = f", QoS verified on {len(qos_back)} ports" if qos_back is not None else ""
        return ApplyResult(True, f"applied and verified: {change.entries} entries on {change.switches} switches{ports}",
                           phases, change.entries)

    record = {**record, "in_service": change.in_service, "restore_conf": change.restore_conf}
    texts = {**texts, **{f"previous_{k}": v for k, v in previous.items()}}
    return journalled(d, record, work, lambda j: _restore(d, j, timeout), "the previous tables", progress, phases, texts)


def _expect(in_service: list[int] | None) -> int | None:
    return None if in_service is None else len(in_service)


def _only(in_service: list[int] | None) -> set[int] | None:
    return None if in_service is None else set(in_service)


def _nothing_written(d: Target, exc: OSError) -> PlanError:
    return PlanError(f"cannot write the fabric's input files in {d.where()}: {exc.strerror}; nothing was changed — "
                     "free space or make the directory writable, then apply again")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, Interrupted):
        return f"interrupted by {signal.Signals(exc.signum).name}"
    if isinstance(exc, OSError):
        return f"{exc.strerror} ({exc.filename})" if exc.filename else str(exc)
    return str(exc)


def _remember_key(d: Target, plan: dict) -> None:
    """A plan with nothing to change: when what loom applied last is its desired tables, they
    are the routing of its model too (the next plan of the same model takes them as they are)."""
    last = d.dir / "last-applied.sha256"
    if plan.get("routing_key") and last.exists() and last.read_text().strip() == plan["desired_sha256"]:
        write_all_atomic({d.dir / "last-applied.key": plan["routing_key"] + "\n"})


def _finish(d: Target, j: dict, journal: Journal) -> None:
    """Record what is now live as loom's (its digest and the tables, the next plan's routing
    hint), then drop the journal."""
    write_all_atomic({d.dir / "last-applied.sha256": j["live_sha256"] + "\n",
                      d.dir / "last-applied.key": (j["routing_key"] + "\n") if j.get("routing_key") else None,
                      d.dir / "last-applied.lfts": _kept(journal, j, "desired_lfts"),
                      d.dir / "last-applied-qos.sha256": (j["qos_sha256"] + "\n") if j.get("qos_sha256") else None})
    journal.clear()


def _kept(journal: Journal, j: dict, name: str) -> str | None:
    """A text the journal kept: beside it, or packed into the record by an earlier Loom
    (an apply that died mid-way under an older version is still finished or restored)."""
    if "texts" in j:
        return journal.text(j, name)
    packed = {"desired_lfts": j.get("desired_lfts"), "previous_live": j.get("previous_live"),
              **{f"previous_{k}": v for k, v in (j.get("previous_files") or {}).items()}}.get(name)
    return unpack(packed) if packed else None


def _restore(d: Target, j: dict, timeout: float) -> tuple[bool, str]:
    """Put back the inputs saved in the journal, push them and verify routing and QoS.
    The journal is cleared only once the inputs are back (a failed write keeps it for the next try)."""
    journal = Journal(d.dir)
    files = {k: _kept(journal, j, f"previous_{k}") for k in ("lfts", "conf", "guid2lid")}
    try:
        d.write_inputs({"lfts": files["lfts"], "conf": j["restore_conf"], "guid2lid": files["guid2lid"]})
    except (OSError, TargetError) as exc:
        return False, (f"RESTORE FAILED: cannot write {d.where()} ({getattr(exc, 'strerror', None) or exc}); the journal "
                       "is kept and the next loom command on this fabric retries the restore")
    if d.fabric_down():
        journal.clear()
        return True, "previous input files restored; the fabric is down (`loom sim up` loads them, checked)"
    try:
        engine = d.push(timeout)
        back = d.read_lfts(_expect(j.get("in_service")))
        target = files["lfts"] if files["lfts"] is not None else _kept(journal, j, "previous_live")
        wrong = (mismatch(back, target, _only(j.get("in_service"))) if engine == "file" or files["lfts"] is None
                 else f"OpenSM fell back to {engine}")
        intent = conf_intent(j["restore_conf"])
        if not wrong and intent is not None:
            bad = mismatches(d.read_qos(_as_it_stands(j)), intent)
            wrong = f"QoS differs on {len(bad)} ports, e.g. {bad[0]}" if bad else None
    except TargetError as exc:
        journal.clear()
        return False, f"RESTORE FAILED ({exc}): the previous inputs are in place; run `loom sim up` then `loom plan`"
    journal.clear()
    if wrong:
        return False, f"RESTORE FAILED: read-back differs from the previous state ({wrong}); run `loom plan` to see it"
    return True, "previous tables restored and verified (routing" + (" and QoS)" if intent is not None else ")")


def _as_it_stands(j: dict):
    """The subnet a journal's apply was made for: the model's, without the cables a watcher
    found down (directed routes must not cross them)."""
    fabric = load_fabric(j["model"])
    down = j.get("cables_down")
    return subnet(without(fabric, parse_failures(fabric, down)) if down else fabric, 0)


def recover(d: Target, timeout: float = 180, progress: Callable[[str], None] = _quiet) -> str | None:
    """Resolve an apply that died (its journal is still there); the caller holds the fabric lock.
    Also removes temp files and umad2sim trees killed processes left.  Returns what was done."""
    d.clean_leftovers()
    journal = Journal(d.dir)
    j = journal.load()
    if j is None:
        return None
    finish, restore = _finish, _restore
    if j.get("kind") == "frr":  # an Ethernet fabric's apply (FRR configurations, not tables)
        from .frr_apply import finish, restore
    if j["phase"] == "verified":
        finish(d, j, journal)
        ok, outcome = True, "its changes had been verified: recorded as applied"
    else:
        with _signals_ignored():
            ok, outcome = restore(d, j, timeout)
    message = f"an apply (pid {j.get('pid')}) was interrupted after phase '{j['phase']}': {outcome}"
    progress(message)
    audit.record(d.dir, "interrupted apply resolved", ok=ok, outcome=outcome, interrupted_pid=j.get("pid"),
                 interrupted_phase=j["phase"], fabric=j.get("fabric"), plan_sha256=j.get("plan_sha256"),
                 model_sha256=j.get("model_sha256"))
    return message


def settle(d: Target, progress: Callable[[str], None] = _quiet, timeout: float = 180) -> str | None:
    """For commands that only read (plan): resolve an interrupted apply first, under the lock."""
    if Journal(d.dir).load() is None:
        return None
    lock = take_lock(d, "recovery", progress)
    try:
        return recover(d, timeout, progress)
    finally:
        lock.release()
