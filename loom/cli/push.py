"""`loom sim|watch|plan|apply` (and `loom show PLAN`): the push side, on the simulated fabric or
real targets, through the backend of the fabric's technology (`loom.fabrics`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from loom.expand import Fabric

from .common import (CLOCK, END_A, END_B, escape, FORMAT_OPT, INVENTORY_OPT, JSON_OPT, MODEL_ARG, SSH_CONFIG_OPT, TARGET_OPT, UI,
                     backend_of, err, fail, input_error, json_wanted, load_model, out, phase, progress, refusals, write)

sim_app = typer.Typer(no_args_is_help=True, help="The embedded simulated fabric: ibsim + OpenSM for InfiniBand, "
                      "FRR in network namespaces for Ethernet planes.")
link_app = typer.Typer(no_args_is_help=True, help="Link events in the simulated fabric: pull a cable, put it back.")
sim_app.add_typer(link_app, name="link")


@sim_app.command("up")
def sim_up(model: Path = MODEL_ARG) -> None:
    """Start ibsim with the fabric and OpenSM on its SM node; wait for SUBNET UP (idempotent).
    Holds the fabric lock; resolves an interrupted apply first and loads only checked tables.
    An Ethernet model runs live instead: FRR per switch and every host in network namespaces,
    switches on the configuration loom applied last (else interfaces only); models too big to
    run live are refused with the size they need.

    Exit 0 up; 1 it did not come up (the message names the log)."""
    fabric = load_model(model, marked=False)
    with refusals(model):
        backend_of(fabric).sim_up(model, fabric, UI)


@sim_app.command("down")
def sim_down(model: Path = MODEL_ARG, force: bool = typer.Option(False, "--force",
             help="stop even while an apply (or another lifecycle command) holds the fabric lock")) -> None:
    """Stop OpenSM and ibsim of the fabric (an Ethernet model's FRR daemons and namespaces).
    Refuses while an apply runs unless --force.

    Exit 0 stopped (or nothing ran); 1 refused (an apply holds the lock)."""
    fabric = load_model(model, marked=False)
    where = _no_sim_state(fabric)  # before: taking the fabric lock makes the directory
    with refusals(model):
        backend_of(fabric).sim_down(fabric, force, UI)
    if where:
        progress(where)


@sim_app.command("status")
def sim_status(model: Path = MODEL_ARG, fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """Show whether the fabric's ibsim and OpenSM run and the subnet is up (an Ethernet model:
    whether every FRR daemon and namespace of the live simulation runs). Exit 0 if up."""
    as_json = json_wanted(fmt, as_json)
    fabric = load_model(model, marked=False)
    with refusals(model):  # a damaged journal of an interrupted apply is named, not a traceback
        up = backend_of(fabric).sim_status(fabric, as_json, UI)
    if not as_json and (where := _no_sim_state(fabric)):
        progress(where)
    raise typer.Exit(0 if up else 1)


def _no_sim_state(fabric: Fabric) -> str:
    """Where the simulation's state was looked for, if nothing is there (`loom.push.state.no_state`):
    run from another directory, `sim down` and `sim status` said only that nothing runs."""
    from loom.push.state import no_state, sim_state_dir

    return no_state(sim_state_dir(fabric.name))


def _link_event(model: Path, a: str, b: str | None, up: bool) -> None:
    from loom.expand.failures import FailureSpecError, parse_link

    fabric = load_model(model, marked=False)
    try:
        cables = parse_link(fabric, a, b)
    except FailureSpecError as exc:
        raise input_error(exc, 2) from None
    with refusals(model):
        changed = backend_of(fabric).link_event(model, fabric, cables, up, UI)
    word = "up" if up else "down"
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


def watch(model: Path = MODEL_ARG, target: str = TARGET_OPT, inventory: Path | None = INVENTORY_OPT,
          ssh_config: Path | None = SSH_CONFIG_OPT,
          interval: float = typer.Option(5.0, "--interval", min=0.2, help="discover at least this often (seconds); "
                                         "OpenSM's sweeps trigger a discovery at once"),
          hold_down: float = typer.Option(10.0, "--hold-down", min=0, help="a cable that comes back counts as down "
                                          "until it has stayed up this long (seconds)"),
          duration: float | None = typer.Option(None, "--for", min=0, help="stop after this many seconds (default: "
                                                "until Ctrl-C / SIGTERM)"),
          health_interval: float = typer.Option(3.0, "--health-interval", min=0, help="read every cable's port counters "
                                                "this often (seconds) and drain links that fail (docs/health.md); 0: never"),
          metrics: str | None = typer.Option(None, "--metrics", metavar="HOST:PORT", help="serve Prometheus metrics "
                                             "here, e.g. 127.0.0.1:9464 (link health, error rates, destinations per "
                                             "port, last reroute)")) -> None:
    """Follow the fabric beside OpenSM: when cables or switches go down, apply the minimal-churn
    reroute (checked, through the same lock, journal and read-back as apply); when they are
    back and stable, return to the design tables; drain links whose port counters say they are
    failing and return them when clean (docs/health.md).  Every event goes to the screen and to
    watch.log in the fabric's state directory, with the time from detection to verified tables.

    Exit 0 when stopped (--for, Ctrl-C, SIGTERM); 1 when the target cannot be reached."""
    import signal
    import time

    from loom.push.errors import PlanError, TargetError

    fabric = load_model(model)
    backend = backend_of(fabric)
    with refusals(model):
        t = backend.target(fabric, target, inventory, ssh_config)
        hooks = [_print_event]
        w = backend.watcher(model, fabric, t, hold_down, lambda e: [h(e) for h in hooks], health_interval or None)
        server = None
        if metrics:
            try:
                collector, server = backend.serve_metrics(w, metrics)
            except (ValueError, OSError) as exc:
                raise input_error(exc if isinstance(exc, ValueError) else f"--metrics {metrics}: {exc}", 2) from None
            hooks.insert(0, collector.count)
            progress(f"metrics at http://{metrics}/metrics")
    stop = [False]
    end = time.monotonic() + duration if duration is not None else None

    def halt(signum, _frame) -> None:
        stop[0] = True

    # Ctrl-C and SIGTERM end the watch cleanly; the handlers before are put back (a command run
    # in-process, as the tests do, would otherwise leave its caller's SIGTERM caught)
    before = {sig: signal.signal(sig, halt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        progress(f"watching {fabric.name} ({t.kind}): discovery at least every {interval:g}s and on every OpenSM sweep, "
                 f"hold-down {hold_down:g}s; log in {t.dir / 'watch.log'}")
        w.run(interval, until=lambda: stop[0] or (end is not None and time.monotonic() >= end),
              ready=lambda: progress(f"first discovery done: {len(w.down)} cables routed around; watching"))
    except (PlanError, TargetError) as exc:
        fail(exc)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        if server is not None:
            server.shutdown()
            server.server_close()
    progress("watcher stopped" + (f"; the fabric is routed around {', '.join(sorted(map(w.fabric.cable_id, w.down)))}"
                                   if w.down else ""))


def _print_event(e) -> None:
    took = ", ".join(f"{k} {v:.2f}s" for k, v in e.seconds.items() if k != "total")
    what = {"down": "down", "up": "back"}.get(e.kind, e.kind)
    # no cable changed: a new watcher found tables in force that are not the ones for what it sees
    cables = ", ".join(e.changed) or "the tables in force were not loom's for the fabric as it stands"
    out.print(f"{e.detected} {what}: {cables} → {e.message} ({e.seconds.get('total', 0):.2f}s from "
              f"detection: {took})", highlight=False, markup=False)


def plan(model: Path = MODEL_ARG, out_file: Path | None = typer.Option(None, "--out", metavar="FILE", help="file to save the plan to as well (it is always saved as last-plan.json in the fabric's state directory)"),
         target: str = TARGET_OPT, inventory: Path | None = INVENTORY_OPT, ssh_config: Path | None = SSH_CONFIG_OPT,
         fmt: str = FORMAT_OPT, as_json: bool = JSON_OPT) -> None:
    """Route, check, read the live tables (and the standbys' files) and show what apply would change
    (`--format json`: the plan without its tables, as `loom show PLAN --format json` prints it).
    An Ethernet model: per switch, FRR's diff of the rendered configuration against the running
    one (vtysh) and the kernel FIB against the routes the model wants.

    Exit 0 = no changes, 2 = changes, 1 = error (Terraform's convention)."""
    as_json = json_wanted(fmt, as_json)
    fabric = load_model(model)
    backend = backend_of(fabric)
    with refusals(model):
        d = backend.target(fabric, target, inventory, ssh_config)
        fabric = backend.prepare_plan(model, fabric, UI, d)  # InfiniBand: refuses fabrics no engine routes, first
    plan_on(backend, d, model, fabric, out_file, as_json)


def plan_on(backend, d, model: Path, fabric: Fabric, out_file: Path | None, as_json: bool = False) -> None:
    """Make the plan on target `d` (`loom.pipeline.plan`: settle, plan, save as last-plan.json),
    save it to --out too, show it (`as_json`: its summary without the tables); exit 2 if it
    changes anything, else 0."""
    from loom import pipeline
    from loom.push.packing import plan_json

    with refusals(model):
        p = pipeline.plan(model, fabric, d, progress, phase)
    if out_file:
        write(out_file, plan_json(p))
    if as_json:
        from loom.render.plan_report import summary_json

        sys.stdout.write(summary_json(p))
    else:
        backend.print_plan(UI, p, out_file or d.dir / "last-plan.json")
    raise typer.Exit(2 if backend.has_changes(p) else 0)


def show_plan(path: Path, as_json: bool, entries: bool, switch: str | None = None, moved: bool = False) -> None:
    """`loom show PLAN`: a saved plan of either technology, its shape checked by its backend;
    its entries narrowed by `--switch GLOB` / `--moved` (`loom.render.plan_report.select_entries`)."""
    from loom.fabrics import backend_of_plan
    from loom.push.planfile import content_digest, read_plan
    from loom.render.plan_report import EntryFilterError, select_entries, summary_json

    with refusals():
        p = read_plan(path)
        backend = backend_of_plan(p)
        backend.check_shape(p, path)
    if p.get("plan_sha256") != content_digest(p):
        err.print(f"warning: {path} was modified after loom made it (plan_sha256 does not match its content): "
                  "what follows is not loom's plan, and `loom apply` refuses it", highlight=False, markup=False)
    else:
        for note in backend.review(p):
            err.print(f"warning: {path}: {note}", highlight=False, markup=False)
    chosen = None
    if entries:
        every = backend.plan_entries(p)
        try:
            chosen = select_entries(every, switch, moved)
        except EntryFilterError as exc:
            raise input_error(exc, 2) from None
    if as_json:
        sys.stdout.write(summary_json(p, chosen))
        return
    out.print(f"plan for {p['fabric']} made {p['created']} by {p['user']} from {p['model']} (target {p['target']['kind']})",
              highlight=False, markup=False)
    backend.print_plan(UI, p, path)
    if chosen is not None:
        lines = backend.entry_lines(chosen)
        out.print("\n".join(lines) if lines else backend.no_entries, highlight=False, markup=False)
        if switch is not None or moved:
            said = " and ".join(x for x in (f"on switches matching {switch!r}" if switch is not None else "",
                                             "that move a route" if moved else "") if x)
            out.print(f"{len(chosen)} of {len(every)} entries: those {said}", highlight=False, markup=False)


def apply(plan_file: Path | None = typer.Argument(None, help="plan.json (without it: --model MODEL, that model's last plan)"),
          model: Path | None = typer.Option(None, "--model", help="with no plan file: the model whose last plan to apply"),
          target: str = typer.Option("sim", "--target", help="with --model: the target whose last plan to apply (sim, ssh)"),
          keep_live: bool = typer.Option(False, "--keep-live", help="refuse to overwrite changes made outside loom "
                                         "(by default the model wins over hand edits)"),
          from_edited: bool = typer.Option(False, "--from-edited-plan", help="push a plan whose tables differ from "
                                           "what its model routes (edited after `loom plan`, checks passed); the "
                                           "next `loom plan` reports the difference"),
          timeout: float | None = typer.Option(None, "--timeout", min=1, help="seconds OpenSM's push and the read-back "
                                               "(InfiniBand, default 180) or the wait for every BGP session and FIB "
                                               "(Ethernet, default 120; a large fabric's BGP may need more) may take "
                                               "before the apply gives up and restores")) -> None:
    """Apply a plan: lock, check it (digests, reachability, loops, deadlock per VL, QoS), refuse if
    stale, write (journalled), push, read back and verify; restore on failure or SIGINT/SIGTERM.
    An Ethernet plan: frr-reload.py per switch, then every BGP session established and every
    FIB as intended; the previous configurations are reloaded on failure.

    Exit 0 applied and verified (or nothing to change); 1 refused or failed (the previous tables are restored); 128+N after signal N."""
    from loom import pipeline
    from loom.fabrics import Unsupported
    from loom.push.errors import Interrupted, PlanError, TargetError
    from loom.push.planfile import read_plan
    from loom.push.state import no_state, state_dir
    from loom.render.progress_bar import bars

    if plan_file is None:
        if model is None:
            err.print("[red]error:[/red] give a plan file, or --model MODEL to apply its last plan")
            raise typer.Exit(1)
        name = load_model(model).name
        d = state_dir(name, target)
        if where := no_state(d, target):
            fail(f"no last plan of {name} to apply: {where}")
        plan_file = d / "last-plan.json"
    try:
        p = read_plan(plan_file)
        with bars(err), CLOCK.timing("apply"):
            res = pipeline.apply(p, plan_file, progress, keep_live, from_edited, timeout)
    except (PlanError, TargetError, Unsupported) as exc:
        fail(exc)
    except Interrupted as exc:
        err.print(f"[red]apply interrupted by signal {exc.signum}:[/red] {escape(exc.outcome)}", highlight=False)
        raise typer.Exit(128 + exc.signum) from None
    CLOCK.split("apply", "lock, checks, journal", res.phases)
    for name, secs in res.phases.items():
        err.print(f"  {name}: {secs:.2f}s", highlight=False)
    if res.ok:
        out.print(f"[green]{escape(res.message)}[/green]", highlight=False)
    else:  # the message may quote what a switch printed (a neighbour's description)
        err.print(f"[red]{escape(res.message)}[/red]", highlight=False)
    raise typer.Exit(0 if res.ok else 1)
