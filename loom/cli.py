"""The `loom` command line.  Each command is a thin shell over the pipeline stages.

Exit codes: 0 success, 1 invalid model / failed check, 2 usage errors (Typer's).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from loom.cli_options import FORMAT_OPT, JSON_OPT, MODEL_ARG, format_of, json_wanted
from loom import cli_roce
from loom.expand import Fabric, load_fabric
from loom.model import ModelError

app = typer.Typer(no_args_is_help=True, help="Loom: declarative AI-cluster fabrics.", rich_markup_mode=None)
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            out.print(f"loom {version('loom')}", highlight=False)
        except PackageNotFoundError:
            out.print("loom (not installed: run from a checkout without `pip install`)", highlight=False)
        raise typer.Exit(0)


@app.callback()
def _main(show_version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                            help="print loom's version and exit")) -> None:
    """Loom: declarative AI-cluster fabrics."""



def _fabric(path: Path) -> Fabric:
    """The expanded model; a missing file is a usage error (exit 2), an invalid model a finding (exit 1)."""
    if not path.exists() and not path.is_symlink():
        _print_error(f"{path}: no such file; give the path of a model file, e.g. topology/tiny.yaml")
        raise typer.Exit(2)
    try:
        return load_fabric(path)
    except ModelError as exc:
        _print_model_error(path, exc)
        raise typer.Exit(1) from None


def _print_model_error(path: Path, exc: ModelError) -> None:
    is_lock = exc.file.endswith(".lock.json")
    what = exc.file if is_lock else path
    err.print(f"[red]error:[/red] {escape(str(what))} is not a valid {'lock file' if is_lock else 'model'}", highlight=False)
    for p in exc.problems:
        err.print(p.render(exc.file if is_lock else str(path)), highlight=False, markup=False)


def _write(path: Path, data: str | bytes) -> None:
    from loom.push.files import write_atomic

    try:
        write_atomic(path, data)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {escape(str(path))}: {exc.strerror}", highlight=False)
        raise typer.Exit(1) from None


def _write_under(root: Path, rel: str, data: str) -> None:
    """Write `root/rel`, refusing any `rel` that resolves outside `root` (names are checked when
    the model loads; this is the last line of defence)."""
    from loom.model.names import PathEscape, inside

    try:
        path = inside(root, rel)
    except PathEscape as exc:
        raise _input_error(exc) from None
    _write(path, data)


def _print_error(exc: Exception | str) -> None:
    """`error: <message>`; the message may quote user input, so it is printed without markup."""
    err.print("[red]error:[/red] ", end="")
    err.print(str(exc), highlight=False, markup=False)


def _input_error(exc: Exception, code: int = 1) -> typer.Exit:
    _print_error(exc)
    return typer.Exit(code)


@app.command()
def validate(model: Path = MODEL_ARG) -> None:
    """Check a model: schema, references, port budgets, speeds. Exit 0 if valid, 1 if not."""
    m = _fabric(model).model
    out.print(f"{model}: valid ({m.name}, {m.technology})", highlight=False, markup=False)


@app.command()
def show(model: Path = typer.Argument(..., help="model file (YAML), or a plan file saved by `loom plan` (JSON)"),
         fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT,
         entries: bool = typer.Option(False, "--entries", help="a plan: every LFT entry it changes")) -> None:
    """Summarise the expanded fabric: switches, nodes, GPUs, NIC ports, cables, port usage; or a
    saved plan: what it changes (`--entries`: each entry, `LID 0x0012 (name): port 21 → 24`).
    Exit 0; 1 for an invalid model or plan; 2 for a usage error or a missing file."""
    from loom.render.plan_report import is_plan
    from loom.render.summary import summarize

    as_json = json_wanted(fmt, as_json)
    if is_plan(model):
        return _show_plan(model, as_json, entries)
    s = summarize(_fabric(model))
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
        return
    t = Table(title=f"{s['name']} ({s['technology']})")
    t.add_column("scope")
    for col in ("switches", "nodes", "gpus", "nic ports", "cables", "leaf down used/total"):
        t.add_column(col, justify="right")

    def row(name: str, d: dict) -> None:
        roles = ", ".join(f"{v} {k}" for k, v in d["switches_by_role"].items())
        t.add_row(name, f"{d['switches']} ({roles})", str(d["nodes"]), str(d["gpus"]), str(d["nic_ports"]),
                  str(d["cables"]), f"{d['leaf_down_ports_used']}/{d['leaf_down_ports']}")

    row("fabric", s)
    for name, d in s.get("planes", {}).items():
        row(f"plane {name}", d)
    for name, d in s["zones"].items():
        row(f"zone {name}", d)
    out.print(t)
    out.print("nodes by type: " + ", ".join(f"{k} {v}" for k, v in s["nodes_by_type"].items()))
    out.print("cables by kind: " + ", ".join(f"{k} {v}" for k, v in s["cables_by_kind"].items()))
    out.print("ports by switch role: " + ", ".join(f"{k} {v['used']}/{v['total']} used" for k, v in s["ports"].items()))
    for g, d in s["dual_homed"].items():
        out.print(f"dual-homed {g}: {d['nodes']} nodes, one port in each of {', '.join(d['zones'])}")
    for name, b in s.get("bigraph", {}).items():
        out.print(f"BiGraph {name}: {b['switches']} switches ({b['per_part']} upper, {b['per_part']} lower), "
                  f"{b['links']} links (N²/4 = {b['links_n2_over_4']}), diameter {b['diameter_hops']} hops, "
                  f"{b['hosts_per_switch']} sub-nodes per switch (M <= N/2), {b['sub_nodes']} in all")
    e = s["per_endpoint"]
    out.print(f"per endpoint: {e['endpoints']:,} endpoints (NIC ports), {e['gpus']:,} GPUs, {e['switches']:,} switches "
              f"({e['switches_per_1k_endpoints']} per 1,000 endpoints, {e['gpus_per_switch']} GPUs each), {e['switch_links']:,} "
              f"switch links ({e['switch_links_per_endpoint']} per endpoint), {e['switch_ports']:,} switch ports "
              f"({e['switch_ports_per_endpoint']} per endpoint)")
    cap = s["capacity"]
    out.print(f"capacity: {cap['node_facing_ports']} node-facing ports, {cap['used_by_nodes']} nodes, "
              f"{cap['used_by_inter_zone']} inter-zone, {cap['free']} free; {s['racks']} racks")


@app.command("expand")
def expand_cmd(model: Path = MODEL_ARG, out_file: Path = typer.Option(..., "--out", metavar="FILE", help="JSON file to write")) -> None:
    """Write the port-level fabric as canonical JSON (same model ⇒ same bytes).

    Exit 0 written; 1 invalid model or unwritable file; 2 usage error."""
    from loom.render.fabric_json import fabric_json

    _write(out_file, fabric_json(_fabric(model)))
    out.print(f"wrote {out_file}", highlight=False, markup=False)


def _route(model: Path, engine: str, fabric: Fabric | None = None):
    """The model's fabric (loaded unless given) and its routing tables per plane."""
    from loom.routing import RoutingError, get_engine, route

    try:
        get_engine(engine)
    except RoutingError as exc:
        raise _input_error(exc, 2) from None
    fabric = fabric or _fabric(model)
    try:
        return fabric, route(fabric, engine)
    except RoutingError as exc:
        err.print(f"[red]error:[/red] {escape(str(model))}: {escape(str(exc))}", highlight=False)
        raise typer.Exit(1) from None


ENGINE_OPT = typer.Option("auto", "--engine", help="routing engine: fattree, bigraph, or auto (by the zones' kind)")

