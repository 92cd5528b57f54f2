"""The stable JSON interface the Terraform provider calls (`terraform/provider/`):
`loom fabric MODEL --format json` and `loom tf routing|netbox MODEL [--apply]`.

Every `loom tf` command prints exactly one JSON document on stdout (interface version
`INTERFACE`), also when it fails, and exits like `terraform plan -detailed-exitcode`: 0 in sync
(or applied), 2 changes pending, 1 an error.  An error document is
`{"interface": 1, "errors": [{"file", "line", "path", "message", "fix"}]}`; errors found by the
shared command helpers (a bad target, an unreachable NetBox) come as text on stderr with exit 1.
The format is documented in docs/terraform.md; change it only by adding keys.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from .common import MODEL_ARG, backend_of, format_of, load_model, out, progress, refusals

INTERFACE = 1
APPLY_OPT = typer.Option(False, "--apply", help="apply the changes (verified), then report; without it: plan only")
EXPECT_OPT = typer.Option(None, "--expect", help="with --apply: refuse unless the desired digest is still this one "
                          "(the one `terraform plan` showed)")

tf_app = typer.Typer(no_args_is_help=True, help="JSON interface for the Terraform provider (docs/terraform.md): "
                     "plan or apply one resource, one JSON document on stdout; exit 0 in sync, 2 changes, 1 error.")


def _emit(doc: dict, code: int) -> None:
    sys.stdout.write(json.dumps({"interface": INTERFACE, **doc}, indent=1, sort_keys=True, default=str) + "\n")
    raise typer.Exit(code)


def _error(message: str, fix: str = "", file: str | None = None, line: int | None = None, path: str = "") -> None:
    _emit({"errors": [{"file": file, "line": line, "path": path, "message": message, "fix": fix}]}, 1)


def _load(model: Path, as_built: bool = True):
    """The expanded model, or an error document naming the file, line and field of each problem."""
    from loom.expand import load_fabric
    from loom.model import ModelError

    if not model.is_file():
        _error(f"{model}: no such file", "give the path of a model file, e.g. topology/tiny.yaml", str(model))
    try:
        return load_fabric(model, as_built=as_built)
    except ModelError as exc:
        _model_errors(model, exc)


def _model_errors(model: Path, exc) -> None:
    """Emit a ModelError's problems, each with its file and (looked up if missing) line."""
    from loom.model import locate

    if not any(p.line for p in exc.problems) and not exc.file.endswith(".json"):
        exc = locate(model, exc)
    _emit({"errors": [{"file": exc.file or str(model), "line": p.line, "path": p.path, "message": p.message,
                       "fix": p.fix} for p in exc.problems]}, 1)


def _cables(model: Path, fabric):
    """The cabling sheet's plan (labels, media, lengths) when the model has `cabling:`, else None."""
    from loom.model import ModelError
    from loom.model.catalogue import load_catalogue
    from loom.render.cabling import cable_plan

    if fabric.model.cabling is None:
        return None
    try:
        return cable_plan(fabric, load_catalogue(model, fabric.model.cabling.catalogue))
    except ModelError as exc:
        _model_errors(model, exc)


