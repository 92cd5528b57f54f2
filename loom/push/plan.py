"""Plan and apply, Terraform-style, with the fabric itself as the state.

`make_plan` routes and checks the model, reads the live LFTs back from the running fabric
(`dump_fts`) and records what would change; the plan carries the desired tables, the live
tables it was computed against (for rollback) and their digest.  `apply_plan` refuses a stale
plan, takes a lock, writes the new tables atomically, makes OpenSM load them (SIGHUP), reads
everything back and compares entry for entry; on a mismatch, a timeout or a dead OpenSM it
restores the previous tables and verifies those.  Every apply goes to the audit log.
"""

from __future__ import annotations

import base64
import getpass
import gzip
import hashlib
import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from loom.checks import Walk, check_balance, check_tables
from loom.expand import Fabric
from loom.render.opensm import guid2lid, lfts_dump, parse_lfts_dump, tables_from_dump
from loom.qos import plan_qos
from loom.qos.render import opensm_qos_conf
from loom.routing import route, subnet
from loom.routing.base import Tables

from .daemon import Daemons, alive
from .files import write_atomic
from .qos_readback import digest, intent, mismatches, read_qos
from .sim import SimError

PLAN_VERSION = 1


class PlanError(Exception):
    """A plan or apply that must not go ahead; the message says why and what to do."""


def digest_live(text: str) -> str:
    """Digest of live tables, independent of dump formatting: sorted (guid, lid, port) rows."""
    parsed = parse_lfts_dump(text)
    h = hashlib.sha256()
    for guid in sorted(parsed):
        entries = parsed[guid]
        h.update(guid.to_bytes(8, "big"))
        h.update(np.array(sorted(entries.items()), dtype=np.uint32).tobytes())
    return h.hexdigest()


def _pack(text: str) -> str:
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


def unpack(data: str) -> str:
    """A table file packed into a plan (`desired_lfts`, `previous_lfts`) back to text."""
    return gzip.decompress(base64.b64decode(data)).decode()


def diff_tables(live: Tables, want: Tables) -> dict:
    """Entries that differ, per switch and in total, and the destinations whose routes move."""
    sn = want.subnet
    changed = live.lft != want.lft
    per_switch = {sn.name(r): int(n) for r, n in enumerate(changed.sum(axis=1)) if n}
    moved = np.flatnonzero(changed.any(axis=0))
    return {
        "switches_touched": len(per_switch),
        "entries_changed": int(changed.sum()),
        "per_switch": per_switch,
        "destinations_moved": [{"lid": int(l), "name": sn.lid_name(int(l))} for l in moved],
    }


def balance_summary(t: Tables) -> dict:
    b = check_balance(Walk(t))
    return {"max_dest_per_up_port": b.max_dest_per_up_port, "lower_bound": b.lower_bound,
            "storage": b.per_role.get("storage", {}).get("max_dest_per_up_port"), "within_bound": b.within_bound}