TARGET_OPT = typer.Option("sim", "--target", help="sim: the embedded simulated fabric; ssh: the subnet-manager "
                          "hosts of the inventory's `subnet_managers` group (an Ethernet fabric: its switches, "
                          "the `frr_switches` group) (docs/targets.md)")
INVENTORY_OPT = typer.Option(None, "--inventory", help="with --target ssh: inventory directory (default inventory/<fabric>)")
SSH_CONFIG_OPT = typer.Option(None, "--ssh-config", help="with --target ssh: an ssh_config file (default: the user's)")


def _target(fabric: Fabric, kind: str, inventory: Path | None, ssh_config: Path | None):
    """The push target a command names (`loom.push.target`); exits with a message on a bad one."""
    from loom.push.errors import PlanError
    from loom.push.target import SimTarget

    if kind == "sim":
        return SimTarget.of(fabric.name)
    if kind != "ssh":
        _fail(f"unknown target {kind!r}: use --target sim or --target ssh")
    from loom.push.ssh import SshTarget

    try:
        return SshTarget.from_inventory(fabric, inventory or Path("inventory") / fabric.name,
                                        str(ssh_config.resolve()) if ssh_config else None)
    except PlanError as exc:
        _fail(exc)


@app.command("route")
def route_cmd(model: Path = MODEL_ARG, out_dir: Path = typer.Option(..., "--out", metavar="DIR", help="directory to write"),
              engine: str = ENGINE_OPT) -> None:
    """Compute LFTs; write DIR/lfts.dump (OpenSM -U format), DIR/guid2lid, DIR/topology.net (the
    fabric as it stands, in the ibnetdiscover/ibsim format), DIR/qos-policy.conf (OpenSM -Y, when
    cross-zone traffic needs its own VLs) and DIR/summary.json.

    Exit 0 written; 1 invalid model or no engine routes it; 2 usage error."""
    import hashlib

    from loom.qos import plan_qos
    from loom.qos.render import opensm_qos_policy
    from loom.render.ibsim import ibsim_net
    from loom.render.opensm import guid2lid, lfts_dump

    fabric, tables = _route(model, engine)
    qos = plan_qos(fabric.model) if fabric.technology == "infiniband" else None
    summary = {"fabric": fabric.name, "model": str(model), "engine": tables[0].engine, "planes": []}
    for t in tables:
        d = out_dir if fabric.planes == 1 else out_dir / f"plane{t.subnet.plane}"
        dump = lfts_dump(t)
        _write(d / "lfts.dump", dump)
        _write(d / "guid2lid", guid2lid(t))
        if fabric.technology == "infiniband":
            _write(d / "topology.net", ibsim_net(fabric, t.subnet.plane))
        policy = opensm_qos_policy(fabric, qos, t.subnet.plane) if qos else None
        if policy:
            _write(d / "qos-policy.conf", policy)
        for w in t.warnings:
            err.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
        summary["planes"].append({
            "plane": t.subnet.plane, "dir": str(d), "switches": t.subnet.n, "max_lid": t.subnet.max_lid,
            "ca_ports": len(t.subnet.ca_lids), "lft_entries": int((t.lft != 255).sum()),
            "lfts_sha256": hashlib.sha256(dump.encode()).hexdigest(),
        })
    _write(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    out.print(f"routed {fabric.name} with {summary['engine']}: {sum(p['lft_entries'] for p in summary['planes'])} LFT entries "
              f"on {sum(p['switches'] for p in summary['planes'])} switches → {out_dir}", highlight=False, markup=False)


@app.command()
def check(model: Path = MODEL_ARG, fmt: str = typer.Option("text", "--format", help="text, json or markdown"),
          as_json: bool = JSON_OPT,
          engine: str = ENGINE_OPT, ebb_samples: int | None = typer.Option(None, min=0, max=10_000, help="random bisections for eBB (default: "
                                                 "loom.checks.EBB_SAMPLES, the count loom diff uses too)"),
          lfts: Path | None = typer.Option(None, "--lfts", help="check these tables (an opensm-lfts.dump / dump_fts "
                                           "file of the model's subnet) instead of routing the model"),
          design_bound: bool = typer.Option(False, "--design-bound", help="also fail when any switch is above the "
                                            "bound of the intact design (CI of design changes)")) -> None:
    """Route and check: reachability, deadlock freedom, balance against the lower bound, eBB.

    Exit 0 only when every plane is reachable, deadlock-free and every switch meets its
    as-built balance bound (with --design-bound: the intact design's bound); 1 otherwise.
    With --lfts, the same checks run on tables from elsewhere: OpenSM's own dump, the live
    fabric's `dump_fts`, a hand-edited file."""
    from loom.checks import EBB_SAMPLES, check_tables
    from loom.checks.planes import check_planes, check_rails
    from loom.qos import fabric_qos

    fmt = format_of(fmt, as_json, ("text", "json", "markdown"))

    if lfts is None:
        fabric, tables = _route(model, engine)
    else:
        from loom.inputs import InputError, read_lft_dump
        from loom.routing import subnet

        fabric = _fabric(model)
        try:
            tables = [read_lft_dump(lfts, subnet(fabric, 0), f"file {lfts.name}")]
        except InputError as exc:
            raise _input_error(exc) from None
    ebb_samples = EBB_SAMPLES if ebb_samples is None else ebb_samples
    qos = fabric_qos(fabric.model)
    planes = [check_tables(t, ebb_samples, qos) for t in tables]
    cabling = {"isolation": check_planes(fabric), "rails": check_rails(fabric)}
    ethernet = fabric.technology == "ethernet"
    if ethernet:
        from loom.checks.roce_qos import check_fabric

        cabling["roce_qos"] = check_fabric(fabric)
    bound_key = "design_within_bound" if design_bound else "within_bound"
    ok = all(p["reachable"] and p["deadlock_free"] and p["balance"][bound_key] and (p["qos"] is None or p["qos"]["ok"])
             for p in planes) and all(c is None or c["ok"] for c in cabling.values())
    report = {"fabric": fabric.name, "ok": ok, **cabling}
    report.update(planes[0] if len(planes) == 1 else {"planes": planes})
    if fmt == "json":
        sys.stdout.write(json.dumps(report, indent=2, default=_np_default) + "\n")
    elif fmt == "markdown":
        from loom.render.check_report import markdown

        sys.stdout.write(markdown(report, planes, bound_key))
    else:
        _print_cabling(fabric.name, cabling["isolation"], cabling["rails"])
        if ethernet:
            from loom.render.roce_report import print_lossless, print_plane

            for p in planes:
                print_plane(out, fabric.name, p)
            print_lossless(out, fabric.name, cabling["roce_qos"])
        else:
            for p in planes:
                _print_check(fabric.name, p)
    raise typer.Exit(0 if ok else 1)


def _print_cabling(name: str, isolation: dict, rails: dict | None) -> None:
    verdict = "[green]yes[/green]" if isolation["ok"] else "[red]NO[/red]"
    out.print(f"[bold]{name}[/bold] cabling: planes isolated {verdict}  {isolation['planes']} plane(s), "
              f"{isolation['inter_switch_cables']} switch links and {isolation['nic_ports']} NIC ports each in their "
              "own plane, a NIC's ports on different switches")
    if rails is not None:
        out.print(f"  rails correct:  {'[green]yes[/green]' if rails['ok'] else '[red]NO[/red]'}  NIC i of each of "
                  f"{rails['nodes']} nodes on rail i of one group ({rails['rail_leaves']} rail leaves)")
    for p in isolation["problems"] + (rails["problems"] if rails else []):
        out.print(f"    [red]{escape(p)}[/red]", highlight=False)


@app.command()
def whatif(model: Path = MODEL_ARG,
           fail: list[str] = typer.Option([], "--fail", help="a cable (SWITCH/PORT, as the cabling sheet's cable ID) or a "
                                          "switch (NAME) that goes down; repeat for several"),
           random: int = typer.Option(0, "--random", min=0, help="instead of --fail: K random switch-to-switch cables down"),
           trials: int = typer.Option(20, "--trials", min=1, max=10_000, help="random draws with --random"),
           seed: int = typer.Option(0, "--seed", help="random seed for --random"),
           vs_opensm: list[str] = typer.Option([], "--vs-opensm", help="also measure OpenSM's recompute with this "
                                               "engine (ftree, updn, minhop) on the same failure in the simulator"),
           engine: str = ENGINE_OPT, fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """What a failure does: the minimal-churn reroute of the design tables, checked (reachability,
    deadlock freedom per VL, each switch at its as-built bound), the entries it changes against a
    full recompute, and the up-link bandwidth each leaf keeps.

    Exit 0 when every reroute passes every check (churn is reported: where a switch needs one more
    move to reach its bound, balance wins); 1 otherwise; 2 on a failure name the fabric does not have."""
    import numpy as np

    from loom.checks.whatif import trials_summary, what_if
    from loom.expand.failures import FailureSpecError, parse_failures, random_failures
    from loom.qos import plan_qos
    from loom.render.whatif_report import print_outcomes, print_trials

    as_json = json_wanted(fmt, as_json)
    if bool(fail) == bool(random):
        _print_error("give either --fail NAME (repeatable) or --random K")
        raise typer.Exit(2)
    fabric, design = _route(model, engine)
    qos = plan_qos(fabric.model) if fabric.technology == "infiniband" else None
    try:
        if fail:
            failure = parse_failures(fabric, fail)
            outcome = what_if(fabric, failure, design, engine, qos=qos)
            ok = all(o.ok for o in outcome)
            report = {"fabric": fabric.name, "failures": fail, "ok": ok, "planes": [o.as_dict() for o in outcome]}
            if vs_opensm:
                report["opensm"] = _opensm_recompute(fabric, failure, design, vs_opensm)
        else:
            rng = np.random.default_rng(seed)
            runs = [what_if(fabric, random_failures(fabric, random, rng), design, engine, qos=qos)
                    for _ in range(trials)]
            summary = trials_summary(runs)
            ok = summary["failed_trials"] == 0
            report = {"fabric": fabric.name, "random": random, "seed": seed, "ok": ok, **summary}
    except FailureSpecError as exc:
        raise _input_error(exc, 2) from None
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    elif fail:
        print_outcomes(out, fabric.name, fail, outcome, report.get("opensm", {}))
    else:
        print_trials(out, fabric.name, random, report)
    raise typer.Exit(0 if ok else 1)


@app.command()
def discover(model: Path = MODEL_ARG,
             topology: Path | None = typer.Option(None, "--topology", help="a saved `ibnetdiscover` output to compare "
                                                  "instead of reading the simulated fabric"),
             fmt: str = typer.Option("text", "--format", help="text | json | csv (the change sheet)"),
             as_json: bool = typer.Option(False, "--json", help="same as --format json"),
             out_file: Path | None = typer.Option(None, "--out", metavar="FILE", help="file to write the report to as well"),
             record: bool = typer.Option(False, "--record", help="write the GUIDs found into the model's lock file"),
             target: str = TARGET_OPT, inventory: Path | None = INVENTORY_OPT,
             ssh_config: Path | None = SSH_CONFIG_OPT) -> None:
    """Compare the fabric as built with the model: missing, extra, miswired and swapped cables,
    wrong speeds, unknown devices — in rack/RU/port terms.  Devices are identified by GUID,
    name, or their place in the cabling; --record keeps their real GUIDs in the lock file.

    Exit 0 when the fabric is cabled as the model says, 1 when it differs, 2 on a usage or
    environment error (no fabric to read, unreadable file)."""
    from loom.checks.cabling import compare
    from loom.expand.live import TopologyError, parse_ibnetdiscover
    from loom.render.discover_report import as_csv, as_text
    from loom.render.discover_report import as_json as report_json

    fmt = "json" if as_json else fmt
    if fmt not in ("text", "json", "csv"):
        _print_error(f"--format {fmt}: use text, json or csv")
        raise typer.Exit(2)
    fabric = _fabric(model)
    if fabric.technology != "infiniband":
        _print_error(f"{model}: discover reads InfiniBand fabrics (ibnetdiscover); {fabric.name} is {fabric.technology}")
        raise typer.Exit(2)
    try:
        text, source = _topology_text(fabric, topology, target, inventory, ssh_config)
        report = compare(fabric, parse_ibnetdiscover(text, source))
    except TopologyError as exc:
        raise _input_error(exc, 2) from None
    shown = {"text": lambda: as_text(fabric.name, report), "json": lambda: report_json(fabric.name, report),
             "csv": lambda: as_csv(report)}[fmt]()
    sys.stdout.write(shown)
    if out_file:
        _write(out_file, shown)
    if record:
        _record_guids(model, fabric, report)
    raise typer.Exit(0 if report.clean else 1)


def _topology_text(fabric: Fabric, topology: Path | None, target: str, inventory: Path | None,
                   ssh_config: Path | None) -> tuple[str, str]:
    """The ibnetdiscover text to compare: a saved file (read bounded), else run on the target."""
    from loom.push.errors import TargetError
    from loom.push.sim import SimError

    if topology is not None:
        from loom.inputs import InputError, read_topology_file

        try:
            return read_topology_file(topology), str(topology)
        except InputError as exc:
            raise _input_error(exc, 2) from None
    t = _target(fabric, target, inventory, ssh_config)
    try:
        return t.run(["ibnetdiscover"]), f"ibnetdiscover on {t.where()}"
    except (SimError, TargetError) as exc:
        raise _input_error(exc, 2) from None


def _record_guids(model: Path, fabric: Fabric, report) -> None:
    from loom.expand import lock_path, read_lock
    from loom.expand.lockfile import lock_text, with_found_guids

    path = lock_path(model)
    try:
        lock = read_lock(path)
    except ModelError as exc:
        _print_model_error(model, exc)
        raise typer.Exit(2) from None
    if lock is None:
        _print_error(f"{path} does not exist; write it first with `loom lock {model}`")
        raise typer.Exit(2)
    ca_of = {(fabric.nodes[p.node].name, p.nic): p.ca for p in fabric.ports}
    new, changed = with_found_guids(lock, report.guids, ca_of)
    if changed:
        _write(path, lock_text(new))
    err.print(f"recorded {changed} GUID(s) found on the fabric in {path}" if changed else f"{path}: every GUID found is already recorded",
              highlight=False, markup=False)


def _opensm_recompute(fabric: Fabric, failure, design, engines: list[str]) -> dict:
    """OpenSM's recompute of the same failure in the simulator, per engine (InfiniBand plane 0)."""
    from loom.expand.failures import without
    from loom.push.recompute import opensm_recompute
    from loom.push.sim import SimError, tools_missing

    if fabric.technology != "infiniband" or tools_missing():
        _print_error(f"--vs-opensm needs an InfiniBand fabric and the simulator ({', '.join(tools_missing()) or 'ok'})")
        raise typer.Exit(2)
    try:
        return {e: _phase(f"opensm -R {e}, intact and failed", opensm_recompute, fabric, without(fabric, failure), design[0], e)
                for e in engines}
    except SimError as exc:
        raise _input_error(exc, 2) from None


def _np_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o))


