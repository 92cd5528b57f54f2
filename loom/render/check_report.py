"""`loom check --format markdown`: the verdict of every check as Markdown, for a pull request
comment or a change ticket (the same figures as the text and JSON reports: all three are made
from the one report dict `loom check` builds)."""

from __future__ import annotations

from rich.console import Console


def _yes(v) -> str:
    return "n/a" if v is None else ("yes" if v else "**NO**")


def _row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _table(head: list[str], rows: list[list]) -> list[str]:
    return [_row(head), _row(["---"] * len(head)), *(_row(r) for r in rows)]


def markdown(report: dict, planes: list[dict], bound_key: str) -> str:
    """One summary row per plane, then per plane its balance levels and warnings."""
    lines = [f"## loom check: {report['fabric']} — {'pass' if report['ok'] else '**FAIL**'}", ""]
    iso, rails = report.get("isolation"), report.get("rails")
    lines.append(f"Cabling: planes isolated {_yes(iso and iso['ok'])}; rails correct {_yes(rails and rails['ok'])}.")
    q = report.get("roce_qos")
    if q:  # Ethernet: the lossless cross-check (loom.checks.roce_qos)
        lines.append(f"Lossless configuration (SONiC tables × NIC settings × classes): {_yes(q['ok'])}; PFC on "
                     f"{','.join(map(str, q['pfc'])) or 'none'}, MTU switch {q['mtu']['switch']} / host {q['mtu']['host']}.")
        lines += [f"- {p}" for p in q["problems"][:20]]
    if report.get("partitions"):
        from loom.render.partitions_report import markdown_lines

        lines += markdown_lines(report["partitions"])
    lines.append("")
    rows = []
    for p in planes:
        r, b, q = p["reachability"], p["balance"], p["qos"]
        rows.append([p["plane"], p["engine"],
                     f"{_yes(p['reachable'])} ({r['unreachable_pairs']} unreachable, {r['loop_pairs']} looping)",
                     _yes(p["deadlock_free"]),
                     f"{_yes(b[bound_key])} ({b['max_dest_per_up_port']} / {b['lower_bound']} / {b.get('design_bound')})",
                     _yes(None if q is None else q["ok"]),
                     ebb_text(p)])
    lines += _table(["plane", "engine", "reachable", "deadlock-free",
                     "balance (max dest/up-port / as-built bound / design bound)", "QoS", "eBB"], rows)
    for p in planes:
        levels = p["balance"].get("levels") or {}
        if levels:
            lines += ["", f"### Plane {p['plane']}: balance per level", ""]
            lines += _table(["level", "groups", "max dest/port", "over as-built bound", "over design bound", "max paths/port",
                             "links into a leaf or pod: max paths / bound, over"],
                            [[name, v.get("groups", "-"), v.get("max", "-"), v.get("over_bound", "-"), v.get("over_design_bound", "-"),
                              v.get("max_paths", "-"), _into(v.get("into"))] for name, v in levels.items()])
        for w in p.get("warnings", []):
            lines.append(f"- warning: {w}")
    return "\n".join(lines) + "\n"


def _into(f: dict | None) -> str:
    """A level's into-subtree figures in one cell (`loom.checks.subtrees.level_figures`)."""
    if not f:
        return "-"
    if f["paths_bound"] is None:
        return "not judged"
    return f"{f['max_judged_paths']} / {f['paths_bound']}, {f['over_bound']}"


def ebb_text(p: dict) -> str:
    """A plane's eBB figure as `loom check` prints it: the mean, each zone's, the whole fabric's —
    or why there is none (`--ebb-samples 0` skips it; fewer than two CA ports cannot bisect)."""
    if p.get("ebb") is None:
        return "not measured (--ebb-samples 0)" if p.get("ebb_samples") == 0 else "none (fewer than two CA ports)"
    zones = p.get("ebb_by_zone") or {}
    text = f"{p['ebb']}" + (f" ± {p['ebb_ci95']} (95 %, {p['ebb_bisections']} bisections)" if p.get("ebb_ci95") is not None else "")
    text += (": " + ", ".join(f"{z} {v}" for z, v in zones.items()) if len(zones) > 1 else "")
    return text + (f"; whole fabric {p['ebb_fabric']}" if len(zones) > 1 and p.get("ebb_fabric") is not None else "")


def vl_split(p: dict) -> str | None:
    """Why a plane's traffic is split over two VL sets, in one statement with what the routing
    does on one VL (measured), or None without a split.  Said once: the rule that makes the split
    (a zone left from several border leaves; a BiGraph's two parts) says a credit loop *can*
    close on one VL, the measurement whether these tables close one — "could not stay loop-free"
    beside "would be free of credit loops" read as a contradiction (issue 37)."""
    single = p["deadlock_free_single_vl"]
    if p.get("cross_zone_vls"):
        why = ("cross-zone: inter-zone links leave a zone from several leaves, where one VL can close a credit loop "
               "(traffic that came in goes up and down to another border leaf); so traffic to lower-numbered zones "
               "rides a second VL per class (its SL = class SL + classes)")
    elif p.get("part_vls"):
        why = ("BiGraph: upper→upper paths turn in the lower part and lower→lower paths in the upper part, where one VL "
               "can close a credit loop; so traffic from the upper part rides VL set 0, from the lower part VL set 1 "
               "(EFLOPS's priority per direction)")
    else:
        return None
    return why + ("; these tables would close one on a single VL, the split is what keeps them free" if not single else
                  "; these tables happen to close none on a single VL, the split keeps every routing free (a reroute too)")


