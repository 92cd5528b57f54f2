"""Compare two bench runs: `python bench/compare.py OLD NEW` (each a `make bench` JSON,
`bench/results/<time>.json`, or one bench's file).  Prints every figure old → new with the
change, which way is better, and the target status of the new run; figures found in one run
only are listed as added or gone.  Exit 1 when a figure that met its target in OLD misses it
in NEW (a regression), else 0."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.figures import Figure  # noqa: E402


def load(path: Path) -> dict[tuple[str, str], Figure]:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        sys.exit(f"{path}: not a bench result ({exc}); give a file `make bench` wrote under bench/results/")
    benches = doc.get("benches", [doc]) if isinstance(doc, dict) else []
    out = {}
    for b in benches:
        for raw in b.get("figures", []) if isinstance(b, dict) else []:
            try:
                f = Figure(**raw)
            except TypeError as exc:
                sys.exit(f"{path}: a figure of bench {b.get('bench')!r} is malformed ({exc})")
            out[(f.bench, f.name)] = f
    if not out:
        sys.exit(f"{path}: holds no figures; give a file `make bench` wrote under bench/results/")
    return out


def change(old: Figure, new: Figure) -> str:
    if old.value is None or new.value is None:
        return ""
    if old.value == 0:
        return "±0" if new.value == 0 else "new"
    pct = (new.value - old.value) / abs(old.value) * 100
    better = (pct < 0) == (new.better == "lower")
    return f"{pct:+.0f}% ({'better' if better else 'worse'})" if abs(pct) >= 0.5 else "±0"


def main(old_path: str, new_path: str) -> int:
    old, new = load(Path(old_path)), load(Path(new_path))
    t = Table(title=f"{old_path} → {new_path}")
    for col in ("bench", "figure", "old", "new", "change", "target", "now"):
        t.add_column(col, justify="right" if col in ("old", "new") else "left")
    fmt = lambda f: "—" if f is None else f.shown()  # noqa: E731
    regressions = 0
    for key in list(old) + [k for k in new if k not in old]:
        o, n = old.get(key), new.get(key)
        if n is None:
            t.add_row(*key, fmt(o), "gone", "", o.target_text(), "")
            continue
        regressed = o is not None and o.met is True and n.met is False
        regressions += regressed
        t.add_row(*key, fmt(o) if o else "added", fmt(n), change(o, n) if o else "", n.target_text(),
                  ("MISS (was met)" if regressed else n.verdict()))
    Console(width=200).print(t)
    return 1 if regressions else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python bench/compare.py OLD.json NEW.json")
    sys.exit(main(sys.argv[1], sys.argv[2]))