def _print_check(name: str, p: dict) -> None:
    from loom.render.check_report import ebb_text

    def verdict(ok: bool) -> str:
        return "[green]yes[/green]" if ok else "[red]NO[/red]"

    b, r = p["balance"], p["reachability"]
    out.print(f"[bold]{name}[/bold] plane {p['plane']} ({p['engine']})")
    out.print(f"  reachable:      {verdict(p['reachable'])}  {r['ca_pairs']} CA-to-CA pairs, {r['unreachable_pairs']} unreachable, "
              f"{r['loop_pairs']} looping, max {r['max_hops']} hops, {r['nonminimal_pairs']} non-minimal in-zone; "
              f"{r['switch_pairs']} switch-to-LID pairs, {r['switch_unreachable']} unreachable")
    for loop in r["loops"]:
        out.print(f"    [red]forwarding loop:[/red] {loop}", highlight=False)
    if r["cut_off"]:
        out.print(f"    cut off (left out): {', '.join(r['cut_off'][:10])}" + (f" and {len(r['cut_off']) - 10} more" if len(r["cut_off"]) > 10 else ""),
                  highlight=False)
    for e in r["examples"]:
        out.print(f"    {e}", highlight=False)
    out.print(f"  deadlock-free:  {verdict(p['deadlock_free'])}  {p['deadlock']['channels']} channels, "
              f"{p['deadlock']['dependencies']} dependencies (CA-to-CA only: "
              f"{'free' if p['deadlock']['ca_to_ca_deadlock_free'] else 'LOOP'})")
    if p.get("cross_zone_vls"):
        out.print("    cross-zone: inter-zone links leave a zone from several leaves, so traffic to lower-numbered zones "
                  "rides a second VL per class (its SL = class SL + classes; one VL could not stay loop-free)")
    if p.get("part_vls"):
        out.print("    BiGraph: traffic from the upper part rides VL set 0, from the lower part VL set 1 (EFLOPS's priority "
                  f"per direction); on one VL the routing would be {'free' if p['deadlock_free_single_vl'] else 'NOT free'} of credit loops")
    if p["qos"]:
        q = p["qos"]
        out.print(f"  qos:            {verdict(q['ok'])}  " + ", ".join(
            f"{c['name']} SL{c['sl']}/VL{c['vl']} {c['weight_share']:.1%}{'' if c['isolated'] else ' (shared)'}" for c in q["classes"]))
        out.print("    per VL deadlock-free: " + ", ".join(f"VL{v} {'yes' if r['deadlock_free'] else 'NO'}" for v, r in q["per_vl"].items())
                  + f"; on one VL the routing would be {'free' if p['deadlock_free_single_vl'] else 'NOT free'} of credit loops")
        for prob in q["problems"]:
            out.print(f"    [red]{prob}[/red]", highlight=False)
    if p["cycle"]:
        out.print("  credit loop:")
        for hop in p["cycle"]:
            out.print(f"    {hop}", highlight=False)
    out.print(f"  balance:        {verdict(b['within_bound'])}  every switch at its as-built bound; "
              f"design bound {'met' if b['design_within_bound'] else '[yellow]not met[/yellow] (degraded)'}")
    out.print("    level        groups  max dest/port  over as-built  over design  max paths/port")
    for level, f in b["levels"].items():
        out.print(f"    {level:<12} {f['groups']:>6}  {f['max']:>13}  {f['over_bound']:>13}  {f['over_design_bound']:>11}  {f['max_paths']:>14}")
    out.print(f"    leaf up-ports: max {b['max_dest_per_up_port']} destinations, as-built bound {b['lower_bound']}, "
              f"design bound {b['design_bound']} (worst leaf), min {b['min_dest_per_up_port']}")
    for role, f in b["per_role"].items():
        out.print(f"    {role:<11} max {f['max_dest_per_up_port']} / as-built {f['lower_bound']} / design {f['design_bound']}"
                  + (f"  [red]{f['over_bound']} leaves over[/red]" if f["over_bound"] else ""))
    if b["inter_zone"]:
        iz = b["inter_zone"]
        out.print(f"    inter-zone  max {iz['max_dest_per_link']} / bound {iz['lower_bound']} over {iz['links']} link directions")
    for w in b["worst"]:
        out.print(f"    [red]{w}[/red]", highlight=False)
    out.print(f"  eBB:            {ebb_text(p)}", highlight=False)
    for w in p["warnings"]:
        out.print(f"  [yellow]warning:[/yellow] {w}", highlight=False)


