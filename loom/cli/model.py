"""`loom validate|show|expand|lock|configs|inventory|host`: the model and what is rendered
straight from it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from .common import (FORMAT_OPT, JSON_OPT, MODEL_ARG, backend_of, err, escape, input_error, json_wanted, load_model, out,
                     print_error, print_model_error, refusals, route_model, write, write_under)


def validate(model: Path = MODEL_ARG) -> None:
    """Check a model: schema, references, port budgets, speeds, and every whole-model rule a
    later command applies (the cable catalogue its `cabling:` names, and that a medium of it
    reaches every run). Exit 0 if valid, 1 if not."""
    from .cabling import cable_plan_of

    fabric = load_model(model)
    m = fabric.model
    if m.cabling is not None:
        cable_plan_of(model, fabric)
    out.print(f"{model}: valid ({m.name}, {m.technology})", highlight=False, markup=False)


def show(model: Path = typer.Argument(..., help="model file (YAML), or a plan file saved by `loom plan` (JSON)"),
         fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT,
         entries: bool = typer.Option(False, "--entries", help="a plan: every LFT entry it changes"),
         switch: str | None = typer.Option(None, "--switch", metavar="GLOB", help="a plan's entries: only on "
                                           "switches matching GLOB, e.g. 'z0-leaf*' (implies --entries)"),
         moved: bool = typer.Option(False, "--moved", help="a plan's entries: only routes that change port on a "
                                    "switch that had them (not new switches' or new destinations' tables; implies --entries)")) -> None:
    """Summarise the expanded fabric: switches, nodes, GPUs, NIC ports, cables, port usage, free
    ports per leaf; or a saved plan: what it changes (`--entries`: each entry, `LID 0x0012
    (name): port 21 → 24`; `--switch`, `--moved` narrow them for a review).
    Exit 0; 1 for an invalid model or plan; 2 for a usage error or a missing file."""
    from loom.render.plan_report import is_plan
    from loom.render.summary import summarize

    as_json = json_wanted(fmt, as_json)
    if is_plan(model):
        from .push import show_plan

        return show_plan(model, as_json, entries or moved or switch is not None, switch, moved)
    if switch is not None or moved or entries:
        raise input_error(f"{model}: --entries, --switch and --moved are for a saved plan (plan.json), not a model", 2)
    s = summarize(load_model(model))
    if as_json:
        sys.stdout.write(json.dumps(s, indent=2) + "\n")
        return
    from rich.table import Table

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
    out.print(f"capacity: {cap['node_facing_ports']} node-facing ports, {cap['used_by_nodes']} used by nodes, "
              f"{cap['used_by_inter_zone']} inter-zone, {cap['free']} free; {s['racks']} racks")
    free = list(cap["free_by_leaf"].items())
    if free:
        out.print(f"free node-facing ports on {len(free)} leaves: " + ", ".join(f"{name} {n}" for name, n in free[:SHOWN_LEAVES])
                  + (f", … {len(free) - SHOWN_LEAVES} more leaves (--json lists all)" if len(free) > SHOWN_LEAVES else ""),
                  highlight=False, markup=False)


SHOWN_LEAVES = 24  # leaves with free ports `loom show` names before "… N more"


def expand_cmd(model: Path = MODEL_ARG, out_file: Path = typer.Option(..., "--out", metavar="FILE", help="JSON file to write")) -> None:
    """Write the port-level fabric as canonical JSON (same model ⇒ same bytes).

    Exit 0 written; 1 invalid model or unwritable file; 2 usage error."""
    from loom.render.fabric_json import fabric_json

    write(out_file, fabric_json(load_model(model)))
    out.print(f"wrote {out_file}", highlight=False, markup=False)


def lock_cmd(model: Path = MODEL_ARG,
             check: bool = typer.Option(False, "--check", help="exit 1 if the lock file and the model disagree "
                                        "(or the lock was edited by hand); write nothing"),
             relayout: bool = typer.Option(False, "--relayout", help="start over: place everything by policy, "
                                           "ignoring the lock (devices may move, LIDs may be renumbered)")) -> None:
    """Write or update MODEL's lock file (`<model>.lock.json` next to it): every device's rack and RU,
    every NIC port's switch port, every GUID and LID.  Existing things keep their place; new
    ones take free places; removed ones free theirs.

    Exit 0 written or (with --check) current; 1 stale or invalid; 2 usage error."""
    from loom.expand import load_fabric
    from loom.model import ModelError
    from loom.expand import lock_path, read_lock
    from loom.expand.asbuilt import idle_marks
    from loom.expand.lockfile import differences, digest, lock_of, lock_text

    if check and relayout:
        err.print("[red]error:[/red] --check and --relayout exclude each other")
        raise typer.Exit(2)
    path = lock_path(model)

    def refuse(problems: list[str]) -> None:
        for x in problems:
            err.print(f"[red]{escape(str(path))}:[/red] {escape(x)}", highlight=False)
        raise typer.Exit(1)

    try:
        old = read_lock(path, signed=False)  # --check names a hand edit itself; a rewrite accepts it
        if check and old is None:
            refuse([f"no lock file; fix: run `loom lock {model}` and commit {path}"])
        if check and old.digest != digest(old):
            refuse(["the file was edited by hand (its digest does not match); fix: revert it "
                    f"(`git checkout -- {path}`), or accept the edit with `loom lock {model}`"])
        fabric = load_fabric(model, None if relayout else old, as_built=False)  # every node port, marked down or not
    except ModelError as exc:
        print_model_error(model, exc)
        raise typer.Exit(1) from None
    new = lock_of(fabric, fabric.switch_lid_base)
    if relayout and old is not None:  # what is not a place survives a relayout: NetBox's records, the marks
        new = new.model_copy(update={"assets": old.assets, "as_built": old.as_built, "down": old.down})
    if check:
        problems = [f"{x}; fix: run `loom lock {model}` and commit {path}" for x in differences(old, new)]
        for x in problems:
            err.print(f"[red]{escape(str(path))}:[/red] {escape(x)}", highlight=False)
        if not problems:
            out.print(f"{path}: matches {model}", highlight=False)
        raise typer.Exit(1 if problems else 0)
    before = (set(old.nodes) | set(old.switches)) if old else set()
    after = set(new.nodes) | set(new.switches)
    write(path, lock_text(new))
    out.print(f"wrote {path}: {len(new.switches)} switches, {len(new.nodes)} nodes, {len(new.racks)} racks "
              f"({len(after - before)} added, {len(before - after)} removed{', relaid out' if relayout else ''})",
              highlight=False)
    for name in idle_marks(fabric, new):
        err.print(f"note: the mark {name} ({new.down[name].reason}) covers no cable of the model now, and would take "
                  f"what is cabled there next out of service; `loom mark up {model} {name}` takes it back",
                  highlight=False, markup=False)


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

    fabric = load_model(model)
    with refusals(model):
        backend_of(fabric).configs_allowed(model, fabric)
    static = fabric.model.addressing.routing == "static"  # only pinned routes need the routing tables
    devices = selected(fabric, only)
    rc = RoceConfigs(fabric, route_model(model, "auto", fabric)[1] if static else None,
                     None if only == "*" else {d.index for d in devices if not isinstance(d, int)})
    try:
        with OutputTree(out_dir) as tree, Progress(console=err, transient=True) as bar:
            task = bar.add_task("rendering", total=len(devices))
            for rel_dir, files in rc.files(devices):
                tree.add(rel_dir, files)
                bar.advance(task)
    except PathEscape as exc:
        raise input_error(exc) from None
    except OSError as exc:
        err.print(f"[red]error:[/red] cannot write under {escape(str(out_dir))}: {exc.strerror}", highlight=False)
        raise typer.Exit(1) from None
    out.print(f"wrote configs of {len(devices)} devices ({tree.written} files) under {out_dir}", highlight=False, markup=False)


def inventory_cmd(model: Path = MODEL_ARG, out_dir: Path | None = typer.Option(None, "--out", metavar="DIR",
                  help="directory (default: inventory/<fabric>)")) -> None:
    """Write the Ansible inventory: hosts by role, zone, plane, rack; derived host settings.

    Exit 0 written; 1 invalid model or unwritable directory; 2 usage error."""
    from loom.render.inventory import inventory

    fabric = load_model(model)
    out_dir = out_dir or Path("inventory") / fabric.name
    files = inventory(fabric)
    for rel, text in files.items():
        write_under(out_dir, rel, text)
    out.print(f"wrote {len(files)} inventory files under {out_dir}", highlight=False, markup=False)


host_app = typer.Typer(no_args_is_help=True, help="Host settings: derivation and checks against gathered facts.")


@host_app.command("check")
def host_check(model: Path = MODEL_ARG, host: str = typer.Option(..., "--host", help="node name"),
               facts: Path = typer.Option(..., "--facts", help="directory with nvidia-smi-topo.txt, lspci-vvv.txt, numactl-H.txt"),
               fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """Compare a host's gathered facts with its node type's intent.

    Exit 0 as intended; 1 anything differs (or the model is invalid); 2 usage error or unreadable facts."""
    from loom.host.check import FactsError, check_host, read_facts

    as_json = json_wanted(fmt, as_json)

    fabric = load_model(model)
    if host not in fabric.node_index:
        err.print(f"[red]error:[/red] {escape(str(model))} has no node named {escape(str(host))}", highlight=False)
        raise typer.Exit(2)
    node = fabric.nodes[fabric.node_index[host]]
    try:
        problems = check_host(fabric.model, node.node_type, read_facts(facts))
    except FactsError as exc:
        print_error(exc)
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
