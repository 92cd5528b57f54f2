"""`loom diff` output: a readable summary for the terminal and Markdown for a pull request."""

from __future__ import annotations


from loom.model.names import natural

SHOWN = 30  # rows of a long table before "… N more"


#: what the report calls things, by technology: Ethernet has routes, NICs and priorities, not
#: LFT entries, CAs and VLs
WORDS = {
    "infiniband": {"entries": "LFT entries", "dest": "destinations", "up": "up-port",
                   "reachable": "reachable", "deadlock_free": "deadlock free", "balance_within_bound": "balance within bound",
                   "qos_isolation": "qos isolation"},
    "ethernet": {"entries": "routes", "dest": "NIC and loopback prefixes", "up": "up-link",
                 "reachable": "reachable (NIC pairs)", "deadlock_free": "PFC deadlock free",
                 "balance_within_bound": "ECMP balance within bound", "qos_isolation": "priorities and PFC"},
}


def _words(d: dict) -> dict:
    return WORDS[d.get("technology", "infiniband")]


def status(d: dict) -> str:
    """regression, pure growth, change (no regression) or no change."""
    if d["regressions"]:
        return "regression"
    if d["growth"]:
        return "pure growth"
    return "change, no regression" if d.get("changed", True) else "no change"


def _config_lines(d: dict) -> list[str]:
    """Ethernet: configuration lines changed per switch (most first)."""
    cfg = d.get("configs")
    if not cfg:
        return []
    top = sorted(cfg["per_switch"].items(), key=lambda kv: (-(kv[1]["added"] + kv[1]["removed"]), natural(kv[0])))
    return [f"{cfg['lines_changed']} configuration lines changed (frr.conf, config_db.json) on {len(top)} switches"
            + (f"; switches added {len(cfg['switches_added'])}, removed {len(cfg['switches_removed'])}"
               if cfg["switches_added"] or cfg["switches_removed"] else ""),
            *[f"{name}: +{x['added']} -{x['removed']}" for name, x in top]]


def _mark(v) -> str:
    """A verdict; None only where the check does not exist for the model (QoS without traffic classes)."""
    return {True: "✅", False: "❌", None: "n/a"}[v]


def _more(rows: list, shown: int = SHOWN) -> list[str]:
    return [f"… {len(rows) - shown} more"] if len(rows) > shown else []


def _list(items: list[str], limit: int = 20) -> list[str]:
    out = [f"- `{i}`" for i in items[:limit]]
    if len(items) > limit:
        out.append(f"- … {len(items) - limit} more")
    return out


def _churn_lines(ch: dict, limit: int = 5) -> tuple[str, list[str]]:
    """Devices moved, NIC ports re-cabled, LIDs and addresses renumbered: counts, then the first few of each."""
    head = (f"{len(ch['devices_moved'])} devices moved rack/RU, {len(ch['ports_recabled'])} NIC ports re-cabled, "
            f"{len(ch['lids_renumbered'])} LIDs and {len(ch['addresses_renumbered'])} addresses renumbered"
            + (" (relayout)" if ch["relayout"] else ""))
    details = [f"device {x['device']}: {x['from']} -> {x['to']}" for x in ch["devices_moved"][:limit]]
    details += [f"{what} {x['name']}: {x['old']} -> {x['new']}"
                for what, key in (("LID", "lids_renumbered"), ("address", "addresses_renumbered")) for x in ch[key][:limit]]
    return head, details


def describe(x: dict) -> str:
    """`3 classes, 6 data VLs in 2 sets`: one side of the QoS/VL layout (`loom.checks.qos_layout`)."""
    sets = f" in {x['vl_sets']} sets" if x["vl_sets"] > 1 else ""
    return (f"{len(x['classes'])} classes, " if x["classes"] else "no classes, ") + f"{x['data_vls']} data VLs{sets}"


def _or_none(v) -> str:
    """A figure a side may not have (no storage nodes, no eBB sample): "—", never Python's None."""
    return "—" if v is None else str(v)


