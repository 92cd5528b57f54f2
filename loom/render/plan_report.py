"""A saved plan for review: `loom show plan.json [--entries]`.

The plan file holds the tables as rows (`loom/push/packing.py`); the entries a reviewer needs
are the rows that differ between `previous_lfts` (live when the plan was made) and
`desired_lfts`, named by switch and destination."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from loom.model.names import natural


def is_plan(path: Path) -> bool:
    """A `.json` file with a `plan_sha256` key, or a `model_sha256` one near its start (models
    are YAML; a model written as JSON has neither).  Only the ends are read: `model_sha256` is
    among the first keys `loom plan` writes and `plan_sha256` the last, so a plan cut short is
    still taken for one (and `read_plan` says it is not valid JSON, not that it is not a model);
    reading is bounded later by `read_plan`.
    A `.json` file holding JSON that is no object (`[1, 2]`, `"x"`, `null`) is no model either (a
    model is a mapping): it is taken for a plan too, so `show` refuses it as `apply` does ("not a
    loom plan", with the fix) rather than as a model.  A sequence is known by its `[` (in YAML
    too); any other value is parsed, when it fits in the 64 KiB read (a YAML model in a `.json`
    file does not parse as JSON, and stays a model)."""
    if path.suffix != ".json" or not path.is_file():
        return False
    with path.open("rb") as f:
        head = f.read(1 << 16)
        size = f.seek(0, 2)
        f.seek(max(0, size - 4096))
        tail = f.read()
    start = head.lstrip()[:1]
    if start != b"{":
        return start == b"[" or (len(head) == size and _is_json(head))
    return b'"plan_sha256"' in head + tail or b'"model_sha256"' in head[:1024]


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:  # not JSON (UnicodeDecodeError is one too)
        return False
    return True


def changed_entries(plan: dict) -> list[dict]:
    """Every entry the plan changes: switch, LID, destination name, port before and after (None:
    no route), switches in natural order, LIDs ascending."""
    names = {m["lid"]: m["name"] for m in plan["changes"]["destinations_moved"]}
    before, after = plan["previous_lfts"], plan["desired_lfts"]
    out = []
    for sw in sorted(set(before) | set(after), key=natural):
        old = {lid: port for lid, port in before.get(sw, {}).get("rows", [])}
        new = {lid: port for lid, port in after.get(sw, {}).get("rows", [])}
        for lid in sorted(set(old) | set(new)):
            if old.get(lid) != new.get(lid):
                out.append({"switch": sw, "lid": lid, "name": names.get(lid), "from": old.get(lid), "to": new.get(lid)})
    return out


class EntryFilterError(ValueError):
    """A filter that does not apply to the plan's kind of entries."""


def select_entries(entries: list[dict], switch: str | None = None, moved: bool = False) -> list[dict]:
    """The entries a reviewer asked for: on switches whose name matches the glob `switch`, and
    with `moved` only routes that change port (or go away) on a switch that had them — an
    entry with a `from` port.  What a new switch's whole table or a new destination adds has no
    `from`, and is what drowned the changes worth reading (5,169 of 8,341 lines in one growth).
    Ethernet plans change configuration lines, which have no port: `moved` is refused there."""
    from fnmatch import fnmatchcase

    if moved and entries and "from" not in entries[0]:
        raise EntryFilterError("--moved is for an InfiniBand plan's LFT entries; an Ethernet plan changes "
                               "configuration lines, narrow them with --switch")
    return [e for e in entries if (switch is None or fnmatchcase(e["switch"], switch))
            and (not moved or e["from"] is not None)]


def entry_lines(entries: list[dict]) -> list[str]:
    """`z0-leaf3  LID 0x0012 (node007-hca0): port 21 → 24`, one line per entry."""
    width = max((len(e["switch"]) for e in entries), default=0)

    def port(p: int | None) -> str:
        return "no route" if p is None else f"port {p}"

    return [f"{e['switch']:<{width}}  LID 0x{e['lid']:04x} ({e['name'] or '?'}): {port(e['from'])} → {port(e['to'])}"
            for e in entries]


def summary_json(plan: dict, entries: list[dict] | None = None) -> str:
    """The plan without its tables (what a script needs to judge it), plus its entries if given."""
    body = {k: v for k, v in plan.items() if k not in ("desired_lfts", "previous_lfts")}
    if entries is not None:
        body["entries"] = entries
    return json.dumps(body, indent=2) + "\n"


