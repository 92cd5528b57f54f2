"""The last expansion step: every name the patterns made is safe and unique.

Patterns are checked before the expansion (`loom.model.limits.patterns`), but only the names
themselves show what a pattern, a zone name and a count make together: `{group}/{index}`, a
leaf named like a node, two racks called the same.  Switch, node, NIC and rack names end up in
file names, config lines and scripts, so each must pass `loom.model.names.name_problem`, and a
node or NIC must not be named like a switch (OpenSM, ibsim and the sheets key on names).
"""

from __future__ import annotations

from loom.model.errors import ModelError, Problem
from loom.model.names import name_problem


def _switch_loc(d, role: str) -> tuple:
    return ("naming", "bigraph" if role in ("upper", "lower") else role)


def check_names(d) -> None:
    problems: list[Problem] = []

    def refuse(loc: tuple, message: str, fix: str) -> None:
        if not any(p.loc == loc for p in problems):  # one problem per pattern is enough
            problems.append(Problem("", message, fix, loc=loc))

    group_of = {g.name: i for i, g in enumerate(d.model.node_groups)}
    owner: dict[str, str] = {}
    for s in d.switches:
        loc = _switch_loc(d, s["role"])
        why = name_problem(s["name"])
        if why:
            refuse(loc, f"switch name {s['name'][:70]!r} is not a safe name: {why}",
                   "keep names to letters, digits, '-', '_' and '.' (check the zone name and the naming pattern)")
        elif s["name"] in owner:
            refuse(loc, f"two switches are both named `{s['name']}`", "make the naming patterns include {zone}, {pod} and {index}")
        owner[s["name"]] = "switch"
    for n in d.nodes:
        loc = ("node_groups", group_of[n["group"]], "name_pattern")
        why = name_problem(n["name"])
        if why:
            refuse(loc, f"node name {n['name'][:70]!r} is not a safe name: {why}",
                   "keep names to letters, digits, '-', '_' and '.' (check the group name and name_pattern)")
        elif owner.get(n["name"]) == "switch":
            refuse(loc, f"node `{n['name']}` has the name of a switch", "give nodes and switches different names")
        owner.setdefault(n["name"], "node")
    for p in d.ports:
        if owner.setdefault(p["ca"], "ca") != "ca":
            node = d.nodes[p["node"]]
            refuse(("node_groups", group_of[node["group"]], "name_pattern"),
                   f"NIC `{p['ca']}` (node {node['name']}, NIC {p['nic']}) has the name of another switch or node",
                   "give nodes names that cannot collide with <node>-<nic> of another node")
    seen: set[str] = set()
    for r in d.racks:
        why = name_problem(r) or (f"two racks are both named `{r}`" if r in seen else None)
        if why:
            refuse(("layout", "rack_name"), f"rack name {r[:70]!r}: {why}", "use {row} and {rack} in layout.rack_name")
        seen.add(r)
    if problems:
        raise ModelError("", problems)