def markdown(d: dict) -> str:
    b, h, r, c = d["base"], d["head"], d["routing"], d["cables"]
    w = _words(d)
    st = status(d)
    mark = {"regression": "❌ **regression**", "pure growth": "🌱 pure growth", "change, no regression": "🔶 change, no regression",
            "no change": "✅ no change"}[st]
    out = [f"## loom diff: {h['fabric']} ({b['label']} → {h['label']})", "", mark, "",
           "| check | base | head |", "|---|---|---|"]
    for k in b["verdicts"]:
        out.append(f"| {w.get(k, k.replace('_', ' '))} | {_mark(b['verdicts'][k])} | {_mark(h['verdicts'][k])} |")
    if b["balance"] and h["balance"]:
        bb, hb = b["balance"], h["balance"]
        out.append(f"| max {w['dest']} per {w['up']} / bound | {bb['max_dest_per_up_port']} / {bb['lower_bound']} | "
                   f"{hb['max_dest_per_up_port']} / {hb['lower_bound']} |")
        if (bb["storage"], hb["storage"]) != (None, None):  # None: no storage nodes on that side
            out.append(f"| storage max per up-port | {_or_none(bb['storage'])} | {_or_none(hb['storage'])} |")
        out.append(f"| eBB | {_or_none(bb['ebb'])} | {_or_none(hb['ebb'])} |")
    layout = d.get("qos_layout")
    if layout:
        out.append(f"| QoS/VL layout | {describe(layout['base'])} | {describe(layout['head'])}"
                   + (" 🔶 **changed**" if layout["changes"] else "") + " |")
    out.append("")
    for reg in d["regressions"]:
        out.append(f"- ❌ {reg}")
    out += ["", "### Forwarding", "",
            f"- {w['entries']} changed: **{r['lft_entries_changed']}** on {len(r['per_switch'])} switches "
            f"({r.get('entries_added', 0)} added, {r.get('entries_removed', 0)} removed)",
            f"- {w['dest']} moved (their cabling changed): {len(r['destinations_moved'])}",
            f"- {w['dest']} rerouted (same cabling, other ports): {len(r['destinations_rerouted'])}",
            f"- {w['dest']} added / removed: {len(r['destinations_added'])} / {len(r['destinations_removed'])}",
            f"- ports above their {d.get('bound', 'as-built')} bound on head: {len(r['ports_above_bound'])}", ""]
    for title, items in (("Moved", r["destinations_moved"]), ("Rerouted", r["destinations_rerouted"]),
                         ("Added", r["destinations_added"]), ("Removed", r["destinations_removed"])):
        if items:
            out += [f"<details><summary>{title} {w['dest']} ({len(items)})</summary>", "", *_list(items), "", "</details>", ""]
    if r["per_switch"]:
        top = sorted(r["per_switch"].items(), key=lambda kv: (-kv[1], natural(kv[0])))
        out += [f"<details><summary>{w['entries'].capitalize()} changed per switch</summary>", "",
                f"| switch | {w['entries']} |", "|---|---|",
                *[f"| {s} | {n} |" for s, n in top[:SHOWN]], *_more(top), "", "</details>", ""]
    cfg = _config_lines(d)
    if cfg:
        out += ["### Switch configuration", "", f"- {cfg[0]}", "", "<details><summary>Lines changed per switch</summary>", "",
                *[f"- `{x}`" for x in cfg[1:SHOWN + 1]], *_more(cfg[1:]), "", "</details>", ""]
    if r["ports_above_bound"]:
        above = sorted(r["ports_above_bound"], key=lambda p: (natural(p["switch"]), p["port"]))
        out += [f"<details><summary>Ports above their {d.get('bound', 'as-built')} bound</summary>", "",
                *[f"- {p['switch']} port {p['port']} -> {p['peer']} ({p['level']}): {p['paths']} CA-to-CA paths > {p['bound']}"
                  if "paths" in p else f"- {p['switch']} port {p['port']} ({p.get('level', 'leaf_up')}): {p['destinations']} > {p['bound']}"
                  for p in above[:SHOWN]],
                *_more(above), "", "</details>", ""]
    out += ["### Cabling and physical churn", "", f"- cables added {len(c['added'])}, removed {len(c['removed'])}, "
            f"re-pulled {len(c['moved'])}"]
    head, details = _churn_lines(d["churn"])
    out += [f"- physical churn: {head}", *[f"  - `{x}`" for x in details], ""]
    for title in ("moved", "added", "removed"):
        if c[title]:
            out += [f"<details><summary>Cables {title} ({len(c[title])})</summary>", "", *_list(c[title]), "", "</details>", ""]
    if layout and layout["changes"]:
        out += ["### QoS / VL layout", "", "Every port's SL2VL and VLArb tables are rewritten; jobs' SLs may change.", "",
                *[f"- {x}" for x in layout["changes"]], ""]
    if d["host_settings_changed"]:
        out += ["### Host settings", "", *[f"- {x}" for x in d["host_settings_changed"]], ""]
    t = d.get("who_can_talk")
    if t:
        out += ["### Who can talk to whom (partitions)", "", f"- {talk_verdict(t)}",
                *[f"- now can talk: `{x}`" for x in t["gained"][:SHOWN]], *[f"- no longer: `{x}`" for x in t["lost"][:SHOWN]],
                *[f"- ❌ {p}" for p in t["problems_head"][:SHOWN]], ""]
    return "\n".join(out) + "\n"


