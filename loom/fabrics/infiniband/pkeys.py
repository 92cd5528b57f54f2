"""Partitions through plan and apply: OpenSM's `partitions.conf` as one more input file (role
"partitions"), and the P_Key tables it programs read back and compared with the intent.

What every port must hold is computed from the file itself (`intent`), so the same function
judges the desired file, the one a restore puts back, and the absence of one (OpenSM's own
default: every port a full member of 0x7fff).  OpenSM programs each CA port with its
partitions, full or limited (bit 15), and — with partition enforcement, its default — the switch
port facing the CA with the same entries; both are read back, by directed route from the
master's port in one `madquery` run (`Target.smp`), so the read-back works wherever the target is.
The table's order (which index holds which P_Key) is OpenSM's choice and differs port to port:
the entries are compared as a set.
"""

from __future__ import annotations

import hashlib
import json

from loom.expand import Fabric
from loom.expand.partitions import FULL_BIT
from loom.model.partitions import DEFAULT_PKEY
from loom.progress import counting
from loom.render.partitions import parse_partitions_conf, partitions_conf
from loom.routing.subnet import TO_CA, Subnet

from .qos_readback import directed_routes
from .target import Target

NO_PARTITIONS = [DEFAULT_PKEY | FULL_BIT]  # OpenSM without a partitions file: everyone full in the default
LAST_APPLIED = "last-applied-pkeys.sha256"  # the P_Key tables loom verified last (in the target's state directory)


def intent(sn: Subnet, conf: str | None, sm_ca: str) -> dict[str, list[int]]:
    """{"<CA>/<port>" and "<switch>/<port facing a CA>": sorted P_Key entries} once OpenSM ran
    with `conf` (None: no file); `sm_ca` is the CA of OpenSM's own port (`SELF`)."""
    table = parse_partitions_conf(conf) if conf is not None else {}
    ports = [p for p in sn.fabric.ports if p.plane == sn.plane]
    out: dict[str, list[int]] = {}
    for p in ports:
        guid = f"0x{p.guid:016x}"
        entries = set() if table else set(NO_PARTITIONS)
        for pkey, members in table.items():
            how = members.get(guid) or (members.get("self") if p.ca == sm_ca else None) or members.get("all")
            if how:
                entries.add(pkey | (FULL_BIT if how == "full" else 0))
        out[f"{p.ca}/{p.port}"] = sorted(entries)
    for row, col in zip(*(sn.peer_kind == TO_CA).nonzero()):
        p = sn.fabric.ports[int(sn.peer_dev[row, col])]
        out[f"{sn.name(int(row))}/{int(col)}"] = out[f"{p.ca}/{p.port}"]
    return out


def pkey_jobs(sn: Subnet, sm_ca: str) -> list[dict]:
    """`madquery` jobs: block 0 of every CA port's table, and of every switch port facing a CA."""
    switch_dr, ca_dr = directed_routes(sn, sm_ca)
    jobs = [{"key": f"{sn.lid_name(lid)}/{sn.fabric.ports[int(sn.lid_port[lid])].port}", "path": path, "pkeys": 0}
            for lid, path in sorted(ca_dr.items())]
    for row, col in zip(*(sn.peer_kind == TO_CA).nonzero()):
        if int(row) in switch_dr:
            jobs.append({"key": f"{sn.name(int(row))}/{int(col)}", "path": switch_dr[int(row)], "pkeys": int(col)})
    return jobs


def read_pkeys(target: Target, sn: Subnet) -> dict[str, list[int]]:
    """{port: sorted non-zero P_Key entries} of every CA port and every switch port facing one."""
    jobs = pkey_jobs(sn, target.sm_ca())
    with counting("P_Key read-back (ports)", len(jobs)):
        answers = target.smp(jobs, "P_Key read-back")
    return {a["key"]: sorted(x for x in a["pkeys"] if x) for a in sorted(answers, key=lambda a: a["key"])}


def digest(readback: dict) -> str:
    return hashlib.sha256(json.dumps(readback, sort_keys=True).encode()).hexdigest()


def mismatches(readback: dict[str, list[int]], want: dict[str, list[int]]) -> list[str]:
    """Ports read back whose P_Key table holds other entries than the intent.  Only what was
    read is judged: a port cut off from the SM (its cable down) is not asked, and one that was
    asked and did not answer failed the read-back already (`Target.smp`)."""
    def fmt(entries):
        return "[" + " ".join(f"0x{x:04x}" for x in entries) + "]"

    return [f"{port}: P_Keys {fmt(got)} instead of {fmt(want.get(port, []))}"
            for port, got in readback.items() if got != want.get(port)]


