"""Apply a checked plan to the running fabric, write-ahead journalled, verified by reading back.

    lock → settle an interrupted apply → check the plan (checked.py) → health → stale? →
    journal intent (previous inputs saved) → write all inputs → push → read back LFTs + QoS →
    journal verified → records → journal cleared

Any failure after the journal's intent — a mismatch, a dead daemon, a full disk, SIGINT or
SIGTERM — restores the saved inputs, pushes them and verifies routing *and* QoS; SIGKILL or
power loss leaves the journal, and the next command that takes the lock (`recover`) finishes
or restores it.  Every attempt, refusal, takeover and recovery goes to the audit log.  The lock,
the journal's skeleton and the signals are the shared engine's (`loom.push.engine`).
The push itself is OpenSM restarted on the new inputs, which programs every entry and every
QoS table whatever the switches hold, so drift made on a switch is repaired, not missed.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

import numpy as np

from loom.expand import load_fabric
from loom.expand.asbuilt import load_as_built, without_named
from loom.push import engine
from loom.push.audit import who
from loom.push.engine import ApplyResult, Resolver, apply_on, journalled, nothing_written, quiet, timed, under_lock
from loom.push.errors import PlanError, TargetError
from loom.files import write_all_atomic
from loom.push.journal import Journal
from loom.push.packing import digest_live, digest_tables, mismatch, rows_text, unpack
from loom.push.planfile import as_planned, check_state_dir, checked_model
from loom.qos import plan_qos
from loom.render.opensm import lfts_dump, tables_from_dump
from loom.routing import Tables, subnet
from loom.routing.base import NO_ROUTE
from loom.routing.changes import table_changes
from loom.routing.updown import UpDown

from .checked import CheckedPlan, check_plan, failing_checks, push_verdict
from .design import applied_last, design_files, last_applied
from .edited import edited_files
from .lft_readback import (Entries, block_jobs, block_mismatch, blocks_answered, blocks_of, changed_entries, read_blocks, read_live,
                           whole_tables)
from .pkeys import files as pkey_files, finish_files as pkey_finish, partitions_change, stale as pkeys_stale
from .pkeys import verify as verify_pkeys
from .plan import Routed, drifted, model_routing, routing_key, state_of
from .planned import inputs_digest, recalled
from .qos_conf import UNMANAGED, conf_intent, restore_conf
from .qos_readback import digest, directed_routes, mismatches, qos_answered, qos_jobs
from .target import Target
from .targets import target_of_plan

PUSH_TIMEOUT = 180.0  # s a push (OpenSM's sweep) and its read-back may take (`loom apply --timeout`)


def apply_plan(plan: dict, plan_path: Path | None = None, timeout: float = PUSH_TIMEOUT,
               progress: Callable[[str], None] = quiet, keep_live: bool = False, from_edited: bool = False) -> ApplyResult:
    """Apply a plan to the target it was made for and verify it by reading back.  A plan whose
    tables are not what its model routes is refused unless `from_edited` (`--from-edited-plan`).
    Raises PlanError on a refusal (nothing changed) and Interrupted after SIGINT/SIGTERM."""
    return apply_on(target_of_plan(plan), RESOLVER, plan, plan_path, timeout, progress, keep_live,
                    partial(_apply_locked, from_edited=from_edited))


def apply_tables(d: Target, model: Path, tables: Tables, purpose: str, timeout: float = 180,
                 progress: Callable[[str], None] = quiet, previous: Tables | None = None, **context) -> ApplyResult:
    """Push tables made for the fabric as it stands (a watcher's reroute after a failure, or its
    return to the design tables), through the same lock, journal, read-back and restore as a
    plan.  Only the forwarding tables change — OpenSM's options and pinned LIDs stay — and
    OpenSM re-reads its file (SIGHUP: it sends only the blocks that differ from what it
    programmed) instead of restarting, so only the entries that change are read back
    (`loom.fabrics.infiniband.lft_readback`).  `previous`: the tables the caller last applied and verified
    (a watcher), which spares reading every table first; without it the live tables are read.
    Drift that OpenSM does not know of is apply's to repair (`push`), not a watcher's.  The
    caller has checked `tables` on the fabric they were made for."""
    context = {"fabric": tables.subnet.fabric.name, **context}

    rows = [int(x) for x in np.flatnonzero(UpDown.of(tables.subnet).live)]
    in_service = _in_service(tables)

    def work() -> ApplyResult:
        phases: dict[str, float] = {}
        d.health()
        inputs = _inputs(d)
        live, live_text = previous, None
        if previous is None or inputs["lfts"] is None:  # the restore needs what is live
            live_text = timed(phases, "read live", d.read_lfts, len(in_service))
            live = tables_from_dump(tables.subnet, live_text, "live")
        touched = changed_entries(live, tables, rows)
        entries = sum(len(lids) for lids in touched.values())
        if not entries:
            return ApplyResult(True, "no changes: the fabric already holds these tables", phases)
        want = lfts_dump(tables)
        conf = inputs["conf"] if inputs["conf"] is not None else UNMANAGED
        change = Change({"lfts": want}, want, None, tables.subnet, entries, len(touched), conf, tables, in_service,
                        reload=True, touched=touched)
        record = {**context, "model": str(Path(model).resolve())}
        return _push_verified(d, change, {**inputs, "conf": conf}, record, timeout, progress, phases,
                              {"desired_lfts": want, "previous_live": live_text})

    return under_lock(d, RESOLVER, purpose, context, timeout, progress, work)


def _apply_locked(plan: dict, d: Target, context: dict, timeout: float, progress, keep_live: bool,
                  from_edited: bool = False) -> ApplyResult:
    phases: dict[str, float] = {}
    progress("checking the plan (digests, reachability, loops, deadlock per VL, balance, QoS)")
    checked, live = timed(phases, "check plan + read live at once", _checked_and_live, plan, d, progress)
    t = checked.tables
    live_sha = digest_tables(live)
    in_service = _in_service(t)
    q = plan["qos"]
    # stale: forwarding tables read back, QoS by the options OpenSM programs the ports from (a full
    # QoS read-back costs minutes on a big fabric; plan did one, apply's verify does the next)
    inputs = _inputs(d)
    current_conf = inputs["conf"] if inputs["conf"] is not None else UNMANAGED
    if live_sha != plan["live_sha256"] or current_conf != q["previous_conf"] or pkeys_stale(plan, inputs):
        raise PlanError("the live tables changed since this plan was made (stale plan); run `loom plan` again")
    if keep_live and plan["drift"]:
        raise PlanError(f"--keep-live: the fabric holds changes made outside loom ({plan['drift']}); "
                        "nothing was applied — put them in the model, or apply without --keep-live to overwrite them")
    routed = timed(phases, "route the model", _model_routing, plan, checked.fabric, t, d.dir, live, checked.design_lfts)
    edited = None if routed.made == AS_PLANNED else _edited(routed, t, checked.design_lfts)
    if edited and not from_edited:
        raise PlanError(f"the plan's tables differ from what its model routes on this fabric ({edited}): it was edited "
                        "after `loom plan` made it; nothing was applied — run `loom plan` again, or `loom apply "
                        "--from-edited-plan` to push it as it is (the next `loom plan` reports the difference)")
    # what changes is computed here, from the live tables and the inputs, never taken from the plan's summary
    ch = table_changes(live, t)
    standbys = d.standby_drift(inputs)
    pkeys = pkey_files(plan)  # the partitions file when loom manages it: computed against the live one
    partitions = bool(pkeys) and (inputs.get("partitions") != pkeys["partitions"] or partitions_change(plan))
    if not (ch.entries or q["desired_conf"] != current_conf or q["ports_differing"] or standbys or partitions):
        if not edited:
            _remember_key(d, routed, checked.desired_lfts, plan)
        return ApplyResult(True, "no changes: the live tables already are the plan's", phases)
    if not partitions and _tables_only(plan, d, inputs, current_conf, drifted(d, t.subnet, live, live_sha, routed.last)):
        touched = changed_entries(live, t, [r for r in range(t.subnet.n) if (t.lft[r] != NO_ROUTE).any()])
        change = Change({"lfts": checked.desired_lfts}, checked.desired_lfts, None, t.subnet, ch.entries,
                        ch.switches, current_conf, t, in_service, reload=True, touched=touched)
    else:
        change = Change({"guid2lid": plan["guid2lid"], "conf": q["desired_conf"], "lfts": checked.desired_lfts, **pkeys},
                        checked.desired_lfts, checked.qos_intent, t.subnet, ch.entries,
                        ch.switches, restore_conf(plan["fabric"], current_conf, q["desired_conf"]), t, in_service,
                        pkeys=pkeys or None)
    design = _design_of(routed, plan)
    record = {**context, "model": plan["model"], "routing_key": None if edited else routed.key,
              "design_key": routed.design_key if design is not None else None,
              "design_sha256": digest_tables(design) if design is not None else None,  # not parsed again from 15 MB
              "edited": {"routing_key": routed.key, "user": who()["user"], "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                         "plan_sha256": plan["plan_sha256"]} if edited else None,
              "cables_down": (plan.get("as_built") or {}).get("cables_down")}
    result = _push_verified(d, change, {**inputs, "conf": current_conf}, record, timeout, progress, phases,
                            {"desired_lfts": checked.desired_lfts, "previous_live": checked.previous_lfts,
                             "design_lfts": lfts_dump(design) if design is not None else None,
                             "model_lfts": lfts_dump(routed.tables) if edited else None})
    if edited and result.ok:
        result.message += " (from an edited plan: the next `loom plan` reports the difference to the model's routing)"
    return result


def _inputs(d: Target) -> dict:
    """The target's input files as an apply needs them: the small ones as their texts, the
    tables as the journal keeps them (a local file by its path: its 15 MB neither read nor
    copied, only linked; a remote one as its text)."""
    return {k: v.read_text() if isinstance(v, Path) and k != "lfts" else v for k, v in d.kept_inputs().items()}


AS_PLANNED = "as planned"  # `Routed.made` of tables a plan recorded routing from the same inputs: not edited


def _model_routing(plan: dict, fabric, tables: Tables, state_dir: Path, live: Tables, design_lfts: str | None) -> Routed:
    """What the plan's model routes on the fabric the plan was made for (the cables down it
    names), computed from the target's records as `loom plan` does (`model_routing`) — unless
    `loom plan` recorded routing these very tables (and design tables `design_lfts`) from these
    very inputs (`planned.py`): then they are the model's routing, not routed again.  The plan's
    own `tables` passed every check already: they need not be checked again."""
    state = load_as_built(plan["model"])
    state = state.with_observed((plan.get("as_built") or {}).get("cables_down") or [])
    key, design_key = routing_key(state.fabric), routing_key(state.design)
    inputs = inputs_digest(state_dir, key, design_key, plan["live_sha256"])
    if recalled(state_dir, inputs, digest_tables(tables), digest_live(design_lfts) if design_lfts is not None else None):
        design = tables_from_dump(tables.subnet, design_lfts, "design") if design_lfts is not None else None
        return Routed(tables, AS_PLANNED, [], key, design_key, design, last_applied(state_dir, state.fabric), None)
    qos = plan_qos(fabric.model)

    def failing(t: Tables) -> list[str]:
        if t.lft.shape == tables.lft.shape and (t.lft == tables.lft).all():
            return []
        return failing_checks(push_verdict(t, qos))

    return model_routing(state, state_dir, live, failing)


def edited_against_model(plan: dict) -> str | None:
    """For `loom show`: how a plan's tables differ from what its model routes on the fabric it
    was made for, judged as apply judges it (with the live tables the plan was made against);
    None when they are the model's, or when it cannot be judged here (its model or state gone:
    apply says why)."""
    try:
        fabric = as_planned(plan, checked_model(plan, "the plan"), "the plan")
        sn = subnet(fabric, 0)
        tables = tables_from_dump(sn, rows_text(plan["desired_lfts"], "the plan", "desired_lfts"), "plan")
        live = tables_from_dump(sn, rows_text(plan["previous_lfts"], "the plan", "previous_lfts"), "live")
        design = plan.get("design_lfts")
        design = rows_text(design, "the plan", "design_lfts") if design is not None else None
        routed = _model_routing(plan, fabric, tables, check_state_dir(plan, "the plan", _marker(plan)), live, design)
        return None if routed.made == AS_PLANNED else _edited(routed, tables, design)
    except (PlanError, TargetError, OSError, KeyError, TypeError, ValueError):
        return None


def _marker(plan: dict) -> str:
    """The file loom writes in the state directory of the plan's target kind."""
    return "target.json" if (plan.get("target") or {}).get("kind") == "ssh" else "fabric.net"


