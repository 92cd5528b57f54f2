"""The isolation matrix of `loom check` (`loom.checks.partitions`) as text and Markdown: one
row and column per class of nodes with the same memberships, `x` where they can talk."""

from __future__ import annotations

from rich.markup import escape


def _verdicts(r: dict) -> list[tuple[str, bool]]:
    return [("tenants isolated", r["tenants_isolated"]), ("every compute node reaches storage", r["storage_reached"]),
            ("management reached only where the model says", r["management_isolated"])]


def _grid(r: dict) -> list[list[str]]:
    """Rows: [#, class, role, nodes, memberships, then one cell per class]."""
    rows = []
    for i, c in enumerate(r["classes"]):
        grants = ", ".join(f"{p} {'F' if m == 'full' else 'L'}" for p, m in c["memberships"].items())
        rows.append([str(i + 1), c["label"], c["role"], str(c["nodes"]), grants,
                     *["x" if t else "·" for t in r["matrix"][i]]])
    return rows


def print_partitions(out, name: str, r: dict) -> None:
    verdict = "[green]yes[/green]" if r["ok"] else "[red]NO[/red]"
    out.print(f"[bold]{escape(name)}[/bold] partitions: intent holds {verdict}  "
              + "  ".join(f"{w}: {'yes' if v else '[red]NO[/red]'}" for w, v in _verdicts(r)), highlight=False)
    out.print("  " + ", ".join(f"{p['name']} {p['pkey']} ({p['full']} full, {p['limited']} limited"
                               f"{', tenant' if p['tenant'] else ''})" for p in r["partitions"]), highlight=False)
    rows = _grid(r)
    head = ["#", "nodes", "role", "n", "memberships (F full, L limited)", *[str(i + 1) for i in range(len(rows))]]
    widths = [max(len(x[k]) for x in [head, *rows]) for k in range(len(head))]
    out.print("  who can talk to whom (x: yes, through a shared P_Key with a full member):", highlight=False)
    for row in [head, *rows]:
        out.print("    " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip(), highlight=False, markup=False)
    for p in r["problems"]:
        out.print(f"    [red]{escape(p)}[/red]", highlight=False)


def markdown_lines(r: dict) -> list[str]:
    rows = _grid(r)
    lines = ["", f"### Partitions: intent holds {'yes' if r['ok'] else '**NO**'}", ""]
    lines += [f"- {w}: {'yes' if v else '**NO**'}" for w, v in _verdicts(r)]
    lines += ["", "| # | nodes | role | n | memberships | " + " | ".join(str(i + 1) for i in range(len(rows))) + " |",
              "|" + "---|" * (5 + len(rows))]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    lines += [f"- {p}" for p in r["problems"]]
    return lines
