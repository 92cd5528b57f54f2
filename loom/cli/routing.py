"""`loom route|check|whatif|discover|diff`: routing, its checks, failures, the fabric as built,
and what a model change does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from loom import pipeline

if TYPE_CHECKING:
    from loom.expand import Fabric

from .common import (CLOCK, ENGINE_OPT, escape, FORMAT_OPT, INVENTORY_OPT, JSON_OPT, MODEL_ARG, SSH_CONFIG_OPT, TARGET_OPT, UI,
                     backend_of, err, format_of, input_error, json_wanted, load_model, np_default, out, print_error,
                     phase, print_model_error, refusals, route_model, write)
from .sides import DiffError, model_at, side


def route_cmd(model: Path = MODEL_ARG, out_dir: Path = typer.Option(..., "--out", metavar="DIR", help="directory to write"),
              engine: str = ENGINE_OPT) -> None:
    """Compute LFTs; write DIR/lfts.dump (OpenSM -U format), DIR/guid2lid, DIR/topology.net (the
    fabric as it stands, in the ibnetdiscover/ibsim format), DIR/qos-policy.conf (OpenSM -Y, when
    cross-zone traffic needs its own VLs or partitions ride a traffic class), DIR/partitions.conf
    (OpenSM -P, when the model has partitions) and DIR/summary.json.

    Exit 0 written; 1 invalid model or no engine routes it; 2 usage error."""
    fabric, tables = route_model(model, engine)
    backend = backend_of(fabric)
    summary = {"fabric": fabric.name, "model": str(model), "engine": tables[0].engine, "planes": []}
    with CLOCK.timing("write"):
        _write_route_files(fabric, tables, backend, out_dir, summary)
    tabled = sum(p["tables"] for p in summary["planes"])
    without = sum(p["switches"] for p in summary["planes"]) - tabled
    out.print(f"routed {fabric.name} with {summary['engine']}: {sum(p['lft_entries'] for p in summary['planes'])} LFT entries "
              f"on {tabled} switches{f' ({without} down or cut off: no table)' if without else ''} → {out_dir}",
              highlight=False, markup=False)


def _write_route_files(fabric, tables, backend, out_dir: Path, summary: dict) -> None:
    """`loom route`'s files per plane (and summary.json), filling `summary`."""
    import hashlib

    from loom.render.opensm import guid2lid, lfts_dump

    for t in tables:
        d = out_dir if fabric.planes == 1 else out_dir / f"plane{t.subnet.plane}"
        dump = lfts_dump(t)
        write(d / "lfts.dump", dump)
        write(d / "guid2lid", guid2lid(t))
        for name, text in backend.route_files(fabric, t).items():
            write(d / name, text)
        for w in t.warnings:
            err.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
        summary["planes"].append({
            "plane": t.subnet.plane, "dir": str(d), "switches": t.subnet.n,
            "tables": int((t.lft != 255).any(axis=1).sum()),  # what the dump holds: a switch cut off or down has none
            "max_lid": t.subnet.max_lid,
            "ca_ports": len(t.subnet.ca_lids), "lft_entries": int((t.lft != 255).sum()),
            "lfts_sha256": hashlib.sha256(dump.encode()).hexdigest(),
        })
    write(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")


def check(model: Path = MODEL_ARG, fmt: str = typer.Option("text", "--format", help="text, json, markdown or html (the "
                                                        "fabric drawn with each link coloured by its load, docs/check-report.md)"),
          as_json: bool = JSON_OPT,
          engine: str = ENGINE_OPT, ebb_samples: int | None = typer.Option(None, min=0, max=10_000, help="random bisections for eBB, at most: "
                                                 "sampling stops once the 95 % interval is within ±0.002 (default: "
                                                 "loom.checks.EBB_SAMPLES, the count loom diff uses too)"),
          lfts: Path | None = typer.Option(None, "--lfts", help="check these tables (an opensm-lfts.dump / dump_fts "
                                           "file of the model's subnet) instead of routing the model"),
          design_bound: bool = typer.Option(False, "--design-bound", help="also fail when any switch is above the "
                                            "bound of the intact design (CI of design changes)"),
          target: str = typer.Option("sim", "--target", help="with --format html: mark the links the watcher of this "
                                     "target kind (sim or ssh) drained")) -> None:
    """Route and check: reachability, deadlock freedom, balance against the lower bound, eBB.

    Exit 0 only when every plane is reachable, deadlock-free and every switch meets its
    as-built balance bound (with --design-bound: the intact design's bound); 1 otherwise.
    With --lfts, the same checks run on tables from elsewhere: OpenSM's own dump, the live
    fabric's `dump_fts`, a hand-edited file."""
    with CLOCK.timing("imports"):  # the checks' libraries (scipy's among them): seconds on a busy machine
        from loom.checks import EBB_SAMPLES
        from loom.checks.planes import check_planes, check_rails

    fmt = format_of(fmt, as_json, ("text", "json", "markdown", "html"))

    if lfts is None:
        fabric, tables = route_model(model, engine)
    else:
        from loom.inputs import InputError, read_lft_dump
        from loom.routing import subnet

        fabric = load_model(model)
        try:
            tables = [read_lft_dump(lfts, subnet(fabric, 0), f"file {lfts.name}")]
        except InputError as exc:
            raise input_error(exc) from None
    ebb_samples = EBB_SAMPLES if ebb_samples is None else ebb_samples
    planes = phase("checks", pipeline.check, fabric, tables, ebb_samples)
    backend = backend_of(fabric)
    with CLOCK.timing("cabling checks"):
        cabling = {"isolation": check_planes(fabric), "rails": check_rails(fabric), **backend.check_extra(fabric)}
    bound_key = "design_within_bound" if design_bound else "within_bound"
    ok = all(p["reachable"] and p["deadlock_free"] and p["balance"][bound_key] and (p["qos"] is None or p["qos"]["ok"])
             and (p["balance"].get("into_within_bound", True) or not p["balance"].get("intact"))
             for p in planes) and all(c is None or c["ok"] for c in cabling.values())
    report = {"fabric": fabric.name, "ok": ok, **cabling}
    report.update(planes[0] if len(planes) == 1 else {"planes": planes})
    if fmt == "json":
        sys.stdout.write(json.dumps(report, indent=2, default=np_default) + "\n")
    elif fmt == "markdown":
        from loom.render.check_report import markdown

        sys.stdout.write(markdown(report, planes, bound_key))
    elif fmt == "html":
        sys.stdout.write(_check_html(model, tables, report, planes, backend.drained_links(fabric, target)))
    else:
        _print_cabling(fabric.name, cabling["isolation"], cabling["rails"])
        backend.print_check(UI, fabric.name, planes, cabling)
    raise typer.Exit(0 if ok else 1)


def _check_html(model: Path, tables: list, report: dict, planes: list[dict], drained: dict[str, list[str]]) -> str:
    """The HTML report: the design drawn with what is declared down, drained or loaded (`loom.render.check_html`)."""
    from loom.checks.link_load import histogram, port_loads
    from loom.expand.asbuilt import load_as_built
    from loom.render.check_html import link_states, to_html

    state = load_as_built(model)
    design = state.design
    down = {design.cable_id(i): f"{d.source}{': ' + d.reason if d.reason else ''} ({d.name})"
            for d in state.declared for i in d.cables}
    entries = [(d.name, d.source + (f": {d.reason}" if d.reason else "") + (f", until {d.until}" if d.until else ""))
               for d in state.declared]
    loads = {k: v for t in tables for k, v in port_loads(t).items()}
    return to_html(design, report, planes, link_states(design, loads, down, drained), histogram(loads), entries, drained)


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

    from loom.checks.whatif import opensm_trials, trials_summary, what_if
    from loom.expand.failures import FailureSpecError, parse_failures, random_failures
    from loom.render.whatif_report import print_outcomes, print_trials

    as_json = json_wanted(fmt, as_json)
    if bool(fail) == bool(random):
        print_error("give either --fail NAME (repeatable) or --random K")
        raise typer.Exit(2)
    fabric, design = route_model(model, engine)
    backend = backend_of(fabric)
    qos = backend.qos(fabric)
    try:
        if fail:
            failure = parse_failures(fabric, fail)
            outcome = phase("reroute and check", lambda: what_if(fabric, failure, design, engine, qos=qos))
            ok = all(o.ok for o in outcome)
            report = {"fabric": fabric.name, "failures": fail, "ok": ok, "planes": [o.as_dict() for o in outcome]}
            if vs_opensm:
                report["opensm"] = _opensm_recompute(backend, fabric, failure, design, vs_opensm)
        else:
            rng = np.random.default_rng(seed)
            draws = [random_failures(fabric, random, rng) for _ in range(trials)]
            runs = phase(f"reroute and check {trials} draws", lambda: [what_if(fabric, f, design, engine, qos=qos) for f in draws])
            summary = trials_summary(runs)
            ok = summary["failed_trials"] == 0
            report = {"fabric": fabric.name, "random": random, "seed": seed, "ok": ok, **summary}
            if vs_opensm:  # the same draws recomputed by OpenSM in the simulator (two sweeps per draw and engine)
                report["opensm"] = opensm_trials([_opensm_recompute(backend, fabric, f, design, vs_opensm) for f in draws])
    except FailureSpecError as exc:
        raise input_error(exc, 2) from None
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    elif fail:
        print_outcomes(out, fabric.name, fail, outcome, report.get("opensm", {}))
    else:
        print_trials(out, fabric.name, random, report)
    raise typer.Exit(0 if ok else 1)


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

    fmt = format_of(fmt, as_json, ("text", "json", "csv"))
    fabric = load_model(model, marked=False)  # a cable marked down and still cabled is not "extra"
    with refusals(model):
        backend_of(fabric).require_discovery(model, fabric)
    try:
        text, source = _topology_text(fabric, topology, target, inventory, ssh_config)
        report = compare(fabric, parse_ibnetdiscover(text, source))
    except TopologyError as exc:
        raise input_error(exc, 2) from None
    shown = {"text": lambda: as_text(fabric.name, report), "json": lambda: report_json(fabric.name, report),
             "csv": lambda: as_csv(report)}[fmt]()
    sys.stdout.write(shown)
    if out_file:
        write(out_file, shown)
    if record:
        _record_guids(model, fabric, report)
    raise typer.Exit(0 if report.clean else 1)


def _topology_text(fabric: Fabric, topology: Path | None, target: str, inventory: Path | None,
                   ssh_config: Path | None) -> tuple[str, str]:
    """The ibnetdiscover text to compare: a saved file (read bounded), else run on the target."""
    from loom.push.errors import TargetError

    if topology is not None:
        from loom.inputs import InputError, read_topology_file

        try:
            return read_topology_file(topology), str(topology)
        except InputError as exc:
            raise input_error(exc, 2) from None
    backend = backend_of(fabric)
    with refusals():
        t = backend.target(fabric, target, inventory, ssh_config)
    try:
        return backend.discover_text(fabric, t)
    except TargetError as exc:  # the simulator's SimError is one
        raise input_error(exc, 2) from None


def _record_guids(model: Path, fabric: Fabric, report) -> None:
    from loom.model import ModelError
    from loom.expand import lock_path, read_lock
    from loom.expand.lockfile import lock_text, with_found_guids

    path = lock_path(model)
    try:
        lock = read_lock(path)
    except ModelError as exc:
        print_model_error(model, exc)
        raise typer.Exit(2) from None
    if lock is None:
        print_error(f"{path} does not exist; write it first with `loom lock {model}`")
        raise typer.Exit(2)
    ca_of = {(fabric.nodes[p.node].name, p.nic): p.ca for p in fabric.ports}
    new, changed = with_found_guids(lock, report.guids, ca_of)
    if changed:
        write(path, lock_text(new))
    err.print(f"recorded {changed} GUID(s) found on the fabric in {path}" if changed else f"{path}: every GUID found is already recorded",
              highlight=False, markup=False)


def _opensm_recompute(backend, fabric: Fabric, failure, design, engines: list[str]) -> dict:
    """OpenSM's recompute of the same failure in the simulator, per engine (InfiniBand plane 0)."""
    from loom.fabrics import Unsupported
    from loom.push.errors import TargetError

    try:
        return backend.opensm_recompute(fabric, failure, design, engines, UI)
    except (Unsupported, TargetError) as exc:  # the simulator's SimError is a TargetError
        raise input_error(exc, 2) from None


def diff_cmd(
    model: Path = MODEL_ARG,
    base: str | None = typer.Option(None, "--base", help="git revision of MODEL to compare from"),
    head: str | None = typer.Option(None, "--head", help="git revision to compare to (default: the file as it is)"),
    base_file: Path | None = typer.Option(None, "--base-file", help="model file to compare from"),
    head_file: Path | None = typer.Option(None, "--head-file", help="model file to compare to"),
    fmt: str = typer.Option("text", "--format", help="text, markdown or json"),
    tolerance: int = typer.Option(0, "--balance-tolerance", help="allowed rise of (max destinations per up-port - bound)"),
    design_bound: bool = typer.Option(False, "--design-bound", help="list ports above the intact design's bound, not "
                                      "the as-built one (a fabric with links down has many)"),
) -> None:
    """What a model change does: verdicts, LFT entries, moved destinations, cables, host settings.

    Exit 0 = no regression, 1 = a regression, 2 = error."""
    from loom.model import ModelError
    import tempfile

    from loom.checks.compare import compare, evaluate
    from loom.render.diff_report import markdown, summary

    fmt = format_of(fmt, False, ("text", "markdown", "json"))
    if base is None and base_file is None:
        err.print("[red]error:[/red] give --base REV or --base-file FILE")
        raise typer.Exit(2)
    with tempfile.TemporaryDirectory(prefix="loom-diff-") as tmp:
        sides = []
        for label, rev, file in (("base", base, base_file), ("head", head, head_file)):
            try:
                path, name = model_at(model, rev, file, Path(tmp), label)
                sides.append(evaluate(name, side(path, sides[0].fabric if sides else None), hint=sides[0] if sides else None))
            except DiffError as exc:
                raise input_error(exc, 2) from None
            except ModelError as exc:
                print_model_error(Path(name) if rev else path, exc, f"the {label} model is not valid")
                raise typer.Exit(2) from None
    d = compare(*sides, tolerance=tolerance, design_bound=design_bound)
    if fmt == "json":
        sys.stdout.write(json.dumps(d, indent=2, default=np_default) + "\n")
    else:
        sys.stdout.write(markdown(d) if fmt == "markdown" else summary(d))
    raise typer.Exit(d["exit"])