def talk_verdict(t: dict) -> str:
    """The partition verdict of a diff: unchanged, or how many node pairs gained or lost a path,
    and whether the intent (tenants isolated, storage reached, management closed) still holds."""
    word = {True: "holds", False: "FAILS", None: "n/a"}
    change = (f"CHANGED: {t['pairs_changed']} node pair(s), {len(t['gained'])} gained / {len(t['lost'])} lost"
              if t["changed"] else "unchanged")
    return f"who can talk to whom {change}; intent base {word[t['intent_base']]}, head {word[t['intent_head']]}"


def summary(d: dict) -> str:
    b, h, r, c = d["base"], d["head"], d["routing"], d["cables"]
    w = _words(d)
    lines = [f"loom diff {h['fabric']}: {b['label']} -> {h['label']}"]
    for k in b["verdicts"]:
        word = {True: "yes", False: "NO", None: "n/a"}
        lines.append(f"  {w.get(k, k):<30} base {word[b['verdicts'][k]]:<5} head {word[h['verdicts'][k]]}")
    if b["balance"] and h["balance"]:
        lines.append(f"  {'balance':<30} max/bound base {b['balance']['max_dest_per_up_port']}/{b['balance']['lower_bound']}"
                     f"  head {h['balance']['max_dest_per_up_port']}/{h['balance']['lower_bound']}")
    lines.append(f"  {w['entries'] + ' changed':<30} {r['lft_entries_changed']} on {len(r['per_switch'])} switches "
                 f"({r.get('entries_added', 0)} added, {r.get('entries_removed', 0)} removed)")
    lines.append(f"  {w['dest']:<30} moved {len(r['destinations_moved'])}, rerouted {len(r['destinations_rerouted'])}, "
                 f"added {len(r['destinations_added'])}, removed {len(r['destinations_removed'])}")
    for name in r["destinations_moved"][:10]:
        lines.append(f"    moved: {name}")
    lines += [f"    {x}" for x in _more(r["destinations_moved"], 10)]
    lines.append(f"  {'cables':<30} added {len(c['added'])}, removed {len(c['removed'])}, moved {len(c['moved'])}")
    for m in c["moved"][:10]:
        lines.append(f"    moved: {m}")
    lines += [f"    {x}" for x in _more(c["moved"], 10)]
    head, details = _churn_lines(d["churn"])
    lines += [f"  {'churn':<30} {head}", *[f"    {x}" for x in details]]
    cfg = _config_lines(d)
    if cfg:
        lines.append(f"  {'switch configuration':<30} {cfg[0]}")
        lines += [f"    {x}" for x in cfg[1:11]] + [f"    {x}" for x in _more(cfg[1:], 10)]
    for x in d["host_settings_changed"]:
        lines.append(f"  host: {x}")
    t = d.get("who_can_talk")
    if t:
        lines.append(f"  {'partitions':<30} {talk_verdict(t)}")
        lines += [f"    now can talk: {x}" for x in t["gained"][:10]] + [f"    no longer: {x}" for x in t["lost"][:10]]
    layout = d.get("qos_layout")
    if layout:
        lines.append(f"  {'QoS/VL layout':<30} " + (f"CHANGED: {describe(layout['base'])} -> {describe(layout['head'])}"
                                                    if layout["changes"] else f"same ({describe(layout['head'])})"))
        lines += [f"    {x}" for x in layout["changes"]]
    lines.append("  verdict: " + ("REGRESSION: " + "; ".join(d["regressions"]) if d["regressions"] else status(d))
                 + ("; QoS/VL layout changed" if layout and layout["changes"] else ""))
    return "\n".join(lines) + "\n"