@app.command("lock")
def lock_cmd(model: Path = MODEL_ARG,
             check: bool = typer.Option(False, "--check", help="exit 1 if the lock file and the model disagree "
                                        "(or the lock was edited by hand); write nothing"),
             relayout: bool = typer.Option(False, "--relayout", help="start over: place everything by policy, "
                                           "ignoring the lock (devices may move, LIDs may be renumbered)")) -> None:
    """Write or update MODEL's lock file (`<model>.lock` next to it): every device's rack and RU,
    every NIC port's switch port, every GUID and LID.  Existing things keep their place; new
    ones take free places; removed ones free theirs.

    Exit 0 written or (with --check) current; 1 stale or invalid; 2 usage error."""
    from loom.expand import lock_path, read_lock
    from loom.expand.lockfile import differences, digest, lock_of, lock_text

    if check and relayout:
        err.print("[red]error:[/red] --check and --relayout exclude each other")
        raise typer.Exit(2)
    path = lock_path(model)

    def refuse(problems: list[str]) -> None:
        for x in problems:
            err.print(f"[red]{path}:[/red] {x}", highlight=False, markup=False)
        raise typer.Exit(1)

    try:
        old = read_lock(path)
        if check and old is None:
            refuse([f"no lock file; fix: run `loom lock {model}` and commit {path}"])
        if check and old.digest != digest(old):
            refuse(["the file was edited by hand (its digest does not match); fix: revert it "
                    f"(`git checkout -- {path}`), or accept the edit with `loom lock {model}`"])
        fabric = load_fabric(model, None if relayout else old)
    except ModelError as exc:
        _print_model_error(model, exc)
        raise typer.Exit(1) from None
    new = lock_of(fabric, fabric.switch_lid_base)
    if check:
        problems = [f"{x}; fix: run `loom lock {model}` and commit {path}" for x in differences(old, new)]
        for x in problems:
            err.print(f"[red]{path}:[/red] {x}", highlight=False, markup=False)
        if not problems:
            out.print(f"{path}: matches {model}", highlight=False)
        raise typer.Exit(1 if problems else 0)
    before = (set(old.nodes) | set(old.switches)) if old else set()
    after = set(new.nodes) | set(new.switches)
    _write(path, lock_text(new))
    out.print(f"wrote {path}: {len(new.switches)} switches, {len(new.nodes)} nodes, {len(new.racks)} racks "
              f"({len(after - before)} added, {len(before - after)} removed{', relaid out' if relayout else ''})",
              highlight=False)


@app.command()
def docs(out_dir: Path = typer.Option(Path("docs"), "--out", metavar="DIR", help="directory for the generated references")) -> None:
    """Write the references generated from the code: docs/model.md, docs/cabling.md, docs/cli.md
    and the model's JSON Schema docs/model.schema.json (editors validate YAML against it).

    Exit 0; 1 when a file cannot be written."""
    from loom.render.cabling_reference import columns_doc
    from loom.render.cli_doc import cli_reference
    from loom.render.model_doc import model_reference, model_schema

    for name, text in (("model.md", model_reference()), ("cabling.md", columns_doc()),
                       ("cli.md", cli_reference(typer.main.get_command(app))), ("model.schema.json", model_schema())):
        _write(out_dir / name, text)
        out.print(f"wrote {out_dir / name}", highlight=False, markup=False)