def print_check(out: Console, name: str, p: dict) -> None:
    """One InfiniBand plane's verdicts as `loom check` prints them."""
    def verdict(ok: bool) -> str:
        return "[green]yes[/green]" if ok else "[red]NO[/red]"

    b, r = p["balance"], p["reachability"]
    out.print(f"[bold]{name}[/bold] plane {p['plane']} ({p['engine']})")
    out.print(f"  reachable:      {verdict(p['reachable'])}  {r['ca_pairs']} CA-to-CA pairs, {r['unreachable_pairs']} unreachable, "
              f"{r['loop_pairs']} looping, max {r['max_hops']} hops, {r['nonminimal_pairs']} non-minimal in-zone; "
              f"{r['switch_pairs']} switch-to-LID pairs, {r['switch_unreachable']} unreachable")
    for loop in r["loops"]:
        out.print(f"    [red]forwarding loop:[/red] {loop}", highlight=False)
    if r["cut_off"]:
        out.print(f"    cut off (left out): {', '.join(r['cut_off'][:10])}" + (f" and {len(r['cut_off']) - 10} more" if len(r["cut_off"]) > 10 else ""),
                  highlight=False)
    for e in r["examples"]:
        out.print(f"    {e}", highlight=False)
    out.print(f"  deadlock-free:  {verdict(p['deadlock_free'])}  {p['deadlock']['channels']} channels, "
              f"{p['deadlock']['dependencies']} dependencies (CA-to-CA only: "
              f"{'free' if p['deadlock']['ca_to_ca_deadlock_free'] else 'LOOP'})")
    split = vl_split(p)
    if split:
        out.print(f"    {split}", highlight=False)
    if p["qos"]:
        q = p["qos"]
        out.print(f"  qos:            {verdict(q['ok'])}  " + ", ".join(
            f"{c['name']} SL{c['sl']}/VL{c['vl']} {c['weight_share']:.1%}{'' if c['isolated'] else ' (shared)'}" for c in q["classes"]))
        out.print("    per VL deadlock-free: " + ", ".join(f"VL{v} {'yes' if r['deadlock_free'] else 'NO'}" for v, r in q["per_vl"].items())
                  + ("" if split else f"; on one VL the routing would be {'free' if p['deadlock_free_single_vl'] else 'NOT free'} "
                     "of credit loops"))
        for prob in q["problems"]:
            out.print(f"    [red]{prob}[/red]", highlight=False)
    if p["cycle"]:
        out.print("  credit loop:")
        for hop in p["cycle"]:
            out.print(f"    {hop}", highlight=False)
    if b["within_bound"]:  # at the as-built bound, so a design bound missed can only be the fabric's loss
        said = ("every switch at its as-built bound; design bound "
                + ("met" if b["design_within_bound"] else "[yellow]not met[/yellow] (links or switches are down)"))
    else:  # the routing's fault, degraded fabric or not: the levels below show where
        said = ("a switch is over its as-built bound (levels below); design bound "
                + ("met" if b["design_within_bound"] else "[yellow]not met[/yellow]"))
    out.print(f"  balance:        {verdict(b['within_bound'])}  {said}")
    out.print("    level        groups  max dest/port  over as-built  over design  max paths/port")
    for level, f in b["levels"].items():
        if "groups" in f:
            out.print(f"    {level:<12} {f['groups']:>6}  {f['max']:>13}  {f['over_bound']:>13}  {f['over_design_bound']:>11}  "
                      f"{f['max_paths']:>14}")
    into = {level: f["into"] for level, f in b["levels"].items() if "into" in f}
    if into:
        out.print("    links into a leaf or pod, against each other (CA-to-CA paths max / bound where judged, destinations "
                  "max / bound): "
                  + ("" if b["into_within_bound"] else "[red]over[/red] " if b["intact"] else
                     "[yellow]over (reported only: the fabric is degraded)[/yellow] ")
                  + "; ".join(f"{level} {f['max_judged_paths'] if f['paths_bound'] is not None else '-'}/"
                              f"{f['paths_bound'] if f['paths_bound'] is not None else '-'}, "
                              f"{f['max']}/{f['bound']}" + (f", {f['over_bound']} links over" if f["over_bound"] else "")
                              for level, f in into.items()), highlight=False)
    out.print(f"    leaf up-ports: max {b['max_dest_per_up_port']} destinations, as-built bound {b['lower_bound']}, "
              f"design bound {b['design_bound']} (worst leaf), min {b['min_dest_per_up_port']}")
    for role, f in b["per_role"].items():
        out.print(f"    {role:<11} max {f['max_dest_per_up_port']} / as-built {f['lower_bound']} / design {f['design_bound']}"
                  + (f"  [red]{f['over_bound']} leaves over[/red]" if f["over_bound"] else ""))
    if b["inter_zone"]:
        iz = b["inter_zone"]
        out.print(f"    inter-zone  max {iz['max_dest_per_link']} / bound {iz['lower_bound']} over {iz['links']} link directions")
    for w in b["worst"]:
        out.print(f"    [red]{w}[/red]", highlight=False)
    out.print(f"  eBB:            {ebb_text(p)}", highlight=False)
    for w in p["warnings"]:
        out.print(f"  [yellow]warning:[/yellow] {w}", highlight=False)
