"""`loom health`: link health from the port counters of both ends of every cable (issue 39), as
a report, as JSON, or as a CSV ticket a technician takes to the racks."""

from __future__ import annotations

from pathlib import Path

import typer

from .common import (INVENTORY_OPT, JSON_OPT, MODEL_ARG, SSH_CONFIG_OPT, TARGET_OPT, backend_of, format_of,
                     load_model, out, phase, refusals, write)


def health(model: Path = MODEL_ARG, target: str = TARGET_OPT, inventory: Path | None = INVENTORY_OPT,
           ssh_config: Path | None = SSH_CONFIG_OPT,
           interval: float = typer.Option(10.0, "--interval", min=0, max=3600, help="seconds between the two readings "
                                          "error rates are taken from"),
           fmt: str = typer.Option("text", "--format", help="text, json, or csv (a ticket: one row per link that is not "
                                   "healthy, both ends as rack/U/device/port, cable part and length, what was seen)"),
           as_json: bool = JSON_OPT,
           out_file: Path | None = typer.Option(None, "--out", metavar="FILE", help="write the report here instead of "
                                                "printing it")) -> None:
    """Read PortCounters (and PortCountersExtended), state, active width and speed of both ends
    of every cable twice, `--interval` seconds apart, and judge each link (docs/health.md):
    failing (error rates at the model's `health.limits` failing level: `loom watch` drains
    it), degraded (errors rising, a saturated counter, a width or speed below its cable's),
    down, unknown (an end did not answer), healthy.

    Exit 0 every link healthy; 1 a link is not, or the target cannot be read; 2 usage error."""
    from loom.checks.link_health import ticket_csv, worst

    kind = format_of(fmt, as_json, ("text", "json", "csv"))
    fabric = load_model(model)
    backend = backend_of(fabric)
    plan = None
    if kind == "csv":  # the ticket's ends, parts and lengths: refused before anything is read if the model has none
        from .cabling import cable_plan_of

        plan = cable_plan_of(model, fabric)
    with refusals(model):
        t = backend.target(fabric, target, inventory, ssh_config)
        links, seconds = phase(f"two readings {interval:g}s apart", backend.link_health, model, fabric, t, interval)
    bad = [h for h in links if h.verdict != "healthy"]
    if plan is not None:
        text = ticket_csv(bad, plan)
    elif kind == "json":
        import json

        text = json.dumps({"fabric": fabric.name, "verdict": worst(links), "links": len(links), "reading_s": seconds,
                           "counts": _counts(links), "unhealthy": [h.as_json() for h in bad]}, indent=2) + "\n"
    else:
        text = _text(fabric.name, links, bad, seconds)
    if out_file:
        write(out_file, text)
    else:
        out.print(text, end="", highlight=False, markup=False, soft_wrap=True)
    raise typer.Exit(1 if bad else 0)


def _counts(links) -> dict[str, int]:
    from loom.checks.link_health import VERDICTS

    return {v: sum(h.verdict == v for h in links) for v in VERDICTS}


def _text(name: str, links, bad, seconds: float) -> str:
    """A summary line, then the links that are not healthy, worst first."""
    from loom.checks.link_health import VERDICTS

    counts = ", ".join(f"{n} {v}" for v, n in _counts(links).items() if n)
    lines = [f"{name}: {len(links)} links read in {seconds:.1f}s: {counts}"]
    for h in sorted(bad, key=lambda h: (-VERDICTS.index(h.verdict), h.cable_id)):
        lines.append(f"  {h.verdict:8} {h.cable_id}: " + "; ".join(h.seen))
    return "\n".join(lines) + "\n"