def _model_at(model: Path, rev: str | None, file: Path | None, tmp: Path, label: str) -> tuple[Path, str]:
    """The model file of one side of a diff: a file, a git revision of MODEL (with its lock file
    at that revision beside it), or MODEL itself."""
    import subprocess

    from loom.inputs import InputError, git_revision

    if file is not None:
        return file, str(file)
    if rev is None:
        return model, "working tree"
    try:
        git_revision(rev)
    except InputError as exc:
        raise _DiffError(str(exc)) from None
    if not model.resolve().parent.is_dir():
        raise _DiffError(f"{model}: no such directory; give the path of the model in the repository")
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=model.resolve().parent, capture_output=True, text=True)
    if top.returncode != 0:
        raise _DiffError(f"{model} is not in a git repository; use --{label}-file")
    rel = model.resolve().relative_to(top.stdout.strip())
    sha = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"],
                         cwd=top.stdout.strip(), capture_output=True, text=True)
    if sha.returncode != 0:
        raise _DiffError(f"{rev} is not a commit of the repository holding {model}")
    show = subprocess.run(["git", "show", f"{sha.stdout.strip()}:{rel}"], cwd=top.stdout.strip(), capture_output=True)
    if show.returncode != 0:
        raise _DiffError(f"cannot read {rel} at revision {rev}: {show.stderr.decode(errors='replace').strip()}")
    path = tmp / label / model.name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(show.stdout)
    from loom.expand import lock_path

    lock = subprocess.run(["git", "show", f"{rev}:{lock_path(rel)}"], cwd=top.stdout.strip(), capture_output=True)
    if lock.returncode == 0:
        lock_path(path).write_bytes(lock.stdout)
    return path, f"{rev}"


def _side(path: Path, base: Fabric | None) -> Fabric:
    """One side of a change: the model with its own lock file, else (the head of a change)
    with the lock the base gives, so a change is judged against the floor as it stands."""
    from loom.expand import lock_path, read_lock
    from loom.expand.lockfile import lock_of

    lock = read_lock(lock_path(path))
    if lock is None and base is not None:
        lock = lock_of(base, base.switch_lid_base)
    return load_fabric(path, lock)


class _DiffError(Exception):
    pass


@app.command("diff")
def diff_cmd(
    model: Path = MODEL_ARG,
    base: str | None = typer.Option(None, "--base", help="git revision of MODEL to compare from"),
    head: str | None = typer.Option(None, "--head", help="git revision to compare to (default: the file as it is)"),
    base_file: Path | None = typer.Option(None, "--base-file", help="model file to compare from"),
    head_file: Path | None = typer.Option(None, "--head-file", help="model file to compare to"),
    fmt: str = typer.Option("text", "--format", help="text, markdown or json"),
    tolerance: int = typer.Option(0, "--balance-tolerance", help="allowed rise of (max destinations per up-port - bound)"),
) -> None:
    """What a model change does: verdicts, LFT entries, moved destinations, cables, host settings.

    Exit 0 = no regression, 1 = a regression, 2 = error."""
    import tempfile

    from loom.checks.compare import compare, evaluate
    from loom.render.diff_report import markdown, summary

    if fmt not in ("text", "markdown", "json"):
        err.print(f"[red]error:[/red] --format must be text, markdown or json, not {escape(str(fmt))}")
        raise typer.Exit(2)
    if base is None and base_file is None:
        err.print("[red]error:[/red] give --base REV or --base-file FILE")
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory(prefix="loom-diff-") as tmp:
        sides = []
        for label, rev, file in (("base", base, base_file), ("head", head, head_file)):
            try:
                path, name = _model_at(model, rev, file, Path(tmp), label)
                sides.append(evaluate(name, _side(path, sides[0].fabric if sides else None), hint=sides[0] if sides else None))
            except _DiffError as exc:
                _print_error(exc)
                raise typer.Exit(2) from None
            except ModelError as exc:
                err.print(f"[red]error:[/red] the {label} model is not valid", highlight=False)
                for p in exc.problems:
                    err.print(p.render(exc.file if exc.file.endswith(".lock.json") else name if rev else str(path)),
                              highlight=False, markup=False)
                raise typer.Exit(2) from None
    d = compare(*sides, tolerance=tolerance)
    if fmt == "json":
        sys.stdout.write(json.dumps(d, indent=2, default=_np_default) + "\n")
    else:
        sys.stdout.write(markdown(d) if fmt == "markdown" else summary(d))
    raise typer.Exit(d["exit"])


def _cable_plan(path: Path, fabric: Fabric):
    from loom.model.catalogue import load_catalogue
    from loom.render.cabling import cable_plan

    m = fabric.model
    if m.cabling is None:
        err.print(f"[red]error:[/red] {escape(str(path))}: the model has no `cabling:` section\n"
                  "  fix: add cabling: {site: <name>, catalogue: catalogue/nvidia-hdr.yaml}", highlight=False)
        raise typer.Exit(1)
    try:
        return cable_plan(fabric, load_catalogue(path, m.cabling.catalogue))
    except ModelError as exc:
        from loom.model import locate

        _print_model_error(path, locate(path, exc) if not exc.file else exc)
        raise typer.Exit(1) from None


@app.command()
def configs(model: Path = MODEL_ARG, out_dir: Path = typer.Option(..., "--out", metavar="DIR", help="directory to write"),
            only: str = typer.Option("*", "--only", help="glob on device names (the 32,768-GPU fabric is big)")) -> None:
    """Ethernet planes: per switch frr.conf (+ zebra/bgpd/bfdd or staticd.conf) and SONiC
    config_db.json (ports, BGP, the lossless QoS and buffer tables), per host systemd-networkd
    files and an iproute2 script with per-NIC source routing, and mlnx_qos.sh.

    Exit 0 written; 1 invalid model or not an Ethernet fabric; 2 usage error."""
    from rich.progress import Progress

    from loom.model.names import PathEscape
    from loom.render.outtree import OutputTree
    from loom.render.roce import RoceConfigs, selected

    fabric = _fabric(model)
    if fabric.technology != "ethernet":
        err.print(f"[red]error:[/red] {escape(str(model))} is {fabric.technology}: switch configs are for Ethernet planes "
                  "(InfiniBand gets `loom route`)", highlight=False)
        raise typer.Exit(1)
    static = fabric.model.addressing.routing == "static"  # only pinned routes need the routing tables
    devices = selected(fabric, only)
    rc = RoceConfigs(fabric, _route(model, "auto", fabric)[1] if static else None,
                     None if only == "*" else {d.index for d in devices if not isinstance(d, int)})
    try:
        with OutputTree(out_dir) as tree, Progress(console=err, transient=True) as bar:
            task = bar.add_task("rendering", total=len(devices))
            for rel_dir, files in rc.files(devices):
                tree.add(rel_dir, files)
                bar.advance(task)
    except PathEscape as exc:
        raise _input_error(exc) from None
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write under {escape(str(out_dir))}: {exc.strerror}", highlight=False)
        raise typer.Exit(1) from None
    out.print(f"wrote configs of {len(devices)} devices ({tree.written} files) under {out_dir}", highlight=False, markup=False)