def refusal(fabric: Fabric) -> str | None:
    """Why the model's partitions must not be pushed: the first way they break the isolation
    intent (`loom.checks.partitions`), as routing that fails a check is never pushed."""
    from loom.checks.partitions import check_partitions

    report = check_partitions(fabric)
    return report["problems"][0] if report and not report["ok"] else None


def check_planned(plan: dict, fabric: Fabric, where: str) -> None:
    """`loom apply`'s re-check: the partitions file a plan carries is the model's, and the model's
    partitions hold the intent; PlanError otherwise (nothing is written)."""
    from loom.push.errors import PlanError

    p = plan.get("partitions") or {}
    if not p.get("managed"):
        return
    if p.get("desired_conf") != partitions_conf(fabric, 0):
        raise PlanError(f"{where}: its partitions differ from what {plan['model']} gives; run `loom plan` again")
    why = refusal(fabric)
    if why:
        raise PlanError(f"{where} fails partition isolation ({why}): refusing to push it; run `loom check`")


def plan_partitions(fabric: Fabric, sn: Subnet, target: Target, previous: str | None) -> dict:
    """The plan's `partitions`: the file OpenSM must read, the one it reads now, and the P_Key
    tables read back against the desired file.  Loom manages the file once a model has
    partitions: a model without them, on a target loom never pushed partitions to, leaves the
    site's file (or its absence) alone and reads nothing back; after loom pushed some, a model
    without them removes the file (every port back to OpenSM's default)."""
    from loom.push.errors import PlanError

    why = refusal(fabric)
    if why:
        raise PlanError(f"the partitions of {fabric.name} fail isolation: {why}; run `loom check` for the matrix")
    model_conf = partitions_conf(fabric, sn.plane)
    last = target.dir / LAST_APPLIED
    managed = model_conf is not None or last.exists()
    desired = model_conf if managed else previous
    part = {"desired_conf": desired, "previous_conf": previous, "conf_changes": desired != previous,
            "live_sha256": None, "ports_differing": 0, "examples": [], "drift": None, "managed": managed}
    if not managed:
        return part
    live = read_pkeys(target, sn)
    bad = mismatches(live, intent(sn, desired, target.sm_ca()))
    part.update(live_sha256=digest(live), ports_differing=len(bad), examples=bad[:5])
    if bad and last.exists() and last.read_text().strip() != part["live_sha256"]:
        part["drift"] = f"P_Key tables differ from what loom applied last on {len(bad)} ports (changed outside loom)"
    return part


def files(plan: dict) -> dict[str, str | None]:
    """The partitions file an apply writes (none when loom does not manage it)."""
    p = plan.get("partitions") or {}
    return {"partitions": p["desired_conf"]} if p.get("managed") else {}


def stale(plan: dict, inputs: dict) -> bool:
    """Did OpenSM's partitions file change since the plan was made?"""
    p = plan.get("partitions")
    return p is not None and inputs.get("partitions") != p["previous_conf"]


def partitions_change(plan: dict) -> bool:
    """Does the plan change OpenSM's partitions file or repair P_Key tables?  (Plans made before
    partitions existed have no `partitions` part: nothing to change.)"""
    p = plan.get("partitions") or {}
    return bool(p.get("conf_changes") or p.get("ports_differing"))


def verify(target: Target, sn: Subnet, conf: str | None) -> tuple[str, int]:
    """Read every P_Key table back after a push; TargetError unless each holds what `conf` gives.
    Returns the read-back's digest (what loom applied last) and how many ports it read."""
    from loom.push.errors import TargetError

    back = read_pkeys(target, sn)
    bad = mismatches(back, intent(sn, conf, target.sm_ca()))
    if bad:
        raise TargetError(f"P_Key read-back differs from the partitions on {len(bad)} ports, e.g. {bad[0]}")
    return digest(back), len(back)


def finish_files(directory, j: dict) -> dict:
    """What a verified apply records of its P_Key tables: their digest (the next plan's drift
    reference), or, when it removed the partitions, nothing (loom manages them no more)."""
    if not j.get("pkeys_verified"):
        return {}
    path = directory / LAST_APPLIED
    return {path: None if j.get("pkeys_removed") else j["pkeys_sha256"] + "\n"}