def make_plan(model_path: Path, fabric: Fabric, daemons: Daemons) -> dict:
    """Read the live tables, route the model keeping live routes where balance allows, check the
    result, and describe the difference."""
    if not daemons.up_and_running():
        raise PlanError(f"the simulated fabric of {fabric.name} is not up; run `loom sim up {model_path}`")
    if not daemons.cabled_as(fabric):
        raise PlanError(f"the fabric is cabled differently from {model_path}: re-cable first (`loom cabling diff` "
                        f"lists the moves; `loom sim up {model_path}` re-cables the simulation)")
    live_text = daemons.dump_fts()
    live_sha = digest_live(live_text)
    live = tables_from_dump(subnet(fabric, 0), live_text, "live")
    tables = route(fabric, hint=[live])[0]
    qos = plan_qos(fabric.model)
    verdict = check_tables(tables, ebb_samples=0, qos=qos)
    failed = [k for k, ok in (("reachability", verdict["reachable"]), ("deadlock freedom", verdict["deadlock_free"]),
                              ("balance", verdict["balance"]["within_bound"]),
                              ("QoS", verdict["qos"] is None or verdict["qos"]["ok"])) if not ok]
    if failed:
        raise PlanError(f"the routing for {fabric.name} fails {', '.join(failed)}; run `loom check {model_path}` for details")
    want_text = lfts_dump(tables)
    drift = []
    last = daemons.dir / "last-applied.sha256"
    if last.exists() and last.read_text().strip() != live_sha:
        drift.append("live forwarding tables differ from what loom applied last (changed outside loom)")
    qos_part = _plan_qos(fabric, tables.subnet, qos, daemons)
    if qos_part["drift"]:
        drift.append(qos_part["drift"])
    return {
        "version": PLAN_VERSION,
        "fabric": fabric.name,
        "model": str(model_path),
        "model_sha256": hashlib.sha256(Path(model_path).read_bytes()).hexdigest(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "user": getpass.getuser(),
        "state_dir": str(daemons.dir),
        "live_sha256": live_sha,
        "desired_sha256": digest_live(want_text),
        "drift": "; ".join(drift) or None,
        "qos": qos_part,
        "changes": diff_tables(live, tables),
        "balance_before": balance_summary(live),
        "balance_after": balance_summary(tables),
        "desired_lfts": _pack(want_text),
        "previous_lfts": _pack(lfts_dump(live)),
        "guid2lid": guid2lid(tables),
    }


def _plan_qos(fabric: Fabric, sn, qos, daemons: Daemons) -> dict:
    """Desired OpenSM QoS options, and what the ports hold now (read back when QoS is or was on)."""
    desired = opensm_qos_conf(fabric.name, qos) if qos else "qos FALSE\n"
    previous = daemons.conf_file.read_text() if daemons.conf_file.exists() else "qos FALSE\n"
    part = {"desired_conf": desired, "previous_conf": previous, "intent": intent(qos), "live_sha256": None,
            "ports_differing": 0, "examples": [], "conf_changes": desired != previous, "drift": None}
    if qos or "qos TRUE" in previous:
        live = read_qos(daemons, sn)
        part["live_sha256"] = digest(live)
        bad = mismatches(live, part["intent"])
        part["ports_differing"], part["examples"] = len(bad), bad[:5]
        last = daemons.dir / "last-applied-qos.sha256"
        if last.exists() and last.read_text().strip() != part["live_sha256"]:
            part["drift"] = f"QoS tables differ from what loom applied last on {len(bad) or 'some'} ports (changed outside loom)"
    return part


def has_changes(plan: dict) -> bool:
    q = plan["qos"]
    return bool(plan["changes"]["entries_changed"] or q["conf_changes"] or q["ports_differing"])


def read_plan(path: Path) -> dict:
    """A plan file, checked key by key before anything acts on it (`loom.inputs.read_plan_file`)."""
    from loom.inputs import InputError, read_plan_file

    try:
        return read_plan_file(Path(path), PLAN_VERSION)
    except InputError as exc:
        raise PlanError(str(exc)) from None


# ---------------------------------------------------------------------------------- apply


@dataclass
class Lock:
    """An exclusive apply lock: a file created with O_EXCL naming its holder."""

    path: Path
    held: bool = False

    def acquire(self) -> None:
        me = {"user": getpass.getuser(), "pid": os.getpid(), "host": socket.gethostname(),
              "since": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    holder = json.loads(self.path.read_text())
                except (OSError, json.JSONDecodeError):
                    holder = {}
                if alive(holder.get("pid")):
                    raise PlanError(f"another apply is running: held by {holder.get('user')} (pid {holder.get('pid')} "
                                    f"on {holder.get('host')}) since {holder.get('since')}; wait for it to finish") from None
                self.path.unlink(missing_ok=True)  # stale lock of a dead process
                continue
            with os.fdopen(fd, "w") as fh:
                json.dump(me, fh)
            self.held = True
            return
        raise PlanError(f"cannot take the apply lock {self.path}")

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False


@dataclass
class ApplyResult:
    ok: bool
    message: str
    phases: dict[str, float] = field(default_factory=dict)
    entries_changed: int = 0


def apply_plan(plan: dict, plan_path: Path | None = None, on_written: Callable[[Daemons], None] | None = None,
               timeout: float = 180, progress: Callable[[str], None] = lambda s: None) -> ApplyResult:
    """Apply a plan to the running simulated fabric and verify it by reading back.

    `on_written` runs after the new tables are written and before OpenSM is told to load them
    (tests use it to kill OpenSM mid-apply).
    """
    d = Daemons(Path(plan["state_dir"]))
    lock = Lock(d.dir / "apply.lock")
    phases: dict[str, float] = {}
    t0 = time.perf_counter()
    lock.acquire()
    result = ApplyResult(False, "not started", phases)
    try:
        result = _apply_locked(plan, d, phases, on_written, timeout, progress)
        return result
    finally:
        lock.release()
        plan_sha = hashlib.sha256(Path(plan_path).read_bytes()).hexdigest() if plan_path and Path(plan_path).exists() else None
        d.audit({"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "user": getpass.getuser(), "fabric": plan["fabric"],
                 "model_sha256": plan["model_sha256"], "plan_sha256": plan_sha, "ok": result.ok,
                 "result": result.message, "entries_changed": result.entries_changed,
                 "seconds": round(time.perf_counter() - t0, 3)})


def _timed(phases: dict, name: str, fn, *args):
    t = time.perf_counter()
    try:
        return fn(*args)
    finally:
        phases[name] = round(time.perf_counter() - t, 3)


def _apply_locked(plan: dict, d: Daemons, phases: dict, on_written, timeout: float, progress) -> ApplyResult:
    if not alive(d.pid("opensm")) or not alive(d.pid("ibsim")):
        raise PlanError(f"the simulated fabric of {plan['fabric']} is not up; run `loom sim up {plan['model']}`")
    progress("reading live tables")
    live_text = _timed(phases, "read live", d.dump_fts)
    q = plan["qos"]
    sn = _subnet_of(plan)
    # stale: forwarding tables read back, QoS by the options OpenSM programs the ports from (a full
    # QoS read-back costs minutes on a big fabric; plan did one, apply's verify does the next)
    current_conf = d.conf_file.read_text() if d.conf_file.exists() else "qos FALSE\n"
    stale = digest_live(live_text) != plan["live_sha256"] or current_conf != q["previous_conf"]
    if stale:
        raise PlanError("the live tables changed since this plan was made (stale plan); run `loom plan` again")
    changes = plan["changes"]["entries_changed"]
    if not has_changes(plan):
        return ApplyResult(True, "no changes: live tables already match the plan", phases)
    want, previous = unpack(plan["desired_lfts"]), unpack(plan["previous_lfts"])
    progress(f"writing {changes} changed entries{' and the QoS options' if q['conf_changes'] else ''}, reloading OpenSM")
    write_atomic(d.osm / "guid2lid", plan["guid2lid"])
    write_atomic(d.conf_file, q["desired_conf"])
    write_atomic(d.lfts_file, want)
    if on_written:
        on_written(d)
    try:
        engine = _timed(phases, "opensm sweep", d.reload, timeout)
        if engine != "file":
            raise SimError(f"OpenSM rejected the tables and fell back to {engine}")
        progress("reading back and verifying")
        back = _timed(phases, "read back", d.dump_fts)
        mismatch = _mismatch(back, want)
        if mismatch:
            raise SimError(f"read-back differs from the plan: {mismatch}")
        qos_back = _timed(phases, "read back QoS", read_qos, d, sn) if q["intent"] else None
        bad = mismatches(qos_back, q["intent"]) if qos_back is not None else []
        if bad:
            raise SimError(f"QoS read-back differs from the intent on {len(bad)} ports, e.g. {bad[0]}")
    except SimError as exc:
        progress(f"apply failed ({exc}); restoring the previous tables")
        restored = _timed(phases, "restore", _restore, d, previous, q["previous_conf"], timeout)
        return ApplyResult(False, f"apply failed: {exc}; {restored}", phases)
    write_atomic(d.dir / "last-applied.sha256", digest_live(back) + "\n")
    if qos_back is not None:
        write_atomic(d.dir / "last-applied-qos.sha256", digest(qos_back) + "\n")
    ports = f", QoS verified on {len(qos_back)} ports" if qos_back is not None else ""
    return ApplyResult(True, f"applied and verified: {changes} entries on {plan['changes']['switches_touched']} switches{ports}",
                       phases, changes)


def _subnet_of(plan: dict):
    """The subnet view of the plan's fabric, for naming ports in the QoS read-back."""
    from loom.expand import load_fabric

    return subnet(load_fabric(plan["model"]), 0)


def _mismatch(back_text: str, want_text: str) -> str | None:
    back, want = parse_lfts_dump(back_text), parse_lfts_dump(want_text)
    bad = [f"{g:016x}" for g in want if back.get(g) != want[g]]
    missing = set(want) - set(back)
    if bad or missing:
        return f"{len(bad)} switch tables differ (first: {bad[:3]})"
    return None


def _restore(d: Daemons, previous: str, previous_conf: str, timeout: float) -> str:
    write_atomic(d.conf_file, previous_conf)
    write_atomic(d.lfts_file, previous)
    try:
        engine = d.reload(timeout) if alive(d.pid("opensm")) else d.start_opensm(timeout)
        back = d.dump_fts()
    except SimError as exc:
        return f"RESTORE FAILED ({exc}): the fabric may be half-applied; run `loom plan` to see its state"
    if engine == "file" and _mismatch(back, previous) is None:
        write_atomic(d.dir / "last-applied.sha256", digest_live(back) + "\n")
        return "previous tables restored and verified"
    return "RESTORE FAILED: read-back differs from the previous tables; run `loom plan` to see the state"
