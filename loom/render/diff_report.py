"""`loom diff` output: a readable summary for the terminal and Markdown for a pull request."""

from __future__ import annotations


from loom.model.names import natural

SHOWN = 30  # rows of a long table before "… N more"


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


def markdown(d: dict) -> str:
    b, h, r, c = d["base"], d["head"], d["routing"], d["cables"]
    status = "❌ **regression**" if d["regressions"] else ("🌱 pure growth" if d["growth"] else "✅ no regression")
    out = [f"## loom diff: {h['fabric']} ({b['label']} → {h['label']})", "", status, "",
           "| check | base | head |", "|---|---|---|"]
    for k in b["verdicts"]:
        out.append(f"| {k.replace('_', ' ')} | {_mark(b['verdicts'][k])} | {_mark(h['verdicts'][k])} |")
    if b["balance"] and h["balance"]:
        bb, hb = b["balance"], h["balance"]
        out.append(f"| max destinations per up-port / bound | {bb['max_dest_per_up_port']} / {bb['lower_bound']} | "
                   f"{hb['max_dest_per_up_port']} / {hb['lower_bound']} |")
        out.append(f"| storage max per up-port | {bb['storage']} | {hb['storage']} |")
        out.append(f"| eBB | {bb['ebb']} | {hb['ebb']} |")
    out.append("")
    for reg in d["regressions"]:
        out.append(f"- ❌ {reg}")
    out += ["", "### Forwarding", "",
            f"- LFT entries changed: **{r['lft_entries_changed']}** on {len(r['per_switch'])} switches",
            f"- destinations moved (their cabling changed): {len(r['destinations_moved'])}",
            f"- destinations rerouted (same cabling, other ports): {len(r['destinations_rerouted'])}",
            f"- destinations added / removed: {len(r['destinations_added'])} / {len(r['destinations_removed'])}",
            f"- leaf up-ports above the bound on head: {len(r['ports_above_bound'])}", ""]
    for title, items in (("Moved", r["destinations_moved"]), ("Rerouted", r["destinations_rerouted"]),
                         ("Added", r["destinations_added"]), ("Removed", r["destinations_removed"])):
        if items:
            out += [f"<details><summary>{title} destinations ({len(items)})</summary>", "", *_list(items), "", "</details>", ""]
    if r["per_switch"]:
        top = sorted(r["per_switch"].items(), key=lambda kv: (-kv[1], natural(kv[0])))
        out += ["<details><summary>Entries changed per switch</summary>", "", "| switch | entries |", "|---|---|",
                *[f"| {s} | {n} |" for s, n in top[:SHOWN]], *_more(top), "", "</details>", ""]
    if r["ports_above_bound"]:
        above = sorted(r["ports_above_bound"], key=lambda p: (natural(p["switch"]), p["port"]))
        out += ["<details><summary>Up-ports above the bound</summary>", "",
                *[f"- {p['switch']} port {p['port']}: {p['destinations']} > {p['bound']}" for p in above[:SHOWN]],
                *_more(above), "", "</details>", ""]
    out += ["### Cabling and physical churn", "", f"- cables added {len(c['added'])}, removed {len(c['removed'])}, "
            f"re-pulled {len(c['moved'])}"]
    head, details = _churn_lines(d["churn"])
    out += [f"- physical churn: {head}", *[f"  - `{x}`" for x in details], ""]
    for title in ("moved", "added", "removed"):
        if c[title]:
            out += [f"<details><summary>Cables {title} ({len(c[title])})</summary>", "", *_list(c[title]), "", "</details>", ""]
    if d["host_settings_changed"]:
        out += ["### Host settings", "", *[f"- {x}" for x in d["host_settings_changed"]], ""]
    return "\n".join(out) + "\n"


def summary(d: dict) -> str:
    b, h, r, c = d["base"], d["head"], d["routing"], d["cables"]
    lines = [f"loom diff {h['fabric']}: {b['label']} -> {h['label']}"]
    for k in b["verdicts"]:
        word = {True: "yes", False: "NO", None: "n/a"}
        lines.append(f"  {k:<22} base {word[b['verdicts'][k]]:<5} head {word[h['verdicts'][k]]}")
    if b["balance"] and h["balance"]:
        lines.append(f"  balance                max/bound base {b['balance']['max_dest_per_up_port']}/{b['balance']['lower_bound']}"
                     f"  head {h['balance']['max_dest_per_up_port']}/{h['balance']['lower_bound']}")
    lines.append(f"  LFT entries changed    {r['lft_entries_changed']} on {len(r['per_switch'])} switches")
    lines.append(f"  destinations           moved {len(r['destinations_moved'])}, rerouted {len(r['destinations_rerouted'])}, "
                 f"added {len(r['destinations_added'])}, removed {len(r['destinations_removed'])}")
    for name in r["destinations_moved"][:10]:
        lines.append(f"    moved: {name}")
    lines += [f"    {x}" for x in _more(r["destinations_moved"], 10)]
    lines.append(f"  cables                 added {len(c['added'])}, removed {len(c['removed'])}, moved {len(c['moved'])}")
    for m in c["moved"][:10]:
        lines.append(f"    moved: {m}")
    lines += [f"    {x}" for x in _more(c["moved"], 10)]
    head, details = _churn_lines(d["churn"])
    lines += [f"  churn                  {head}", *[f"    {x}" for x in details]]
    for x in d["host_settings_changed"]:
        lines.append(f"  host: {x}")
    lines.append("  verdict: " + ("REGRESSION: " + "; ".join(d["regressions"]) if d["regressions"]
                                  else ("pure growth" if d["growth"] else "no regression")))
    return "\n".join(lines) + "\n"