@app.command("inventory")
def inventory_cmd(model: Path = MODEL_ARG, out_dir: Path | None = typer.Option(None, "--out", metavar="DIR",
                  help="directory (default: inventory/<fabric>)")) -> None:
    """Write the Ansible inventory: hosts by role, zone, plane, rack; derived host settings.

    Exit 0 written; 1 invalid model or unwritable directory; 2 usage error."""
    from loom.render.inventory import inventory

    fabric = _fabric(model)
    out_dir = out_dir or Path("inventory") / fabric.name
    files = inventory(fabric)
    for rel, text in files.items():
        _write_under(out_dir, rel, text)
    out.print(f"wrote {len(files)} inventory files under {out_dir}", highlight=False, markup=False)


host_app = typer.Typer(no_args_is_help=True, help="Host settings: derivation and checks against gathered facts.")
app.add_typer(host_app, name="host")


@host_app.command("check")
def host_check(model: Path = MODEL_ARG, host: str = typer.Option(..., "--host", help="node name"),
               facts: Path = typer.Option(..., "--facts", help="directory with nvidia-smi-topo.txt, lspci-vvv.txt, numactl-H.txt"),
               fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """Compare a host's gathered facts with its node type's intent.

    Exit 0 as intended; 1 anything differs (or the model is invalid); 2 usage error or unreadable facts."""
    from loom.host.check import FactsError, check_host, read_facts

    as_json = json_wanted(fmt, as_json)

    fabric = _fabric(model)
    if host not in fabric.node_index:
        err.print(f"[red]error:[/red] {escape(str(model))} has no node named {escape(str(host))}", highlight=False)
        raise typer.Exit(2)
    node = fabric.nodes[fabric.node_index[host]]
    try:
        problems = check_host(fabric.model, node.node_type, read_facts(facts))
    except FactsError as exc:
        _print_error(exc)
        raise typer.Exit(2) from None
    if as_json:
        sys.stdout.write(json.dumps({"host": host, "node_type": node.node_type, "ok": not problems, "mismatches": problems}, indent=2) + "\n")
    elif problems:
        out.print(f"{host} ({node.node_type}): {len(problems)} mismatch(es)", highlight=False)
        for p in problems:
            out.print(f"  - {p}", highlight=False)
    else:
        out.print(f"{host} ({node.node_type}): matches the model", highlight=False)
    raise typer.Exit(1 if problems else 0)


sim_app = typer.Typer(no_args_is_help=True, help="The embedded simulated fabric: ibsim + OpenSM for InfiniBand, "
                      "FRR in network namespaces for Ethernet planes.")
app.add_typer(sim_app, name="sim")


def _routed(model: Path, fabric: Fabric | None = None):
    """Fabric and plane-0 tables, for the simulated fabric (one InfiniBand subnet)."""
    fabric, tables = _route(model, "fattree", fabric)
    return fabric, tables[0]


def _phase(name: str, fn, *args):
    """Run one phase with a spinner (and a bar for each countable piece of work inside it, see
    `loom.progress`) and print how long it took."""
    import time

    from loom.render.progress_bar import bars

    t0 = time.perf_counter()
    with bars(err, name):
        result = fn(*args)
    err.print(f"  {name}: {time.perf_counter() - t0:.2f}s", highlight=False)
    return result


def _progress(msg: str) -> None:
    err.print(f"  {msg}", highlight=False)


def _fail(exc: Exception | str) -> None:
    _print_error(exc)
    raise typer.Exit(1) from None


@sim_app.command("up")
def sim_up(model: Path = MODEL_ARG) -> None:
    """Start ibsim with the fabric and OpenSM on its SM node; wait for SUBNET UP (idempotent).
    Holds the fabric lock; resolves an interrupted apply first and loads only checked tables.
    An Ethernet model runs live instead: FRR per switch and every host in network namespaces,
    switches on the configuration loom applied last (else interfaces only); models too big to
    run live are refused with the size they need.

    Exit 0 up; 1 it did not come up (the message names the log)."""
    from loom.push import audit
    from loom.push.apply import recover, take_lock
    from loom.push.checked import check_input_file
    from loom.push.daemon import Daemons
    from loom.push.errors import PlanError
    from loom.push.sim import SimError
    from loom.push.target import SimTarget
    from loom.qos import plan_qos
    from loom.qos.render import opensm_qos_conf
    from loom.render.opensm import guid2lid

    if cli_roce.is_ethernet(fabric := _fabric(model)):
        return cli_roce.sim_up(fabric)
    fabric, tables = _phase("route", _routed, model, fabric)
    d = Daemons.of(fabric.name)
    qos = plan_qos(fabric.model)
    conf = opensm_qos_conf(fabric.name, qos) if qos else "qos FALSE\n"
    try:
        lock = take_lock(d, "sim up", _progress, fabric=fabric.name)
    except PlanError as exc:
        _fail(exc)
    try:
        recover(SimTarget(d), progress=_progress)
        if not d.up_and_running() and d.lfts_file.exists():
            failed = check_input_file(fabric, d.lfts_file.read_text())
            if failed:
                rejected = d.lfts_file.with_name("lfts.dump.rejected")
                d.lfts_file.replace(rejected)
                _progress(f"the tables OpenSM would load fail {failed[0]}: moved to {rejected}; OpenSM starts with "
                          "its own routing — run `loom plan` and `loom apply`")
        what = _phase("sim up", d.start, fabric, guid2lid(tables), conf)
        audit.record(d.dir, "sim up", outcome=what, fabric=fabric.name)
    except (SimError, PlanError) as exc:
        _fail(exc)
    except OSError as exc:
        _fail(f"cannot write the state of {fabric.name} in {d.dir}: {exc.strerror}")
    finally:
        lock.release()
    s = d.status()
    out.print(f"{fabric.name}: {what} — ibsim pid {s['ibsim']['pid']}, OpenSM pid {s['opensm']['pid']} on "
              f"{s['opensm']['sm_host']}, routing {s['routing_engine']}; state in {d.dir}", highlight=False)


@sim_app.command("down")
def sim_down(model: Path = MODEL_ARG, force: bool = typer.Option(False, "--force",
             help="stop even while an apply (or another lifecycle command) holds the fabric lock")) -> None:
    """Stop OpenSM and ibsim of the fabric (an Ethernet model's FRR daemons and namespaces).
    Refuses while an apply runs unless --force.

    Exit 0 stopped (or nothing ran); 1 refused (an apply holds the lock)."""
    from loom.push import audit
    from loom.push.apply import recover, take_lock
    from loom.push.daemon import Daemons
    from loom.push.errors import PlanError
    from loom.push.target import SimTarget

    if cli_roce.is_ethernet(fabric := _fabric(model)):
        return cli_roce.sim_down(fabric, force)
    d = Daemons.of(fabric.name)
    lock = None
    try:
        lock = take_lock(d, "sim down", _progress)
        recover(SimTarget(d), progress=_progress)
    except PlanError as exc:
        if not force:
            _fail(f"{exc} (or `loom sim down --force`)")
        _progress(f"--force: stopping anyway ({exc})")
    try:
        stopped = d.stop()
        audit.record(d.dir, "sim down" if lock else "sim down forced", stopped=stopped)
    finally:
        if lock:
            lock.release()
    out.print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running", highlight=False)


@sim_app.command("status")
def sim_status(model: Path = MODEL_ARG, fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """Show whether the fabric's ibsim and OpenSM run and the subnet is up (an Ethernet model:
    whether every FRR daemon and namespace of the live simulation runs). Exit 0 if up."""
    from loom.push.daemon import Daemons
    from loom.push.journal import Journal
    from loom.push.links import links_down
    from loom.push.lock import is_free

    as_json = json_wanted(fmt, as_json)
    if cli_roce.is_ethernet(fabric := _fabric(model)):
        return cli_roce.sim_status(fabric, as_json)
    d = Daemons.of(fabric.name)
    s = {**d.status(), "lock_free": is_free(d.dir), "interrupted_apply": Journal(d.dir).load() is not None,
         "links_down": links_down(d.dir)}
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
    else:
        def daemon(name: str) -> str:
            return f"running (pid {s[name]['pid']})" if s[name]["running"] else "down"

        out.print(f"ibsim: {daemon('ibsim')}  OpenSM: {daemon('opensm')}  "
                  f"subnet up: {'yes' if s['subnet_up'] else 'no'}  sweeps: {s['sweeps']}  engine: {s['routing_engine']}  "
                  f"lock: {'free' if s['lock_free'] else 'held'}"
                  + (f"  links down: {', '.join(s['links_down'])}" if s["links_down"] else "")
                  + ("  [yellow]an interrupted apply awaits recovery (any loom command resolves it)[/yellow]"
                     if s["interrupted_apply"] else ""), highlight=False)
    raise typer.Exit(0 if s["subnet_up"] else 1)


link_app = typer.Typer(no_args_is_help=True, help="Link events in the simulated fabric: pull a cable, put it back.")
sim_app.add_typer(link_app, name="link")
END_A = typer.Argument(..., help="a device and port, `z0-leaf3:21` (or `z0-leaf3/21`); a device alone: all its cables")
END_B = typer.Argument(None, help="the far end (optional; picks among parallel cables, or checks A's far end)")


def _link_event(model: Path, a: str, b: str | None, up: bool) -> None:
    from loom.expand.failures import FailureSpecError, parse_link
    from loom.push import audit
    from loom.push.daemon import Daemons
    from loom.push.errors import TargetError
    from loom.push.links import set_links

    fabric = _fabric(model)
    try:
        cables = parse_link(fabric, a, b)
    except FailureSpecError as exc:
        raise _input_error(exc, 2) from None
    flip = None
    if cli_roce.is_ethernet(fabric):
        from loom.push.frr_lab import FrrLab

        d = FrrLab.of(fabric.name)
        running = d.is_up()
        flip = lambda cs, u: d.set_cables(fabric, cs, u)  # noqa: E731
    else:
        d = Daemons.of(fabric.name)
        running = not d.fabric_down()
    if not running:
        _fail(f"the simulated fabric of {fabric.name} is not running; `loom sim up {model}` starts it")
    try:
        changed = set_links(d.dir, fabric, cables, up, flip)
    except TargetError as exc:
        _fail(exc)
    word = "up" if up else "down"
    if changed:
        audit.record(d.dir, f"sim link {word}", cables=changed)
    out.print(f"link {word}: {', '.join(changed)}" if changed else f"already {word}: nothing to do", highlight=False)


@link_app.command("down")
def sim_link_down(model: Path = MODEL_ARG, a: str = END_A, b: str | None = END_B) -> None:
    """Pull a cable (ibsim `Unlink`): OpenSM sees the port go down on its next sweep.  On an
    Ethernet model, both ends of the cable's veth pair go down in the live FRR lab.

    Exit 0 done (or already down); 1 the simulated fabric is not running; 2 a name the model does not have."""
    _link_event(model, a, b, up=False)


@link_app.command("up")
def sim_link_up(model: Path = MODEL_ARG, a: str = END_A, b: str | None = END_B) -> None:
    """Put a pulled cable back (ibsim `ReLink`; on an Ethernet model, the veth pair's ends up).

    Exit 0 done (or already up); 1 the simulated fabric is not running; 2 a name the model does not have."""
    _link_event(model, a, b, up=True)




@app.command()
def watch(model: Path = MODEL_ARG, target: str = TARGET_OPT, inventory: Path | None = INVENTORY_OPT,
          ssh_config: Path | None = SSH_CONFIG_OPT,
          interval: float = typer.Option(5.0, "--interval", min=0.2, help="discover at least this often (seconds); "
                                         "OpenSM's sweeps trigger a discovery at once"),
          hold_down: float = typer.Option(10.0, "--hold-down", min=0, help="a cable that comes back counts as down "
                                          "until it has stayed up this long (seconds)"),
          duration: float | None = typer.Option(None, "--for", min=0, help="stop after this many seconds (default: "
                                                "until Ctrl-C / SIGTERM)")) -> None:
    """Follow the fabric beside OpenSM: when cables or switches go down, apply the minimal-churn
    reroute (checked, through the same lock, journal and read-back as apply); when they are
    back and stable, return to the design tables.  Every event goes to the screen and to
    watch.log in the fabric's state directory, with the time from detection to verified tables.

    Exit 0 when stopped (--for, Ctrl-C, SIGTERM); 1 when the target cannot be reached."""
    import signal
    import time

    from loom.push.errors import PlanError, TargetError
    from loom.push.watch import Watcher

    fabric = _fabric(model)
    t = _target(fabric, target, inventory, ssh_config)
    stop = [False]
    end = time.monotonic() + duration if duration is not None else None

    def halt(signum, _frame) -> None:
        stop[0] = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, halt)
    w = Watcher(model, fabric, t, hold_down=hold_down, log=_print_event)
    _progress(f"watching {fabric.name} ({t.kind}): discovery at least every {interval:g}s and on every OpenSM sweep, "
              f"hold-down {hold_down:g}s; log in {t.dir / 'watch.log'}")
    try:
        w.run(interval, until=lambda: stop[0] or (end is not None and time.monotonic() >= end),
              ready=lambda: _progress(f"first discovery done: {len(w.down)} cables routed around; watching"))
    except (PlanError, TargetError) as exc:
        _fail(exc)
    _progress("watcher stopped" + (f"; the fabric is routed around {', '.join(sorted(map(fabric.cable_id, w.down)))}"
                                   if w.down else ""))


def _print_event(e) -> None:
    took = ", ".join(f"{k} {v:.2f}s" for k, v in e.seconds.items() if k != "total")
    what = {"down": "down", "up": "back"}.get(e.kind, e.kind)
    out.print(f"{e.detected} {what}: {', '.join(e.changed)} → {e.message} ({e.seconds.get('total', 0):.2f}s from "
              f"detection: {took})", highlight=False, markup=False)


@app.command()
def plan(model: Path = MODEL_ARG, out_file: Path | None = typer.Option(None, "--out", metavar="FILE", help="file to save the plan to as well (it is always saved as last-plan.json in the fabric's state directory)"),
         target: str = TARGET_OPT, inventory: Path | None = INVENTORY_OPT, ssh_config: Path | None = SSH_CONFIG_OPT,
         fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """Route, check, read the live tables (and the standbys' files) and show what apply would change
    (`--format json`: the plan without its tables, as `loom show PLAN --format json` prints it).
    An Ethernet model: per switch, FRR's diff of the rendered configuration against the running
    one (vtysh) and the kernel FIB against the routes the model wants.

    Exit 0 = no changes, 2 = changes, 1 = error (Terraform's convention)."""
    from loom.push.plan import has_changes, make_plan

    as_json = json_wanted(fmt, as_json)
    if cli_roce.is_ethernet(fabric := _fabric(model)):
        return cli_roce.plan(model, fabric, out_file, target, inventory, ssh_config, as_json)
    fabric, _ = _phase("route", _routed, model, fabric)  # refuses fabrics no engine can route, before touching the sim
    _plan_on(_target(fabric, target, inventory, ssh_config), model, fabric, out_file,
             "read live + route + check + diff", make_plan, _print_plan, has_changes, as_json)


def _plan_on(d, model: Path, fabric: Fabric, out_file: Path | None, label: str, make, show, changed,
             as_json: bool = False) -> None:
    """Settle an interrupted apply, make the plan (`make(model, fabric, d)`), save it in the
    target's state directory (and --out), show it (`as_json`: its summary without the tables);
    exit 2 if `changed(plan)`, else 0."""
    from loom.push.apply import settle
    from loom.push.errors import PlanError, TargetError
    from loom.push.packing import plan_json

    try:
        if d.kind != "sim":  # the marker `apply` looks for (the simulations' are their fabric.net, frr-lab.json)
            _write(d.dir / "target.json", json.dumps(d.spec(), indent=1) + "\n")
        settle(d, _progress)
        p = _phase(label, make, model, fabric, d)
    except (PlanError, TargetError) as exc:
        _fail(exc)
    finally:
        d.close()
    for path in [d.dir / "last-plan.json"] + ([out_file] if out_file else []):
        _write(path, plan_json(p))
    if as_json:
        from loom.render.plan_report import summary_json

        sys.stdout.write(summary_json(p, entries=False))
    else:
        show(p, out_file or d.dir / "last-plan.json")
    raise typer.Exit(2 if changed(p) else 0)


def _print_plan(p: dict, saved: Path) -> None:
    from loom.push.plan import has_changes

    c, q = p["changes"], p["qos"]
    if p["drift"]:
        out.print(f"[yellow]drift:[/yellow] {p['drift']}", highlight=False)
    for line in p.get("standbys_differing", []):
        out.print(f"standby: {line} (apply writes the master's files to every standby)", highlight=False)
    if not has_changes(p):
        out.print(f"[green]No changes.[/green] The live tables of {p['fabric']} match the model"
                  + (" (routing and QoS)." if q["intent"] else "."))
        return
    if q["conf_changes"] or q["ports_differing"]:
        out.print(f"QoS: {'OpenSM QoS options change; ' if q['conf_changes'] else ''}"
                  f"{q['ports_differing']} ports hold other SL2VL/VLArb tables than the model wants")
        for e in q["examples"]:
            out.print(f"    {e}", highlight=False)
    if not c["entries_changed"]:
        out.print("Routing: no LFT changes.")
        return
    out.print(f"Plan for {p['fabric']}: [bold]{c['entries_changed']}[/bold] LFT entries on "
              f"[bold]{c['switches_touched']}[/bold] switches, {len(c['destinations_moved'])} destinations move")
    t = Table("switch", "entries changed")
    from loom.model.names import natural

    for name, n in sorted(c["per_switch"].items(), key=lambda kv: (-kv[1], natural(kv[0])))[:15]:
        t.add_row(name, str(n))
    if len(c["per_switch"]) > 15:
        t.add_row(f"... {len(c['per_switch']) - 15} more", "")
    out.print(t)
    moved = c["destinations_moved"]
    out.print("destinations moved: " + ", ".join(f"{m['name']} (LID {m['lid']})" for m in moved[:12])
              + (f", ... {len(moved) - 12} more" if len(moved) > 12 else ""), highlight=False)
    b0, b1 = p["balance_before"], p["balance_after"]
    out.print(f"balance (max destinations per leaf up-port / bound): before {b0['max_dest_per_up_port']}/{b0['lower_bound']}, "
              f"after {b1['max_dest_per_up_port']}/{b1['lower_bound']}; storage before {b0['storage']}, after {b1['storage']}")
    out.print(f"saved in {saved}; apply with: loom apply {saved}", highlight=False, markup=False)


def _show_plan(path: Path, as_json: bool, entries: bool) -> None:
    from loom.push.errors import PlanError
    from loom.push.plan import read_plan
    from loom.render.plan_report import changed_entries, entry_lines, summary_json

    try:
        p = read_plan(path, whole=True)
    except PlanError as exc:
        _fail(exc)
    if as_json:
        sys.stdout.write(summary_json(p, entries))
        return
    out.print(f"plan for {p['fabric']} made {p['created']} by {p['user']} from {p['model']} (target {p['target']['kind']})",
              highlight=False, markup=False)
    _print_plan(p, path)
    if entries:
        lines = entry_lines(changed_entries(p))
        out.print("\n".join(lines) if lines else "no LFT entries change", highlight=False, markup=False)


@app.command()
def apply(plan_file: Path | None = typer.Argument(None, help="plan.json (default: the last plan of the fabric)"),
          model: Path | None = typer.Option(None, "--model", help="with no plan file: the model whose last plan to apply"),
          target: str = typer.Option("sim", "--target", help="with --model: the target whose last plan to apply (sim, ssh)"),
          keep_live: bool = typer.Option(False, "--keep-live", help="refuse to overwrite changes made outside loom "
                                         "(by default the model wins over hand edits)")) -> None:
    """Apply a plan: lock, check it (digests, reachability, loops, deadlock per VL, QoS), refuse if
    stale, write (journalled), push, read back and verify; restore on failure or SIGINT/SIGTERM.
    An Ethernet plan: frr-reload.py per switch, then every BGP session established and every
    FIB as intended; the previous configurations are reloaded on failure.

    Exit 0 applied and verified (or nothing to change); 1 refused or failed (the previous tables are restored); 128+N after signal N."""
    from loom.push.apply import apply_plan
    from loom.push.daemon import state_dir
    from loom.push.errors import Interrupted, PlanError, TargetError
    from loom.push.plan import read_plan
    from loom.push.ssh import state_dir as ssh_state_dir
    from loom.render.progress_bar import bars

    if plan_file is None:
        if model is None:
            err.print("[red]error:[/red] give a plan file, or --model MODEL to apply its last plan")
            raise typer.Exit(1)
        plan_file = (ssh_state_dir if target == "ssh" else state_dir)(_fabric(model).name) / "last-plan.json"
    try:
        p = read_plan(plan_file)
        if p.get("technology") == "ethernet":  # a plan of FRR configurations (loom.push.frr_apply)
            from loom.push.frr_apply import apply_frr_plan as apply_plan  # noqa: F811
        with bars(err):
            res = apply_plan(p, plan_file, progress=_progress, keep_live=keep_live)
    except (PlanError, TargetError) as exc:
        _fail(exc)
    except Interrupted as exc:
        err.print(f"[red]apply interrupted by signal {exc.signum}:[/red] {exc.outcome}", highlight=False)
        raise typer.Exit(128 + exc.signum) from None
    for name, secs in res.phases.items():
        err.print(f"  {name}: {secs:.2f}s", highlight=False)
    if res.ok:
        out.print(f"[green]{res.message}[/green]", highlight=False)
    else:
        err.print(f"[red]{res.message}[/red]", highlight=False)
    raise typer.Exit(0 if res.ok else 1)


# commands that live in their own modules
from loom.cli_cabling import cabling_app  # noqa: E402
from loom.cli_ranks import ranks_cmd  # noqa: E402
from loom.cli_slurm import slurm_cmd  # noqa: E402
from loom.cli_terraform import fabric_cmd, tf_app  # noqa: E402

app.command("ranks")(ranks_cmd)
app.command("slurm")(slurm_cmd)
app.add_typer(cabling_app, name="cabling")
app.command("fabric")(fabric_cmd)
app.add_typer(tf_app, name="tf")
from loom.netbox.commands import netbox_app  # noqa: E402  (its own module; imports nothing heavy at load)

app.add_typer(netbox_app, name="netbox")


if __name__ == "__main__":
    app()