def changed_lines(plan: dict) -> list[dict]:
    """Every configuration line an Ethernet plan changes, switch by switch (natural order)."""
    return [{"switch": sw, "change": line} for sw in sorted(plan["switches"], key=natural)
            for line in plan["switches"][sw]["changes"]]


def line_lines(entries: list[dict]) -> list[str]:
    """`p0-lab-leaf0  + router bgp 65001`, one line per changed configuration line."""
    width = max((len(e["switch"]) for e in entries), default=0)
    return [f"{e['switch']:<{width}}  {e['change']}" for e in entries]


def as_built_lines(as_built: dict | None) -> list[str]:
    """What a plan routes around, declared and observed, one line each (none if nothing is down)."""
    if not as_built or not as_built.get("cables_down"):
        return []
    how = f"; tables: {as_built['routing']}" if as_built.get("routing") else ""
    n = len(as_built["cables_down"])
    out = [f"as built: {n} design cable{'s' if n != 1 else ''} down, routed around{how} (`loom status MODEL` shows them)"]
    for part, hint in (("declared", "`loom mark up` when it is back"),
                       ("observed", "not seen up now (a failure, or a new cable not pulled yet); "
                                    "`loom mark down MODEL NAME --reason ...` declares a failure")):
        names = [d["name"] + (f" ({d['reason']})" if d.get("reason") else "") for d in as_built.get(part, [])]
        if names:
            out.append(f"  {part}: {', '.join(names[:8])}" + (f" and {len(names) - 8} more" if len(names) > 8 else "")
                       + f"; {hint}")
    return out


def sm_line(sm: dict) -> str:
    """`master mgmt0 (LID 27, priority 15)`: one SM port as a plan recorded it (`sminfo.py`)."""
    where = [] if sm["name"] == f"LID {sm['lid']}" else [f"LID {sm['lid']}"]  # a port no SM host is known at
    if sm.get("guid") is None:
        return f"{sm['name']}{f' ({where[0]})' if where else ''}: no SM answering"
    return f"{sm['state']} {sm['name']} ({', '.join([*where, 'priority ' + str(sm['priority'])])})"


