"""What one fuzz case runs: a model file through every stage a user's command would take it.

load (validate) → expand → route → check → render (OpenSM files, summary, canonical JSON,
inventory, QoS, RoCE switch and host configs of a few devices, cabling sheet).  A case ends in
one of three ways: `ok` (every stage ran), `refused` (a clean `ModelError` / `RoutingError`, what
the CLI prints as an error with exit 1), or an exception of any other kind, which is a bug.
Every rendered file name is checked to stay under an output directory.
"""

from __future__ import annotations

from pathlib import Path

from loom.model import ModelError
from loom.model.names import inside
from loom.routing import RoutingError

REFUSALS = (ModelError, RoutingError)
OUT = Path("/nonexistent-loom-fuzz-out")  # never written: `inside` only resolves paths
#: The inventory is a YAML file per host (fire-flyer-2: 1,411 files in 0.35 s); fabrics up to
#: this size get one, larger ones would spend the case's time budget dumping YAML.
INVENTORY_NODES = 24
#: Fabrics with more NIC ports are validated, expanded and summarised only (routing the 32,768-GPU
#: fabric takes half a minute: a few such cases would take the whole budget of a campaign).
ROUTE_PORTS = 5000
#: ... and subnets of more table cells (switches × LIDs) likewise: Loom accepts up to 2^28 (the LID-limit
#: fabric, ~40 s and ~3 GB: `make bench-routing` measures it), beyond a case's time and memory caps.
ROUTE_CELLS = 1 << 25


def _under(rel: str) -> None:
    inside(OUT, rel)  # raises PathEscape (a bug: names are checked at load) if rel climbs out


def run_pipeline(path: Path) -> str:
    """Run one model file through the pipeline; return the last stage reached ("ok" when all)."""
    from loom.checks import check_tables
    from loom.expand import load_fabric
    from loom.qos import plan_qos
    from loom.render.fabric_json import fabric_json
    from loom.render.inventory import inventory
    from loom.render.opensm import guid2lid, lfts_dump
    from loom.render.summary import summarize
    from loom.routing import route

    fabric = load_fabric(path)
    summarize(fabric)
    fabric_json(fabric)
    if len(fabric.nodes) <= INVENTORY_NODES:
        for rel in inventory(fabric):
            _under(rel)
    if len(fabric.ports) > ROUTE_PORTS or _cells(fabric) > ROUTE_CELLS:
        return "ok"
    _render_slurm(fabric)
    tables = route(fabric)
    qos = plan_qos(fabric.model)
    for t in tables:
        check_tables(t, ebb_samples=2, qos=qos)
        if fabric.technology == "infiniband":
            lfts_dump(t)
            guid2lid(t)
    if qos is not None:
        from loom.render.opensm_qos import opensm_qos_conf

        opensm_qos_conf(fabric.name, qos)
    if fabric.technology == "ethernet":
        _render_roce(fabric, tables)
    if fabric.model.cabling is not None:
        from loom.model.catalogue import load_catalogue
        from loom.render.cabling import cable_plan, to_csv

        to_csv(cable_plan(fabric, load_catalogue(path, fabric.model.cabling.catalogue)))
    return "ok"


def _cells(fabric) -> int:
    """Forwarding-table cells of the fabric's largest subnet (switches × LIDs, one LID per port)."""
    from loom.routing import subnets

    return max((sn.n * (sn.max_lid + 1) for sn in subnets(fabric)), default=0)


def _render_slurm(fabric) -> None:
    """Slurm's topology files: what `loom slurm` writes must pass the format check (or be
    refused with a SlurmError naming the fix)."""
    from loom.checks.slurm import check_topology_yaml
    from loom.render.slurm import SlurmError, slurm_topology, topology_conf, topology_yaml

    try:
        t = slurm_topology(fabric)
    except SlurmError:
        return
    topology_conf(t)
    problems = check_topology_yaml(topology_yaml(t))
    if problems and not fabric.model.slurm.block_sizes:  # the default block sizes must always be valid
        raise AssertionError(f"loom slurm would write an invalid topology.yaml: {problems[:3]}")


def _render_roce(fabric, tables) -> None:
    """Switch configs of the first and last switch of each plane, host configs of two nodes, and
    the lossless cross-check of what was rendered (renderers must agree with any valid model)."""
    import json

    from loom.checks.roce_qos import check_roce_qos, lower_part_nics
    from loom.render.roce import RoceConfigs

    ends = {t.subnet.switch(row) for t in tables for row in {0, t.subnet.n - 1}}
    rc = RoceConfigs(fabric, tables, {s.index for s in ends})
    dbs = {}
    for s in ends:
        files = rc.switch(s)
        for fname in files:
            _under(f"switches/{s.name}/{fname}")
        dbs[s.name] = json.loads(files["config_db.json"])
    cabled = {p.node for p in fabric.ports}
    hosts = {n.name: rc.host(n.index) for n in {fabric.nodes[0], fabric.nodes[-1]} if n.index in cabled}
    for name, files in hosts.items():
        for fname in files:
            _under(f"hosts/{name}/{fname}")
    r = check_roce_qos(rc.qos, rc.lossless, dbs, hosts, lower_part_nics(fabric))
    if not r["ok"]:
        raise AssertionError(f"the rendered lossless configuration disagrees with the model: {r['problems'][:3]}")
