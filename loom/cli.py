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

from loom.expand import Fabric, expand
from loom.model import Model, ModelError, load_model

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Loom: declarative AI-cluster fabrics.")
err = Console(stderr=True, soft_wrap=True)
out = Console()

MODEL_ARG = typer.Argument(..., help="model file (YAML), e.g. topology/fire-flyer-2.yaml")


def _load(path: Path) -> Model:
    try:
        return load_model(path)
    except ModelError as exc:
        err.print(f"[red]error:[/red] {path} is not a valid model", highlight=False)
        for p in exc.problems:
            err.print(p.render(str(path)), highlight=False, markup=False)
        raise typer.Exit(1) from None


def _fabric(path: Path) -> Fabric:
    return expand(_load(path))


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
    m = _load(model)
    expand(m)
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


if __name__ == "__main__":
    app()
