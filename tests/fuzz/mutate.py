"""Structural mutation of the reference models: one case = a seed model and 1-3 mutations.

Mutations act on the parsed document (delete, retype, swap, extreme values, unknown
references, hostile names, duplicates, nudged numbers) or, rarely, on its text (truncation,
dropped or repeated lines).  A case is a pure function of (seed, index), so any case can be
re-made from its number alone.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from loom.model.reading import load_yaml

TOPOLOGY = Path(__file__).resolve().parents[2] / "topology"
#: Seed models and how often each is drawn: a valid mutant of fire-flyer-2 costs ~6 s to route,
#: check and render, of tiny ~0.3 s; a refused one ~0.02 s.
BASES = {"tiny": 30, "c4-dualport": 20, "fat-tree-3": 20, "eflops-bigraph": 14, "fire-flyer-2": 6, "roce-4plane": 1}

HOSTILE_NAMES = ["../../etc/passwd", "/tmp/x", "a/b", "..", "a\nb", "x\n0.0.0.0/0 via 6.6.6.6", "$(reboot)", "`id`",
                 "a;b", "[red]x[/red]", "[/x]", "a b", "x" * 300, "", "é", "\x00", "{index.__class__}", "{group.__init__}",
                 "{index:999999999}", "{zone!r}", "{", "}", "{0}", "{index[0]}", "-rf", "NCCL_IB_SL\nLD_PRELOAD"]
EXTREME_INTS = [0, -1, 1, 2, 3, 254, 255, 256, 1023, 1024, 49152, 0xBFFF, 0xC000, 65535, 2**31, 2**32 - 1, 2**32,
                2**63, 10**9, 10**18, 10**30]
EXTREME_FLOATS = [0.0, -0.0, 1e-300, 1e300, float("inf"), float("-inf"), float("nan"), 0.5, 1e9]
TEXT_VALUES = ["nosuch", "fat-tree-9", "HDR", "400GbE", "infiniband", "ethernet", "dual", "single", "0x10", "011",
               "yes", "~", "1e9", "10.0.0.0/33", "255.255.255.255/32", "0.0.0.0/0", "::/0"]


@dataclass
class Case:
    seed: int
    index: int
    base: str
    mutations: list[str] = field(default_factory=list)
    text: str = ""


def _paths(node, prefix=(), depth: int | None = None) -> list[tuple]:
    """Paths into `node`; with `depth`, none below it (a nested value planted by an earlier
    mutation is a value, not a place to mutate further)."""
    out = [prefix]
    deeper = None if depth is None else depth - 1
    if depth != 0 and isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,), deeper)
    elif depth != 0 and isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,), deeper)
    return out


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def _set(doc, path, value) -> None:
    _get(doc, path[:-1])[path[-1]] = value


def _strings(doc, depth: int | None = None) -> list[str]:
    return [v for p in _paths(doc, depth=depth) if p and isinstance(v := _get(doc, p), str)]


def _mutate(rng: random.Random, doc: dict) -> str:
    paths = [p for p in _paths(doc) if p]
    path = rng.choice(paths)
    value = _get(doc, path)
    op = rng.choices(["delete", "retype", "swap", "extreme", "reference", "hostile", "duplicate", "nudge", "rename_key", "faults"],
                     weights=[10, 8, 6, 12, 8, 12, 6, 20, 6, 12])[0]
    if op == "faults":
        return _faults(rng, doc)
    if op == "delete":
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
    elif op == "retype":
        _set(doc, path, rng.choice([None, True, "text", 7, 2.5, [], {}, [value], {"x": value}]))
    elif op == "swap":
        other = rng.choice(paths)
        try:
            a, b = copy.deepcopy(_get(doc, other)), copy.deepcopy(value)
            _set(doc, path, a)
            _set(doc, other, b)
        except (KeyError, IndexError, TypeError):
            return "swap (skipped: nested)"
    elif op == "extreme":
        _set(doc, path, rng.choice(EXTREME_FLOATS if isinstance(value, float) else EXTREME_INTS))
    elif op == "reference":
        _set(doc, path, rng.choice(_strings(doc) + TEXT_VALUES))
    elif op == "hostile":
        strings = [p for p in paths if isinstance(_get(doc, p), str)]
        path = rng.choice(strings) if strings and rng.random() < 0.8 else path
        _set(doc, path, rng.choice(HOSTILE_NAMES))
        if rng.random() < 0.3 and isinstance(_get(doc, path[:-1]), dict):  # a hostile key, too
            parent = _get(doc, path[:-1])
            parent[rng.choice(HOSTILE_NAMES)] = parent.pop(path[-1])
    elif op == "duplicate":
        lists = [p for p in paths if isinstance(_get(doc, p), list) and _get(doc, p)]
        if not lists:
            return "duplicate (skipped)"
        path = rng.choice(lists)
        items = _get(doc, path)
        items.insert(rng.randrange(len(items) + 1), copy.deepcopy(rng.choice(items)))
    elif op == "nudge":
        ints = [p for p in paths if isinstance(_get(doc, p), int) and not isinstance(_get(doc, p), bool)]
        if not ints:
            return "nudge (skipped)"
        path = rng.choice(ints)
        v = _get(doc, path)
        _set(doc, path, rng.choice([v + 1, v - 1, v * 2, v // 2, v + rng.randrange(1, 10), max(1, v - rng.randrange(1, 10))]))
    elif op == "rename_key":
        dicts = [p for p in _paths(doc) if isinstance(_get(doc, p), dict) and _get(doc, p)]
        path = rng.choice(dicts)
        parent = _get(doc, path)
        key = rng.choice(list(parent))
        parent[str(key) + rng.choice(["s", "_x", "2"])] = parent.pop(key)
        return f"rename_key {'.'.join(map(str, path + (key,)))}"
    return f"{op} {'.'.join(map(str, path))}"


def _faults(rng: random.Random, doc: dict) -> str:
    """What the floor does to a fabric: up-links missing (random ones, or every up-link of one
    leaf), switches down, nodes pinned to chosen leaves, inter-zone links moved to chosen leaves."""
    zones = [z for z in doc.get("zones", []) if isinstance(z, dict) and isinstance(z.get("leaf_up"), int)]
    if not zones:
        return "faults (skipped: no fat-tree zone)"
    z = rng.choice(zones)
    leaves = z.get("leaves", z.get("leaves_per_pod", 1) * z.get("pods", 1))
    leaves = leaves if isinstance(leaves, int) and 0 < leaves < 10_000 else 4
    what = rng.choice(["whole_leaf", "random_links", "switch_down", "pin", "inter_zone"])
    if what == "switch_down":
        role = rng.choice(["leaf", "spine", "core"])
        z.setdefault("missing_switches", []).append({"role": role, "index": rng.randrange(leaves + 1), "plane": rng.choice([0, 0, 1])})
        return f"faults: a {role} of zone {z.get('name')} down"
    if what == "whole_leaf":
        leaf = rng.randrange(leaves)
        z.setdefault("missing_links", []).extend({"leaf": leaf, "up_port": u} for u in range(min(z["leaf_up"], 256)))
        return f"faults: every up-link of leaf {leaf} of zone {z.get('name')} missing"
    if what == "random_links":
        links = z.setdefault("missing_links", [])
        for _ in range(rng.randrange(1, 6)):
            links.append({"leaf": rng.randrange(leaves + 1), "up_port": rng.randrange(max(1, z["leaf_up"]) + 1)})
        return f"faults: random up-links of zone {z.get('name')} missing"
    groups = [g for g in doc.get("node_groups", []) if isinstance(g, dict)]
    if what == "pin" and groups:
        g = rng.choice(groups)
        name = f"{g.get('name')}{rng.randrange(4):04d}" if "name_pattern" not in g else None
        if name is None:
            try:
                name = str(g["name_pattern"]).format(group=g.get("name"), index=rng.randrange(4), zone=z.get("name"))
            except (KeyError, IndexError, ValueError, AttributeError, TypeError):
                name = "nosuch"
        g.setdefault("pinned", {})[name] = [rng.randrange(leaves + 1) for _ in range(rng.choice([1, 2, 2, 8]))]
        return f"faults: {name} pinned"
    links = doc.get("inter_zone_links") or []
    if links and isinstance(links[0], dict) and isinstance(links[0].get("a"), dict):
        n = links[0].get("count", 1)
        links[0]["a"]["leaves"] = [rng.randrange(leaves + 1) for _ in range(n if isinstance(n, int) and 0 < n < 100 else 1)]
        return "faults: inter-zone links moved"
    return "faults (skipped)"


def _mutate_text(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    op = rng.choice(["truncate", "drop_line", "repeat_line", "swap_lines", "indent"])
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if op == "truncate":
        return text[: rng.randrange(len(text))], op
    if op == "drop_line":
        del lines[i]
    elif op == "repeat_line":
        lines.insert(i, lines[j])
    elif op == "swap_lines":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines[i] = "  " + lines[i]
    return "".join(lines), f"{op} line {i + 1}"


_DOCS: dict[str, dict] = {}


def make_case(seed: int, index: int) -> Case:
    rng = random.Random(f"{seed}:{index}")
    base = rng.choices(list(BASES), weights=list(BASES.values()))[0]
    if base not in _DOCS:
        _DOCS[base] = load_yaml(TOPOLOGY / f"{base}.yaml")
    doc = copy.deepcopy(_DOCS[base])
    case = Case(seed, index, base)
    for _ in range(rng.choice([1, 1, 1, 2, 2, 3])):
        try:
            case.mutations.append(_mutate(rng, doc))
        except (KeyError, IndexError, TypeError) as exc:  # the path vanished under an earlier mutation
            case.mutations.append(f"(skipped: {exc.__class__.__name__})")
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=200)
    if rng.random() < 0.08:
        text, what = _mutate_text(rng, text)
        case.mutations.append(what)
    case.text = text
    return case
