"""`loom slurm|ranks`: what schedulers and collectives need from the fabric — Slurm's topology
files, and rank orders for a job that keep each step of a collective on the fewest links."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from .common import (FORMAT_OPT, JSON_OPT, MODEL_ARG, err, input_error, json_wanted, load_model, out, print_error,
                     route_model, write_under)


def slurm_cmd(model: Path = MODEL_ARG,
              out_dir: Path | None = typer.Option(None, "--out", metavar="DIR", help="directory (default: out/<fabric>/slurm)"),
              discovered: Path | None = typer.Option(None, "--from-discover", metavar="FILE",
                                                     help="draw the leaves from a saved `ibnetdiscover` output (the "
                                                     "fabric as cabled) instead of the model; differences are listed")) -> None:
    """Write DIR/topology.conf (topology/tree: leaves with their nodes, pods, zones) and
    DIR/topology.yaml (Slurm 25.05+: a `tree` and a `block` topology), from the model and its
    lock file, before a single cable exists — or, with --from-discover, from the fabric as
    found; DIR/nodes.conf (`NodeName=` lines: CPUs, sockets, cores, GPUs as Gres, per node
    type); and DIR/tenants.conf (a Slurm partition per tenant partition) when the model has
    tenants.  The topologies are checked against Slurm's format first; nothing is written if
    they fail.

    Exit 0 written; 1 an invalid model or topology; 2 usage error or an unreadable FILE."""
    from loom.checks.slurm import check_topology_yaml
    from loom.render.slurm import SlurmError, slurm_topology, topology_conf, topology_yaml
    from loom.render.slurm_nodes import nodes_conf
    from loom.render.slurm_tenants import tenants_conf

    fabric = load_model(model, marked=discovered is None)  # as `loom discover`: a marked cable found is not extra
    found = None
    try:
        if discovered is None:
            t = slurm_topology(fabric)
        else:
            found = _found(fabric, discovered)
            t = found.topology
    except SlurmError as exc:
        print_error(f"{model}: {exc}")
        raise typer.Exit(1) from None
    conf, text = topology_conf(t), topology_yaml(t)
    scheduled = {n for s in t.switches for n in s.nodes}
    problems = check_topology_yaml(text, scheduled)
    if problems:
        print_error(f"{model}: the Slurm topology would be invalid (nothing written)")
        for p in problems:
            err.print(f"  {p}", highlight=False, markup=False)
        err.print("  fix: set slurm.block_sizes to the smallest block's node count, then 2×, 4×, ... of it "
                  "(or leave it out for that default)", highlight=False, markup=False)
        raise typer.Exit(1)
    out_dir = out_dir or Path("out") / fabric.name / "slurm"
    write_under(out_dir, "topology.conf", conf)
    write_under(out_dir, "topology.yaml", text)
    write_under(out_dir, "nodes.conf", nodes_conf(fabric, scheduled | set(found.missing if found else ())))
    tenants = tenants_conf(fabric, scheduled)
    if tenants:
        write_under(out_dir, "tenants.conf", tenants)
    leaves = sum(1 for s in t.switches if s.nodes)
    out.print(f"wrote {out_dir}/topology.conf, topology.yaml and nodes.conf: {len(t.switches)} switches ({leaves} with nodes), "
              f"{len(scheduled)} nodes, {len(t.blocks)} blocks (BlockSizes={','.join(map(str, t.block_sizes))}); "
              f"{len(t.left_out)} nodes left out (roles outside slurm.roles / slurm.own_switch)"
              + (f"; tenants.conf: {tenants.count('PartitionName=')} tenant partitions" if tenants else ""),
              highlight=False, markup=False)
    if found is not None:
        _say_found(found, discovered)


def _found(fabric, path: Path):
    """The tree of the fabric as found in a saved `ibnetdiscover` output, devices identified as
    `loom discover` identifies them."""
    from loom.checks.cabling import compare
    from loom.expand.live import TopologyError, parse_ibnetdiscover
    from loom.inputs import InputError, read_topology_file
    from loom.render.slurm_found import found_topology

    try:
        live = parse_ibnetdiscover(read_topology_file(path), str(path))
    except (InputError, TopologyError) as exc:
        raise input_error(exc, 2) from None
    return found_topology(fabric, live, compare(fabric, live).mapping, str(path))


def _say_found(found, path: Path) -> None:
    """What differs between the fabric as found and the model, as far as Slurm is concerned."""
    lines = [(found.moved, "node(s) under other leaves than the model says"),
             (found.missing, "scheduled node(s) not found: left out of the topology, still in nodes.conf"),
             (found.unknown, "host(s) found that the model does not have: left out"),
             (found.cut_off, "leaf switch(es) with no link up into their zone: under the root on their own")]
    if not any(xs for xs, _ in lines):
        out.print(f"the fabric as found ({path}) has every scheduled node where the model has it", highlight=False,
                  markup=False)
    for xs, what in lines:
        if xs:
            shown = "; ".join(xs[:5]) + (f"; … {len(xs) - 5} more" if len(xs) > 5 else "")
            out.print(f"  {len(xs)} {what}: {shown}", highlight=False, markup=False)
    if any(xs for xs, _ in lines):
        out.print(f"  (`loom discover --topology {path}` lists every cable that differs)", highlight=False, markup=False)


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
    from loom.model.hostlist import HostlistError, expand
    from loom.render.ranks import RankError, endpoints, rank_files, rank_order, steps

    as_json = json_wanted(fmt, as_json)
    fabric = load_model(model)
    try:
        names = [n.name for n in fabric.nodes] if job == "all" else expand(job)
        _, tables = route_model(model, "auto")
        t = tables[0]
        eps = endpoints(fabric, t.subnet, names)
        order, method = rank_order(t.subnet, eps, collective)
        plan = steps(collective, len(eps))
    except (HostlistError, RankError) as exc:
        print_error(exc)
        raise typer.Exit(1) from None
    mapped = collective_load(t, np.array([eps[i].lid for i in order]), plan)
    naive = collective_load(t, np.array([e.lid for e in eps]), plan)
    report = {"fabric": fabric.name, "collective": collective, "method": method, "ranks": len(eps),
              "steps": [{"step": m["step"], "pairs": m["pairs"], "mapped": {k: m[k] for k in m if k not in ("step", "pairs")},
                         "naive": {k: n[k] for k in n if k not in ("step", "pairs")}} for m, n in zip(mapped, naive)]}
    if out_dir is not None:
        for name, text in rank_files(eps, order).items():
            write_under(out_dir, name, text)
        write_under(out_dir, "ranks.json", json.dumps(report, indent=1) + "\n")
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return
    out.print(f"{fabric.name}: {collective} over {len(eps)} ranks, {method} order"
              + (f" → {out_dir}/hostfile, rankfile, ranks.tsv, ranks.json" if out_dir else ""), highlight=False)
    out.print("  step  pairs   most flows on a link (mapped / naive)   switch hops (mapped / naive)")
    for s in report["steps"]:
        out.print(f"  {s['step']:>4}  {s['pairs']:>5}   {s['mapped']['max_flows_per_link']:>18} / {s['naive']['max_flows_per_link']:<18}"
                  f"   {s['mapped']['switch_hops']:>11} / {s['naive']['switch_hops']}", highlight=False)
