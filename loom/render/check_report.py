"""`loom check --format markdown`: the verdict of every check as Markdown, for a pull request
comment or a change ticket (the same figures as the text and JSON reports: all three are made
from the one report dict `loom check` builds)."""

from __future__ import annotations


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
            lines += _table(["level", "groups", "max dest/port", "over as-built bound", "over design bound", "max paths/port"],
                            [[name, v["groups"], v["max"], v["over_bound"], v["over_design_bound"], v["max_paths"]]
                             for name, v in levels.items()])
        for w in p.get("warnings", []):
            lines.append(f"- warning: {w}")
    return "\n".join(lines) + "\n"


def ebb_text(p: dict) -> str:
    """A plane's eBB figure as `loom check` prints it: the mean, each zone's, the whole fabric's —
    or why there is none (`--ebb-samples 0` skips it; fewer than two CA ports cannot bisect)."""
    if p.get("ebb") is None:
        return "not measured (--ebb-samples 0)" if p.get("ebb_samples") == 0 else "none (fewer than two CA ports)"
    zones = p.get("ebb_by_zone") or {}
    text = f"{p['ebb']}" + (": " + ", ".join(f"{z} {v}" for z, v in zones.items()) if len(zones) > 1 else "")
    return text + (f"; whole fabric {p['ebb_fabric']}" if len(zones) > 1 and p.get("ebb_fabric") is not None else "")