def _digest(x) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(x, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()


def fabric_cmd(model: Path = MODEL_ARG, fmt: str = typer.Option("text", "--format", help="text or json")) -> None:
    """The expanded model as named records (docs/terraform.md): racks, switches, nodes, NIC
    ports (with the switch port each is cabled to), cables (with label, medium and length when
    the model has `cabling:`).  `--format json` is what the Terraform data source `loom_fabric` reads.

    Exit 0 printed; 1 an invalid model (with --format json: an error document); 2 usage error."""
    from loom.render.fabric_values import fabric_values

    if format_of(fmt, False) == "json":
        fabric = _load(model)
        _emit({"fabric": fabric_values(fabric, _cables(model, fabric))}, 0)
    fabric = load_model(model)
    values = fabric_values(fabric, None)
    out.print(f"{values['name']} ({values['technology']}): {len(values['racks'])} racks, {len(values['switches'])} switches, "
              f"{len(values['nodes'])} nodes, {len(values['ports'])} NIC ports, {len(values['cables'])} cables",
              highlight=False, markup=False)
    for c in values["cables"]:
        out.print(f"  {c['id']:<16} {c['a_device']} {c['a_port']} <-> {c['b_device']} {c['b_port']} ({c['kind']})",
                  highlight=False, markup=False)


@tf_app.command("routing")
def routing_cmd(model: Path = MODEL_ARG, target: str = typer.Option("sim", "--target", help="sim or ssh (as `loom plan`)"),
                inventory: Path | None = typer.Option(None, "--inventory", help="with --target ssh: inventory directory"),
                ssh_config: Path | None = typer.Option(None, "--ssh-config", help="with --target ssh: an ssh_config file"),
                apply: bool = APPLY_OPT, expect: str | None = EXPECT_OPT) -> None:
    """The `loom_routing` resource: `loom plan` of the model against the live tables (read back
    through the target), as a JSON summary; with --apply, then Loom's verified apply of that plan.

    Exit 0 in sync (or applied and verified); 2 changes (without --apply); 1 an error."""
    from loom import pipeline
    from loom.push.errors import Interrupted, PlanError, TargetError

    fabric = _load(model)
    backend = backend_of(fabric)
    if not backend.routing_resource:
        _error(f"{fabric.name} is a {backend.technology} fabric: the loom_routing resource manages OpenSM's forwarding "
               "tables", "plan and apply its switches with `loom plan` / `loom apply`", str(model))
    with refusals(model):  # a bad target is the shared helpers' text on stderr, as every command's
        t = backend.target(fabric, target, inventory, ssh_config)
    try:
        p = pipeline.plan(model, fabric, t, progress)
    except (PlanError, TargetError) as exc:
        _error(str(exc), f"fix the target, then run `loom plan {model}` to see the details")
    saved = Path(p["state_dir"]) / "last-plan.json"
    doc = _routing_doc(p, backend.has_changes(p))
    doc["switches"] = {"desired": _switch_tables(fabric, p["desired_lfts"]),
                       "live": _switch_tables(fabric, p["previous_lfts"])}
    if apply and backend.has_changes(p):
        if expect and expect != doc["desired_sha256"]:
            _error(f"the routing of {fabric.name} changed since it was planned (desired {doc['desired_sha256'][:12]}, "
                   f"planned {expect[:12]}): the model or the live tables moved", "run the plan again, then apply")
        try:
            res = pipeline.apply(p, saved, progress)
        except (PlanError, TargetError) as exc:
            _error(str(exc), "nothing was changed; run the plan again")
        except Interrupted as exc:
            _error(f"apply interrupted by signal {exc.signum}: {exc.outcome}", "run the plan again")
        if not res.ok:
            _error(res.message, "the previous tables were restored; `loom sim status` / the audit log say why")
        _emit({**doc, "applied": True, "in_sync": True, "result": res.message}, 0)
    _emit({**doc, "applied": False}, 2 if doc["changes_pending"] else 0)


def _routing_doc(p: dict, pending: bool) -> dict:
    """The `loom_routing` resource's document: an LFT plan's changes (routing, QoS, partitions),
    digests and drift."""
    c, q = p["changes"], p["qos"]
    parts = []
    if c["entries_changed"]:
        parts.append(f"{c['entries_changed']} LFT entries on {c['switches_touched']} switches, "
                     f"{len(c['destinations_moved'])} destinations move")
    if q["conf_changes"] or q["ports_differing"]:
        parts.append(f"QoS: {'OpenSM options change, ' if q['conf_changes'] else ''}{q['ports_differing']} ports differ")
    pk = p.get("partitions") or {}
    if pk.get("conf_changes") or pk.get("ports_differing"):
        parts.append(f"partitions: {'partitions.conf changes, ' if pk['conf_changes'] else ''}"
                     f"{pk['ports_differing']} ports hold other P_Keys")
    if p.get("standbys_differing"):
        parts.append(f"{len(p['standbys_differing'])} standbys differ")
    if p["drift"]:
        parts.append(f"drift: {p['drift']}")
    return {"kind": "routing", "fabric": p["fabric"], "model": p["model"], "target": p["target"]["kind"],
            "changes_pending": pending, "in_sync": not pending,
            # the routing, QoS and partitions intent (not the live state): equal plans of one model give equal
            # digests (a fabric whose partitions loom does not manage keeps the digest it had before them)
            "desired_sha256": _digest([p["desired_sha256"], q["desired_conf"]]
                                      + ([pk["desired_conf"] or ""] if pk.get("managed") else [])),
            "live_sha256": p["live_sha256"], "drift": p["drift"],
            "changes": {k: c[k] for k in ("entries_changed", "switches_touched", "per_switch")},
            "destinations_moved": len(c["destinations_moved"]),
            "summary": "; ".join(parts) if pending else "no changes: the live tables match the model"}


def _switch_tables(fabric, rows: dict[str, dict]) -> dict[str, dict]:
    """Each switch's forwarding table as the `switches` attribute of `loom_routing` shows it: so
    that `tofu plan` names the switches whose tables change (a digest of the table) and how their
    destinations shift between ports (`per_port`: destinations leaving by each port, keyed
    "PORT PEER" with the port zero-padded so that the keys sort in port order).  Whole tables
    would be ~250,000 map elements on a two-zone fabric; counts per port are at most a switch's
    port count each, and a moved destination changes two of them."""
    from collections import Counter

    from loom.routing import subnet

    sn = subnet(fabric, 0)
    row_of = {sn.name(r): r for r in range(sn.n)}
    width = len(str(sn.max_port))
    out = {}
    for name, t in rows.items():
        r = row_of.get(name)
        per_port = Counter(port for _, port in t["rows"] if port)  # port 0: the switch's own LID
        out[name] = {"lid": t["lid"], "lft_digest": _digest(t["rows"])[:16], "destinations": len(t["rows"]),
                     "per_port": {f"{port:0{width}d} {_peer(sn, r, port)}": n for port, n in sorted(per_port.items())}}
    return out


def _peer(sn, row: int | None, port: int) -> str:
    """What is cabled to a port of a switch: a switch's name, a CA's name."""
    from loom.routing.subnet import TO_CA, TO_SWITCH

    if row is None or port > sn.max_port:
        return "?"
    kind, dev = sn.peer_kind[row, port], int(sn.peer_dev[row, port])
    if kind == TO_SWITCH:
        return sn.name(dev)
    return sn.fabric.ports[dev].ca if kind == TO_CA else "not cabled"


@tf_app.command("netbox")
def netbox_cmd(model: Path = MODEL_ARG, installed: bool = typer.Option(False, "--installed",
               help="the fabric is on the floor already: new cables are `connected`, not `planned`"),
               apply: bool = APPLY_OPT, expect: str | None = EXPECT_OPT) -> None:
    """The `loom_netbox` resource: `loom netbox plan` as a JSON summary (NETBOX_URL and
    NETBOX_TOKEN from the environment); with --apply, then `loom netbox apply` of that plan.

    Exit 0 in sync (or applied); 2 changes (without --apply); 1 a conflict or an error."""
    from loom.netbox.apply import apply_plan
    from loom.netbox.client import NetBoxError
    from .netbox import connect
    from loom.netbox.intent import intent
    from loom.netbox.plan import make_plan

    fabric = _load(model, as_built=False)
    want = intent(fabric, _cables(model, fabric), installed=installed)
    desired = _digest(want)
    client = connect()
    try:
        p = make_plan(client, fabric, want)
    except NetBoxError as exc:
        _error(str(exc), "check NETBOX_URL / NETBOX_TOKEN and that NetBox answers")
    if p.conflicts:
        _error(f"{len(p.conflicts)} object(s) in NetBox are in Loom's way and not Loom's, e.g. {p.conflicts[0]}",
               "remove them or tag them `loom` in NetBox (docs/netbox.md)")
    totals = {a: len(p.of(a)) for a in ("create", "update", "delete")}
    doc = {"kind": "netbox", "fabric": fabric.name, "model": str(model.resolve()), "netbox": p.url, "site": p.site,
           "desired_sha256": desired, "changes_pending": not p.empty, "in_sync": p.empty, "counts": p.counts(),
           "summary": (f"{totals['create']} to create, {totals['update']} to change, {totals['delete']} to delete"
                       if not p.empty else "no changes: NetBox matches the model")}
    if apply and not p.empty:
        if expect and expect != desired:
            _error(f"the NetBox intent of {fabric.name} changed since it was planned", "run the plan again, then apply")
        try:
            done = apply_plan(client, p)
        except NetBoxError as exc:
            _error(str(exc), "a rerun finishes an interrupted apply")
        _emit({**doc, "applied": True, "in_sync": True, "result": f"{done['create']} created, {done['update']} changed, "
               f"{done['delete']} deleted"}, 0)
    _emit({**doc, "applied": False}, 2 if not p.empty else 0)