def print_lft_plan(out: Console, p: dict, saved: Path, changed: bool) -> None:
    """An InfiniBand plan as `loom plan` and `loom show` print it: drift, standbys, QoS, partitions, the LFT
    entries per switch, the destinations that move, balance before and after."""
    c, q, pk = p["changes"], p["qos"], p.get("partitions") or {}
    sms = p.get("subnet_managers") or []
    if sms:
        out.print("subnet manager: " + "; ".join(sm_line(s) for s in sms), highlight=False, markup=False)
    if p["drift"]:
        out.print(f"[yellow]drift:[/yellow] {escape(p['drift'])}", highlight=False)
    for line in p.get("standbys_differing", []):
        out.print(f"standby: {escape(line)} (apply writes the master's files to every standby)", highlight=False)
    down = as_built_lines(p.get("as_built"))
    for line in down:
        out.print(line, highlight=False, markup=False)
    new = p.get("new_switches") or []
    if new:
        out.print(f"in service since loom applied last: {len(new)} switch{'es' if len(new) != 1 else ''} new or back "
                  f"({', '.join(new[:8])}{' …' if len(new) > 8 else ''}); their tables are added, not drift",
                  highlight=False, markup=False)
    if not changed:
        what = ["routing"] + (["QoS"] if q["intent"] else []) + (["P_Keys"] if pk.get("live_sha256") else [])
        out.print(f"[green]No changes.[/green] The live tables of {escape(p['fabric'])} match the model"
                  + (" as it stands" if down else "")
                  + (f" ({', '.join(what[:-1])} and {what[-1]})." if len(what) > 1 else "."))
        return
    if q["conf_changes"] or q["ports_differing"]:
        out.print(f"QoS: {'OpenSM QoS options change; ' if q['conf_changes'] else ''}"
                  f"{q['ports_differing']} ports hold other SL2VL/VLArb tables than the model wants")
        for e in q["examples"]:
            out.print(f"    {e}", highlight=False, markup=False)
    if pk.get("conf_changes") or pk.get("ports_differing"):
        out.print(f"Partitions: {'OpenSM partitions.conf changes; ' if pk['conf_changes'] else ''}"
                  f"{pk['ports_differing']} ports hold other P_Key tables than the model wants")
        for e in pk["examples"]:
            out.print(f"    {e}", highlight=False, markup=False)
    if not c["entries_changed"]:
        out.print("Routing: no LFT changes.")
        return
    out.print(f"Plan for {escape(p['fabric'])}: [bold]{c['entries_changed']}[/bold] LFT entries on "
              f"[bold]{c['switches_touched']}[/bold] switches, {len(c['destinations_moved'])} destinations move"
              + (f", {len(c['destinations_added'])} added (new, or back in service)" if c.get("destinations_added") else "")
              + (f", {len(c['destinations_removed'])} removed (gone from the model, or out of service)"
                 if c.get("destinations_removed") else ""))
    t = Table("switch", "entries changed")
    for name, n in sorted(c["per_switch"].items(), key=lambda kv: (-kv[1], natural(kv[0])))[:15]:
        t.add_row(escape(name), str(n))
    if len(c["per_switch"]) > 15:
        t.add_row(f"... {len(c['per_switch']) - 15} more", "")
    out.print(t)
    moved = c["destinations_moved"]
    out.print("destinations moved: " + ", ".join(f"{escape(m['name'])} (LID {m['lid']})" for m in moved[:12])
              + (f", ... {len(moved) - 12} more" if len(moved) > 12 else ""), highlight=False)
    if removed := c.get("destinations_removed"):
        out.print("destinations removed: " + ", ".join(f"{escape(m['name'])}" + ("" if m["name"].startswith("LID ") else
                                                        f" (LID {m['lid']})") for m in removed[:12])
                  + (f", ... {len(removed) - 12} more" if len(removed) > 12 else ""), highlight=False)
    b0, b1 = p["balance_before"], p["balance_after"]
    # storage is None on a fabric without storage nodes: then there is nothing to say about it
    storage = (f"; storage before {b0['storage'] if b0['storage'] is not None else 'none'}, "
               f"after {b1['storage'] if b1['storage'] is not None else 'none'}"
               if (b0["storage"], b1["storage"]) != (None, None) else "")
    out.print(f"balance (max destinations per leaf up-port / bound): before {b0['max_dest_per_up_port']}/{b0['lower_bound']}, "
              f"after {b1['max_dest_per_up_port']}/{b1['lower_bound']}{storage}")
    out.print(f"saved in {saved}; apply with: loom apply {saved}", highlight=False, markup=False)


def print_frr_plan(out: Console, p: dict, saved: Path, changed: bool) -> None:
    """An Ethernet plan as `loom plan` and `loom show` print it: per switch the configuration
    lines that change, the routes that differ, the BGP sessions and the first change."""
    if p["drift"]:
        out.print(f"[yellow]drift:[/yellow] {escape(p['drift'])}", highlight=False)
    sw = p["switches"]
    sessions = [sum(s["sessions"][i] for s in sw.values()) for i in (0, 1)]
    bgp = f"; BGP sessions {sessions[0]}/{sessions[1]} established" if sessions[1] else ""
    down = as_built_lines(p.get("as_built"))
    for line in down:
        out.print(line, highlight=False, markup=False)
    if not changed:
        out.print(f"[green]No changes.[/green] Every switch of {escape(p['fabric'])} runs its configuration and holds the "
                  f"routes the model wants{' as it stands' if down else ''}{bgp}.", highlight=False)
        return
    c = p["changes"]
    out.print(f"Plan for {escape(p['fabric'])}: [bold]{c['lines_changed']}[/bold] configuration lines on [bold]"
              f"{c['switches_touched']}[/bold] switches; routes differ from the intent on {c['fib_differing']} switches{bgp}",
              highlight=False)
    t = Table("switch", "config lines", "routes differing", "BGP sessions", "first change")
    changed = [n for n in sw if sw[n]["changes"] or sw[n]["fib"]]
    for n in sorted(changed, key=natural)[:15]:
        s = sw[n]
        t.add_row(escape(n), str(len(s["changes"])), str(len(s["fib"])), f"{s['sessions'][0]}/{s['sessions'][1]}",
                  escape((s["changes"] or s["fib"])[0]))
    if len(changed) > 15:
        t.add_row(f"... {len(changed) - 15} more", "", "", "", "")
    out.print(t)
    out.print(f"saved in {saved}; apply with: loom apply {saved}", highlight=False, markup=False)