def _edited(routed: Routed, tables: Tables, design_lfts: str | None) -> str | None:
    """How the plan's tables (and the design tables it carries) differ from the model's routing,
    or None when they are the model's."""
    if routed.tables.lft.shape != tables.lft.shape:
        return "they are not tables of the fabric as it stands"
    ch = table_changes(routed.tables, tables)
    if ch.entries:
        return f"{ch.entries} entries on {ch.switches} switches"
    mine = routed.new_design
    if (design_lfts is None) != (mine is None) or (mine is not None and digest_live(design_lfts) != digest_tables(mine)):
        return "the design tables it carries are not the model's"
    return None


def _design_of(routed: Routed, plan: dict) -> Tables | None:
    """The design tables to keep with this apply: the model's routing where nothing is down, or
    the design tables the routing was repaired from when loom does not keep them yet."""
    if routed.new_design is not None:
        return routed.new_design
    return routed.tables if (plan.get("as_built") or {}).get("cables_down") == [] else None


def _tables_only(plan: dict, d: Target, inputs: dict, current_conf: str, drift: bool) -> bool:
    """Does only the routing change, on a fabric that holds what loom applied last?  Then OpenSM
    re-reading its file is enough: it sends the blocks that differ from what it programmed,
    which are the entries that change, and only those are read back.  Loom must have applied
    before (else drift could not show), and options, pinned LIDs and QoS must stand as they are;
    otherwise OpenSM restarts and reprograms everything, which is also what repairs drift."""
    q = plan["qos"]
    return (not drift and (d.dir / "last-applied.sha256").exists() and inputs["lfts"] is not None
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
    tables: Tables  # what the switches must hold (at `touched`, or whole)
    in_service: list[int] | None = None  # GUIDs of the switches that must answer (None: all)
    reload: bool = False  # only the LFT file changes: OpenSM re-reads it (SIGHUP) instead of restarting
    touched: Entries | None = None  # with reload: the entries that change, the only ones read back
    pkeys: dict | None = None  # {"partitions": the file written, None: removed}: P_Key tables verified; None: not read


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
            raise nothing_written(d, exc) from None
        journal.mark("written")
        if change.reload:
            progress("pushing: OpenSM re-reads its tables and sends the blocks that changed")
            engine = timed(phases, "push", d.reload, timeout)
            swept = d.sweeps()
        else:
            progress("pushing: " + ("OpenSM restarts on the new inputs and programs every switch and port" if d.kind == "sim"
                                    else "the master's OpenSM restarts on its inputs (standbys hold the same files)"))
            engine = timed(phases, "push", d.push, timeout)
        if engine != "file":
            raise TargetError(f"OpenSM rejected the tables and fell back to {engine}")
        journal.mark("reloaded")
        progress("reading back and verifying")
        if change.qos_intent is None:
            wrong, live_sha = timed(phases, "read back", _read_back_lfts, d, change)
            qos_back = None
        else:  # the QoS read-back waits on the fabric for seconds: the forwarding tables are read meanwhile
            (wrong, live_sha), qos_back = timed(phases, "read back LFTs + QoS at once", _read_back_both, d, change)
        if wrong and change.reload and d.await_sweeps(swept, min(timeout, max(5.0, 3 * phases["push"]))):
            # OpenSM was sweeping (on a trap) when it was signalled: the sweep waited for began
            # before the file was in place, and the one the signal queued is the next
            wrong, live_sha = timed(phases, "read back after the next sweep", _read_back_lfts, d, change)
        if wrong:
            raise TargetError(f"read-back differs from the plan: {wrong}")
        if qos_back is not None:
            bad = mismatches(qos_back, change.qos_intent)
            if bad:
                raise TargetError(f"QoS read-back differs from the intent on {len(bad)} ports, e.g. {bad[0]}")
        pkeys_sha, pkey_ports = None, None
        if change.pkeys is not None:
            pkeys_sha, pkey_ports = timed(phases, "read back P_Keys", verify_pkeys, d, change.subnet,
                                          change.pkeys["partitions"])
        standbys = timed(phases, "verify standbys", d.standby_drift, {**previous, **change.files})
        if standbys:
            raise TargetError(f"a standby does not hold the applied files: {standbys[0]}")
        d.health()  # OpenSM must still run once verified, not only while it was read
        journal.mark("verified", live_sha256=live_sha, qos_sha256=digest(qos_back) if qos_back else None,
                     pkeys_sha256=pkeys_sha)
        _finish(d, journal.load(), journal)
        ports = (f", QoS verified on {len(qos_back)} ports" if qos_back is not None else "") + \
            (f", P_Keys verified on {pkey_ports} ports" if pkey_ports is not None else "")
        return ApplyResult(True, f"applied and verified: {change.entries} entries on {change.switches} switches{ports}",
                           phases, change.entries)

    record = {**record, "in_service": change.in_service, "restore_conf": change.restore_conf,
              "partitions_saved": "partitions" in change.files, "pkeys_verified": change.pkeys is not None,
              "pkeys_removed": change.pkeys is not None and change.pkeys["partitions"] is None}
    texts = {**texts, **{f"previous_{k}": v for k, v in previous.items()}}
    return journalled(d, record, work, lambda j: _restore(d, j, timeout), "the previous tables", progress, phases, texts)


def _read_back_lfts(d: Target, change: Change) -> tuple[str | None, str]:
    """How the forwarding tables read back differ from the change's (None: they do not), and
    the digest of what is live now (the change's tables: they were read back whole or, after a
    reload, at every entry that changed)."""
    entries = _entries_read_back(change)
    back = read_blocks(d, change.subnet, blocks_of(entries))
    return block_mismatch(change.tables, entries, back), digest_tables(change.tables)


def _entries_read_back(change: Change) -> Entries:
    return change.touched if change.touched is not None else whole_tables(change.tables, change.in_service)


def _read_back_both(d: Target, change: Change) -> tuple[tuple[str | None, str], dict]:
    """The forwarding tables' blocks and the QoS tables in one read-back (`_read_back_lfts`'
    answer, `read_qos`'): one set of reader processes answers both, where two sets at once
    took turns on the cores (3.0 s against the QoS tables' 2.4 s alone on two zones)."""
    entries = _entries_read_back(change)
    paths, _ = directed_routes(change.subnet, d.sm_ca())
    answers = d.smp(block_jobs(paths, blocks_of(entries)) + qos_jobs(change.subnet, d.sm_ca()), "the read-back")
    wrong = block_mismatch(change.tables, entries, blocks_answered(answers))
    return (wrong, digest_tables(change.tables)), qos_answered(answers)


def _checked_and_live(plan: dict, d: Target, progress) -> tuple[CheckedPlan, Tables]:
    """The plan checked (`check_plan`) and the live tables read (`_live_tables`) at once: the
    checks are CPU, the read waits on the fabric.  The read starts once the plan's signature
    and digests hold; a plan refused after that is said when the read has ended (a second on
    the simulated two zones), as no read is left running behind a refusal."""
    with ThreadPoolExecutor(1) as pool:
        reading = []

        def read(sn) -> None:
            _cabling_unchanged(plan, d)  # first: a read over a cable gone since would only time out
            reading.append(pool.submit(_live_tables, d, sn, progress))

        checked = check_plan(plan, "the plan", read)
        return checked, reading[0].result()


def _cabling_unchanged(plan: dict, d: Target) -> None:
    """PlanError when a cable went down, came back or was marked since the plan was made: its
    tables were checked on the cabling it saw (`as_built.cables_down`), and the live tables do
    not show a cable that failed — pushed, they could send traffic down it.  A plan without
    the record (an older loom's) is not compared."""
    was = (plan.get("as_built") or {}).get("cables_down")
    if not isinstance(was, list):
        return
    state = state_of(Path(plan["model"]), d)
    now, was = set(state.cable_names(state.cables_down)), set(map(str, was))
    if now != was:
        said = "; ".join(f"{label}: {', '.join(names[:5])}{' ...' if len(names) > 5 else ''}"
                         for label, names in (("down now", sorted(now - was)), ("back now", sorted(was - now))) if names)
        raise PlanError(f"the fabric's cabling changed since this plan was made ({said}): its tables were checked on "
                        "the cabling it saw; nothing was applied — run `loom plan` again")


def _live_tables(d: Target, sn, progress) -> Tables:
    """The live tables of every switch in service, read where the master subnet manager is
    (asked first, refusing none or two; over SSH, the one pushed to)."""
    master, _ = d.subnet_managers()
    d.health()
    progress(f"reading live tables (master subnet manager: {master.name})")
    return read_live(d, sn)


def _in_service(tables: Tables) -> list[int]:
    """GUIDs of the switches the tables are for that are in service (the read-back waits for
    these; a switch that is down, or cut off from the subnet manager, cannot answer)."""
    return [int(tables.subnet.switch(x).guid) for x in np.flatnonzero(UpDown.of(tables.subnet).live)]


def _expect(in_service: list[int] | None) -> int | None:
    return None if in_service is None else len(in_service)


def _only(in_service: list[int] | None) -> set[int] | None:
    return None if in_service is None else set(in_service)


def _remember_key(d: Target, routed: Routed, desired: str, plan: dict) -> None:
    """A plan of the model with nothing to change: when what loom applied last is its tables,
    they are the routing of its model too (the next plan of the same model takes them as they
    are).  They are the design tables only where nothing was down (`_design_of`): a no-change
    apply around a dead spine once recorded its repair as the design, and every plan after the
    spine came back failed its checks."""
    if applied_last(d.dir, digest_live(desired)):
        design = _design_of(routed, plan)
        lfts = lfts_dump(design) if design is not None else None
        write_all_atomic({d.dir / "last-applied.key": routed.key + "\n", **edited_files(d.dir, None, None),
                          **_design_files(d, routed.design_key if lfts is not None else None, lfts)})


def _design_files(d: Target, design_key: str | None, lfts: str | Path | None, digest: str | None = None) -> dict:
    """The design tables' files to write with the apply's own records (none unless both are known)."""
    return design_files(d.dir, design_key, lfts, digest) if design_key and lfts else {}


def _finish(d: Target, j: dict, journal: Journal) -> None:
    """Record what is now live as loom's (its digest and the tables, the next plan's routing
    hint), then drop the journal."""
    # the design is the desired tables unless the journal kept its own: then the digest of what
    # was verified live is the desired tables', not the design's
    designed = {}
    if j.get("design_key"):  # (the desired tables are read only then: a watcher's apply has none)
        design = _kept_whole(journal, j, "design_lfts")
        designed = (_design_files(d, j["design_key"], design, j.get("design_sha256")) if design
                    else _design_files(d, j["design_key"], _kept_whole(journal, j, "desired_lfts"), j["live_sha256"]))
    write_all_atomic({d.dir / "last-applied.sha256": j["live_sha256"] + "\n",
                      d.dir / "last-applied.key": (j["routing_key"] + "\n") if j.get("routing_key") else None,
                      d.dir / "last-applied.lfts": _kept_whole(journal, j, "desired_lfts"),
                      d.dir / "last-applied-qos.sha256": (j["qos_sha256"] + "\n") if j.get("qos_sha256") else None,
                      **pkey_finish(d.dir, j),
                      **designed,
                      # a plan's apply records whether it came from an edited plan; a watcher's leaves that as it is
                      **(edited_files(d.dir, j["edited"], _kept(journal, j, "model_lfts")) if "edited" in j else {})})
    journal.clear()


def _kept_whole(journal: Journal, j: dict, name: str) -> str | Path | None:
    """A text the journal kept, for a file that takes it whole: the kept file itself (linked),
    or the text of an earlier Loom's packed record."""
    return journal.file(j, name) if "texts" in j else _kept(journal, j, name)


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
    files = {k: _kept(journal, j, f"previous_{k}") for k in ("lfts", "conf", "guid2lid")
             + (("partitions",) if j.get("partitions_saved") else ())}
    try:
        d.write_inputs({**files, "conf": j["restore_conf"]})
    except (OSError, TargetError) as exc:
        return False, (f"RESTORE FAILED: cannot write {d.where()} ({getattr(exc, 'strerror', None) or exc}); the journal "
                       "is kept and the next loom command on this fabric retries the restore")
    if d.fabric_down():
        journal.clear()
        return True, f"previous input files restored; the fabric cannot be reached: {d.bring_up(j['model'])}"
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
        if not wrong and j.get("pkeys_verified"):
            verify_pkeys(d, _as_it_stands(j), files.get("partitions"))
    except TargetError as exc:
        journal.clear()
        return False, (f"RESTORE FAILED ({exc}): the previous inputs are in place but not verified on the fabric; "
                       f"{d.bring_up(j['model'])}, then run `loom plan`")
    journal.clear()
    if wrong:
        return False, f"RESTORE FAILED: read-back differs from the previous state ({wrong}); run `loom plan` to see it"
    return True, "previous tables restored and verified (routing" + (" and QoS)" if intent is not None else ")")


def _as_it_stands(j: dict):
    """The subnet a journal's apply was made for: the model's design without the cables it
    routed around (a plan's `as_built`, a watcher's reroute), named on the design, where every
    cable has its name (directed routes must not cross them).  Journals of an older loom name
    none: the model's fabric."""
    down = j.get("cables_down")
    if down is None:
        return subnet(load_fabric(j["model"]), 0)
    return subnet(without_named(load_as_built(j["model"]).design, down), 0)


#: how an InfiniBand apply that died is finished or undone (`loom.push.engine.recover`)
RESOLVER = Resolver(finish=_finish, restore=_restore)


def recover(d: Target, timeout: float = 180, progress: Callable[[str], None] = quiet) -> str | None:
    """Resolve an interrupted apply on `d` (the caller holds the fabric lock)."""
    return engine.recover(d, RESOLVER, timeout, progress)


def settle(d: Target, progress: Callable[[str], None] = quiet, timeout: float = 180) -> str | None:
    """Resolve an interrupted apply on `d` under the lock, for commands that only read (plan)."""
    return engine.settle(d, RESOLVER, progress, timeout)
