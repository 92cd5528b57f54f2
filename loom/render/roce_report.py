"""`loom check` on Ethernet planes, in RoCE words: NICs, routes, ECMP groups, priorities,
PFC and the lossless configuration — never CA, SL/VL or LFT, which Ethernet does not have.
The JSON keys are those of every fabric (`loom.checks.check_tables`); only the text differs
(the cabling lines are every fabric's).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from .check_report import ebb_text


def _yes(ok: bool) -> str:
    return "[green]yes[/green]" if ok else "[red]NO[/red]"


def print_lossless(out: Console, name: str, q: dict) -> None:
    """The lossless cross-check (`loom.checks.roce_qos`)."""
    out.print(f"[bold]{name}[/bold] lossless configuration: {_yes(q['ok'])}  SONiC tables of {q['switches']} switches and NIC "
              f"settings of {q['hosts']} hosts{' (a sample: the ends of every role and node type)' if q['sampled'] else ''} "
              f"agree with the classes on DSCP, priorities, PGs, queues and MTU")
    out.print("  priorities:     " + ", ".join(f"{c['name']} {c['priority']} (DSCP {c['dscp']}{', lossless' if c['lossless'] else ''})"
                                           for c in q["priorities"])
              + f"; PFC and its watchdog on {','.join(map(str, q['pfc'])) or 'none'}; MTU switch {q['mtu']['switch']}, "
              f"host {q['mtu']['host']}, RoCE {q['mtu']['roce']}")
    for prob in q["problems"][:20]:
        out.print(f"    [red]{escape(prob)}[/red]", highlight=False)
    if len(q["problems"]) > 20:
        out.print(f"    ... and {len(q['problems']) - 20} more (--json lists them all)")


def print_plane(out: Console, name: str, p: dict) -> None:
    r, b, d = p["reachability"], p["balance"], p["deadlock"]
    out.print(f"[bold]{name}[/bold] plane {p['plane']} (routes by {p['engine']}: the balanced reference ECMP is measured against)")
    out.print(f"  reachable:      {_yes(p['reachable'])}  {r['ca_pairs']} NIC-to-NIC pairs, {r['unreachable_pairs']} without a "
              f"route, {r['loop_pairs']} looping, max {r['max_hops']} hops; {r['switch_pairs']} switch-to-address routes, "
              f"{r['switch_unreachable']} missing")
    for line in r["loops"] + r["examples"]:
        out.print(f"    {escape(str(line))}", highlight=False)
    if r["cut_off"]:
        out.print(f"    cut off (left out): {escape(', '.join(r['cut_off'][:10]))}", highlight=False)
    q = p["qos"]
    per_prio = ", ".join(f"priority {k} {'yes' if v['deadlock_free'] else 'NO'}" for k, v in q["per_vl"].items()) if q else ""
    out.print(f"  PFC deadlock-free: {_yes(p['deadlock_free'])}  {d['channels']} links, {d['dependencies']} dependencies"
              + (f"; per lossless priority: {per_prio} (lossy priorities drop, they cannot deadlock)" if per_prio else ""))
    if p["cycle"]:
        out.print("  PFC pause loop:")
        for hop in p["cycle"]:
            out.print(f"    {escape(str(hop))}", highlight=False)
    if q:
        for prob in q["problems"]:
            out.print(f"    [red]{escape(prob)}[/red]", highlight=False)
    if p.get("part_vls") and not p["deadlock_free_single_vl"] and q and any("/set" in k for k in q["per_vl"]):
        out.print("  [yellow]warning:[/yellow] the PFC verdict counts traffic from each BiGraph part on a priority of its own "
                  "(EFLOPS); `loom configs` gives each lossless class one priority, on which this routing is NOT free of "
                  "PFC deadlock")
    edge = "leaf_up" if "leaf_up" in b["levels"] else "across"
    groups = b["levels"].get(edge, {}).get("groups", 0)
    out.print(f"  ECMP balance:   {_yes(b['within_bound'])}  {groups} ECMP groups at the edge "
              f"({'leaf up-links to the spines' if edge == 'leaf_up' else 'links to the other part'}), "
              f"max {b['max_dest_per_up_port']} routes per up-link, bound {b['lower_bound']} (design {b['design_bound']}), "
              f"min {b['min_dest_per_up_port']}")
    for w in b["worst"]:
        out.print(f"    [red]{escape(str(w))}[/red]", highlight=False)
    out.print(f"  eBB:            {ebb_text(p)}", highlight=False)
    for w in p["warnings"]:
        out.print(f"  [yellow]warning:[/yellow] {escape(str(w))}", highlight=False)
