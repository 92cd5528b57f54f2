"""The `loom` command line.  Each command is a thin shell over the pipeline stages.

Exit codes: 0 success, 1 invalid model / failed check, 2 usage errors (Typer's).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from loom.expand import Fabric, load_fabric
from loom.model import ModelError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Loom: declarative AI-cluster fabrics.")
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)

MODEL_ARG = typer.Argument(..., help="model file (YAML), e.g. topology/fire-flyer-2.yaml")


def _fabric(path: Path) -> Fabric:
    try:
        return load_fabric(path)
    except ModelError as exc:
        _print_model_error(path, exc)
        raise typer.Exit(1) from None


def _print_model_error(path: Path, exc: ModelError) -> None:
    err.print(f"[red]error:[/red] {path} is not a valid model", highlight=False)
    for p in exc.problems:
        err.print(p.render(str(path)), highlight=False, markup=False)


def _write(path: Path, data: str) -> None:
    from loom.push.files import write_atomic

    try:
        write_atomic(path, data)
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write {path}: {exc.strerror}", highlight=False)
        raise typer.Exit(1) from None


@app.command()
def validate(model: Path = MODEL_ARG) -> None:
    """Check a model: schema, references, port budgets, speeds. Exit 0 if valid, 1 if not."""
    m = _fabric(model).model
    out.print(f"{model}: valid ({m.name}, {m.technology})", highlight=False)


@app.command()
def show(model: Path = MODEL_ARG, as_json: bool = typer.Option(False, "--json", help="print JSON")) -> None:
    """Summarise the expanded fabric: switches, nodes, GPUs, NIC ports, cables, port usage."""
    from loom.render.summary import summarize

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
    cap = s["capacity"]
    out.print(f"capacity: {cap['node_facing_ports']} node-facing ports, {cap['used_by_nodes']} nodes, "
              f"{cap['used_by_inter_zone']} inter-zone, {cap['free']} free; {s['racks']} racks")


@app.command("expand")
def expand_cmd(model: Path = MODEL_ARG, out_file: Path = typer.Option(..., "--out", help="JSON file to write")) -> None:
    """Write the port-level fabric as canonical JSON (same model ⇒ same bytes)."""
    from loom.render.fabric_json import fabric_json

    _write(out_file, fabric_json(_fabric(model)))
    out.print(f"wrote {out_file}", highlight=False)


def _route(model: Path, engine: str):
    from loom.routing import RoutingError, route

    fabric = _fabric(model)
    if fabric.technology != "infiniband":
        err.print(f"[red]error:[/red] {model}: routing tables are generated for InfiniBand fabrics; "
                  f"{fabric.name} is {fabric.technology} (RoCE planes get their own engine)", highlight=False)
        raise typer.Exit(1)
    try:
        return fabric, route(fabric, engine)
    except RoutingError as exc:
        err.print(f"[red]error:[/red] {model}: {exc}", highlight=False)
        raise typer.Exit(1) from None


ENGINE_OPT = typer.Option("fattree", "--engine", help="routing engine")


@app.command("route")
def route_cmd(model: Path = MODEL_ARG, out_dir: Path = typer.Option(..., "--out", help="directory to write"),
              engine: str = ENGINE_OPT) -> None:
    """Compute LFTs; write DIR/lfts.dump (OpenSM -U format), DIR/guid2lid and DIR/summary.json."""
    import hashlib

    from loom.render.opensm import guid2lid, lfts_dump

    fabric, tables = _route(model, engine)
    summary = {"fabric": fabric.name, "model": str(model), "engine": engine, "planes": []}
    for t in tables:
        d = out_dir if fabric.planes == 1 else out_dir / f"plane{t.subnet.plane}"
        dump = lfts_dump(t)
        _write(d / "lfts.dump", dump)
        _write(d / "guid2lid", guid2lid(t))
        summary["planes"].append({
            "plane": t.subnet.plane, "dir": str(d), "switches": t.subnet.n, "max_lid": t.subnet.max_lid,
            "ca_ports": len(t.subnet.ca_lids), "lft_entries": int((t.lft != 255).sum()),
            "lfts_sha256": hashlib.sha256(dump.encode()).hexdigest(),
        })
    _write(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    out.print(f"routed {fabric.name} with {engine}: {sum(p['lft_entries'] for p in summary['planes'])} LFT entries "
              f"on {sum(p['switches'] for p in summary['planes'])} switches → {out_dir}", highlight=False)


@app.command()
def check(model: Path = MODEL_ARG, as_json: bool = typer.Option(False, "--json", help="print JSON"),
          engine: str = ENGINE_OPT, ebb_samples: int = typer.Option(200, help="random bisections for eBB")) -> None:
    """Route and check: reachability, deadlock freedom, balance against the lower bound, eBB.

    Exit 0 only when every plane is reachable, deadlock-free and within the balance bound."""
    from loom.checks import check_tables

    fabric, tables = _route(model, engine)
    planes = [check_tables(t, ebb_samples) for t in tables]
    ok = all(p["reachable"] and p["deadlock_free"] and p["balance"]["within_bound"] for p in planes)
    report = {"fabric": fabric.name, "ok": ok, **planes[0]} if len(planes) == 1 else {"fabric": fabric.name, "ok": ok, "planes": planes}
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, default=_np_default) + "\n")
    else:
        for p in planes:
            _print_check(fabric.name, p)
    raise typer.Exit(0 if ok else 1)


def _np_default(o):
    import numpy as np

    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(type(o))


def _print_check(name: str, p: dict) -> None:
    def verdict(ok: bool) -> str:
        return "[green]yes[/green]" if ok else "[red]NO[/red]"

    b, r = p["balance"], p["reachability"]
    out.print(f"[bold]{name}[/bold] plane {p['plane']} ({p['engine']})")
    out.print(f"  reachable:      {verdict(p['reachable'])}  {r['ca_pairs']} CA-to-CA pairs, {r['unreachable_pairs']} unreachable, "
              f"{r['loop_pairs']} looping, max {r['max_hops']} hops, {r['nonminimal_pairs']} non-minimal in-zone")
    for e in r["examples"]:
        out.print(f"    {e}", highlight=False)
    out.print(f"  deadlock-free:  {verdict(p['deadlock_free'])}  {p['deadlock']['channels']} channels, "
              f"{p['deadlock']['dependencies']} dependencies (CA-to-CA only: "
              f"{'free' if p['deadlock']['ca_to_ca_deadlock_free'] else 'LOOP'})")
    if p["cycle"]:
        out.print("  credit loop:")
        for hop in p["cycle"]:
            out.print(f"    {hop}", highlight=False)
    out.print(f"  balance:        {verdict(b['within_bound'])}  max {b['max_dest_per_up_port']} destinations per leaf up-port, "
              f"lower bound {b['lower_bound']}, min {b['min_dest_per_up_port']}")
    for role, f in b["per_role"].items():
        out.print(f"    {role:<11} max {f['max_dest_per_up_port']} / bound {f['lower_bound']}")
    if b["spine_up"]:
        out.print(f"    spine up    max {b['spine_up']['max_dest_per_up_port']} / bound {b['spine_up']['lower_bound']}")
    if b["inter_zone"]:
        iz = b["inter_zone"]
        out.print(f"    inter-zone  max {iz['max_dest_per_link']} / bound {iz['lower_bound']} over {iz['links']} link directions")
    out.print(f"  eBB:            {p['ebb']}  " + ", ".join(f"{z} {v}" for z, v in p["ebb_by_zone"].items()))


if __name__ == "__main__":
    app()
