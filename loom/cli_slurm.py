"""`loom slurm`: Slurm's topology files from the model (registered in `loom.cli`)."""

from __future__ import annotations

from pathlib import Path

import typer

from loom.cli_options import MODEL_ARG


def slurm_cmd(model: Path = MODEL_ARG,
              out_dir: Path | None = typer.Option(None, "--out", metavar="DIR", help="directory (default: out/<fabric>/slurm)")) -> None:
    """Write DIR/topology.conf (topology/tree: leaves with their nodes, pods, zones) and
    DIR/topology.yaml (Slurm 25.05+: a `tree` and a `block` topology), from the model and its
    lock file, before a single cable exists.  Both are checked against Slurm's format first;
    nothing is written if they fail.

    Exit 0 written; 1 an invalid model or topology; 2 usage error."""
    from loom.checks.slurm import check_topology_yaml
    from loom.cli import _fabric, _print_error, _write_under, err, out
    from loom.render.slurm import SlurmError, slurm_topology, topology_conf, topology_yaml

    fabric = _fabric(model)
    try:
        t = slurm_topology(fabric)
    except SlurmError as exc:
        _print_error(f"{model}: {exc}")
        raise typer.Exit(1) from None
    conf, text = topology_conf(t), topology_yaml(t)
    scheduled = {n for s in t.switches for n in s.nodes}
    problems = check_topology_yaml(text, scheduled)
    if problems:
        _print_error(f"{model}: the Slurm topology would be invalid (nothing written)")
        for p in problems:
            err.print(f"  {p}", highlight=False, markup=False)
        err.print("  fix: set slurm.block_sizes to the smallest block's node count, then 2×, 4×, ... of it "
                  "(or leave it out for that default)", highlight=False, markup=False)
        raise typer.Exit(1)
    out_dir = out_dir or Path("out") / fabric.name / "slurm"
    _write_under(out_dir, "topology.conf", conf)
    _write_under(out_dir, "topology.yaml", text)
    leaves = sum(1 for s in t.switches if s.nodes)
    out.print(f"wrote {out_dir}/topology.conf and topology.yaml: {len(t.switches)} switches ({leaves} with nodes), "
              f"{len(scheduled)} nodes, {len(t.blocks)} blocks of sizes {list(t.block_sizes)}; "
              f"{len(t.left_out)} nodes left out (roles outside slurm.roles / slurm.own_switch)",
              highlight=False, markup=False)
