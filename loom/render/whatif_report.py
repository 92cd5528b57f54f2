"""`loom whatif` for a reader: verdicts, churn beside a full recompute, the leaves that lose bandwidth."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

SHOWN = 12  # leaves listed before "… N more"


def _verdict(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


def print_outcomes(out: Console, fabric: str, failures: list[str], outcomes, opensm: dict) -> None:
    out.print(f"[bold]{escape(fabric)}[/bold]: what if {escape(', '.join(failures))} went down")
    for o in outcomes:
        d = o.as_dict()
        out.print(f" plane {o.plane}: {o.failed_cables} cable(s) down")
        out.print(f"  reachable: {_verdict(d['reachable'])}   deadlock-free: {_verdict(d['deadlock_free'])}   "
                  f"every switch at its as-built bound: {_verdict(d['within_bound'])}   "
                  f"minimal churn: {_verdict(o.minimal)}")
        widened = o.how != "minimal repair"
        out.print(f"  moved: {o.affected} destinations whose entries used a failed cable"
                  + (f" + {o.extra} more: {escape(o.how)}" if widened else
                     f" + {o.extra} more to keep every switch at its as-built bound" if o.extra else ", nothing else"))
        t = Table("reroute", "entries", "switches", "destinations", box=None, pad_edge=False)
        t.add_row("widened repair" if widened else "minimal-churn repair", str(o.repair.entries), str(o.repair.switches), str(o.repair.destinations))
        t.add_row("full recompute", str(o.recompute.entries), str(o.recompute.switches), str(o.recompute.destinations))
        for eng, r in opensm.items() if o.plane == 0 else ():
            t.add_row(f"OpenSM {eng} recompute (ran {r['engine_used']})", str(r["entries"]), str(r["switches"]),
                      str(r["destinations"]))
        out.print(t)
        losing = d["leaves_losing"]
        out.print(f"  up-link bandwidth kept: {len(losing)} {'leaf' if len(losing) == 1 else 'leaves'} lose"
                  f"{'s' if len(losing) == 1 else ''} some, every other leaf keeps 1.0")
        for leaf in losing[:SHOWN]:
            out.print(f"    {escape(leaf['leaf'])}: {leaf['working']}/{leaf['up_links']} up-links = {leaf['kept']:.4f}; "
                      f"worst destinations per up-port {leaf['max_before']} → {leaf['max_after']}", highlight=False)
        if len(losing) > SHOWN:
            out.print(f"    … {len(losing) - SHOWN} more")
        for line in d["worst"] + d["warnings"]:
            out.print(f"  [yellow]![/yellow] {escape(line)}")


def print_trials(out: Console, fabric: str, k: int, report: dict) -> None:
    out.print(f"[bold]{escape(fabric)}[/bold]: {report['trials']} random draws of {k} switch-to-switch cable(s) down "
              f"(seed {report['seed']})")
    out.print(f"  draws failing a check: {report['failed_trials']}   reroutes that also moved destinations no failed "
              f"cable carried (for balance): {report['not_minimal']}")
    t = Table("figure", "worst", "median", box=None, pad_edge=False)
    for key, label in (("repair_entries", "entries changed, minimal-churn repair"),
                       ("recompute_entries", "entries changed, full recompute"),
                       ("repair_destinations", "destinations moved, repair"),
                       ("extra_destinations", "… of them not on a failed cable"),
                       ("min_leaf_kept", "up-link bandwidth kept, worst leaf")):
        if key in report:
            t.add_row(label, str(report[key]["worst"]), str(report[key]["median"]))
    for eng, r in report.get("opensm", {}).items():
        t.add_row(f"entries changed, OpenSM {escape(eng)} recompute", str(r["entries"]["worst"]), str(r["entries"]["median"]))
        t.add_row(f"destinations moved, OpenSM {escape(eng)}", str(r["destinations"]["worst"]), str(r["destinations"]["median"]))
    out.print(t)
