"""`loom ranks`: collective-aware rank maps (registered in `loom.cli`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from loom.cli_options import FORMAT_OPT, JSON_OPT, json_wanted


def ranks_cmd(model: Path = typer.Argument(..., help="model file (YAML), e.g. topology/eflops-bigraph.yaml"),
              job: str = typer.Option(..., "--job", help="the job's nodes: a Slurm hostlist (srv[00-15]) or `all`"),
              collective: str = typer.Option("ring", "--collective", help="ring, halving-doubling or tree"),
              out_dir: Path | None = typer.Option(None, "--out", metavar="DIR", help="directory to write hostfile, rankfile, ranks.tsv, ranks.json into"),
              fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """Rank order for a job and a collective that keeps each step's pairs on the fewest links:
    EFLOPS's HDRM for halving-doubling on a BiGraph, leaf-contiguous orders on fat trees.
    Reports each step's link congestion (most flows on one link, switch hops) for the mapping
    and for the naive order (nodes as given).  Plane 0's endpoints are the ranks.

    Exit 0 done; 1 an invalid model, or a job the model cannot place (unknown nodes, bad hostlist);
    2 usage error."""
    import numpy as np

    from loom.checks.congestion import collective_load
    from loom.cli import _fabric, _print_error, _route, _write_under, out
    from loom.render.hostlist import HostlistError, expand
    from loom.render.ranks import RankError, endpoints, rank_files, rank_order, steps

    as_json = json_wanted(fmt, as_json)
    fabric = _fabric(model)
    try:
        names = [n.name for n in fabric.nodes] if job == "all" else expand(job)
        _, tables = _route(model, "auto")
        t = tables[0]
        eps = endpoints(fabric, t.subnet, names)
        order, method = rank_order(t.subnet, eps, collective)
        plan = steps(collective, len(eps))
    except (HostlistError, RankError) as exc:
        _print_error(exc)
        raise typer.Exit(1) from None
    mapped = collective_load(t, np.array([eps[i].lid for i in order]), plan)
    naive = collective_load(t, np.array([e.lid for e in eps]), plan)
    report = {"fabric": fabric.name, "collective": collective, "method": method, "ranks": len(eps),
              "steps": [{"step": m["step"], "pairs": m["pairs"], "mapped": {k: m[k] for k in m if k not in ("step", "pairs")},
                         "naive": {k: n[k] for k in n if k not in ("step", "pairs")}} for m, n in zip(mapped, naive)]}
    if out_dir is not None:
        for name, text in rank_files(eps, order).items():
            _write_under(out_dir, name, text)
        _write_under(out_dir, "ranks.json", json.dumps(report, indent=1) + "\n")
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return
    out.print(f"{fabric.name}: {collective} over {len(eps)} ranks, {method} order"
              + (f" → {out_dir}/hostfile, rankfile, ranks.tsv, ranks.json" if out_dir else ""), highlight=False)
    out.print("  step  pairs   most flows on a link (mapped / naive)   switch hops (mapped / naive)")
    for s in report["steps"]:
        out.print(f"  {s['step']:>4}  {s['pairs']:>5}   {s['mapped']['max_flows_per_link']:>18} / {s['naive']['max_flows_per_link']:<18}"
                  f"   {s['mapped']['switch_hops']:>11} / {s['naive']['switch_hops']}", highlight=False)
