"""`loom check --format html`: the check's verdicts as a picture, for people who would rather look.

The fabric is drawn as the cabling sheet draws it (`cabling_docs.fabric_picture`, the same
boxes, labels and zone fills); each switch link is coloured by the worse of its two directions'
load against its bound (`loom.checks.link_load`: destinations out of the port against the
as-built bound of its group, the figures of the balance check), links that are down are drawn
dashed grey (declared: the model's `missing_links`, the lock's `as_built`, `loom mark down`) and
links the watcher drained dashed purple (`watch.drained.json`).  Under the picture: per level a
histogram of ports by load/bound, the links over their bound, and the lists of links down and
drained with where each is known from.
"""

from __future__ import annotations

from html import escape

from loom.expand import HOST, Fabric

from .cabling_docs import fabric_picture
from .check_report import ebb_text
from .templates import render

#: load/bound buckets: (upper end of the bucket, colour, legend label); above the last: over bound
SCALE = ((0.0, "#cfcfcf", "no load"), (0.5, "#9ecae1", "≤ 50 % of bound"), (0.9, "#4292c6", "≤ 90 %"),
         (1.0, "#08519c", "at bound"))
OVER = "#d62728"
DOWN = ("#333", "6 3")  # stroke, dash
DRAINED = ("#9467bd", "2 2")
NO_FIGURE = "#e6e6e6"


def load_colour(ratio: float) -> str:
    return next((colour for top, colour, _ in SCALE if ratio <= top), OVER)


def link_states(design: Fabric, loads: dict, down: dict[str, str], drained: dict[str, list[str]]) -> dict[int, dict]:
    """Cable row of `design` → state of every switch link: `down` / `drained` (with why), or its
    load, bound, ratio and level (the worse of its two ends' ports)."""
    c = design.cables
    out = {}
    for i in range(len(c)):
        if c.a_kind[i] == HOST:
            continue
        cid = design.cable_id(i)
        if cid in down:
            out[i] = {"state": "down", "why": down[cid]}
            continue
        if cid in drained:
            out[i] = {"state": "drained", "why": "; ".join(drained[cid]) or "errors"}
            continue
        ends = [loads.get((design.switches[int(c.a_dev[i])].name, int(c.a_port[i]))),
                loads.get((design.switches[int(c.b_dev[i])].name, int(c.b_port[i])))]
        ends = [e for e in ends if e is not None]
        if not ends:
            out[i] = {"state": "unjudged"}
            continue
        worst = max(ends, key=lambda e: e.ratio)
        out[i] = {"state": "over" if worst.ratio > 1 else "ok", "load": worst.load, "bound": worst.bound,
                  "ratio": worst.ratio, "level": worst.level}
    return out


def _style(design: Fabric, states: dict[int, dict]):
    def style(i: int) -> tuple[str, float, str, str]:
        s, cid = states.get(i, {"state": "unjudged"}), design.cable_id(i)
        if s["state"] == "down":
            return DOWN[0], 1.6, DOWN[1], f"{cid}: down ({s['why']})"
        if s["state"] == "drained":
            return DRAINED[0], 1.8, DRAINED[1], f"{cid}: drained by the watcher ({s['why']})"
        if s["state"] == "unjudged":
            return NO_FIGURE, 0.4, "", f"{cid}: carries no CA destination"
        width = 2.2 if s["state"] == "over" else 0.3 + 0.9 * min(s["ratio"], 1.0)
        return (load_colour(s["ratio"]), round(width, 2), "",
                f"{cid}, its worse direction {s['level'].replace('_', ' ')}: {s['load']} "
                f"destination{'s' if s['load'] != 1 else ''}, bound {s['bound']} ({s['ratio']:.0%})")
    return style


def legend() -> list[tuple[str, float, str, str]]:
    return ([(colour, 1.2, "", label) for _, colour, label in SCALE] + [(OVER, 2.2, "", "over bound")]
            + [(DOWN[0], 1.6, DOWN[1], "down"), (DRAINED[0], 1.8, DRAINED[1], "drained")])


def histogram_svg(level: str, counts: list[int]) -> str:
    """Bars: ports of one level by load/bound, tenths of the bound then "over"; over in red."""
    bar, gap, h, top = 22, 3, 90, 18
    most = max(counts) or 1
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="histogram" data-level="{escape(level)}" '
             f'width="{len(counts) * (bar + gap) + 10}" height="{h + top + 30}">',
             f'<text x="2" y="12" font-size="11" font-weight="bold">{escape(level)}</text>']
    for k, n in enumerate(counts):
        over = k == len(counts) - 1
        bh = round(h * n / most, 1)
        x, y = 5 + k * (bar + gap), top + h - bh
        label = "over" if over else f"{k * 10}–{k * 10 + 10}%"
        parts.append(f'<rect class="{"bar over" if over else "bar"}" data-count="{n}" x="{x}" y="{y}" width="{bar}" '
                     f'height="{bh}" fill="{OVER if over else SCALE[2][1]}"><title>{label} of bound: {n} ports</title></rect>'
                     f'<text x="{x + bar / 2}" y="{y - 2}" font-size="8" text-anchor="middle">{n or ""}</text>'
                     f'<text x="{x + bar / 2}" y="{top + h + 11}" font-size="7" text-anchor="middle">'
                     f'{"over" if over else k * 10}</text>')
    parts.append(f'<text x="5" y="{top + h + 24}" font-size="8" fill="#666">ports by load / as-built bound (%)</text></svg>')
    return "".join(parts)


def to_html(design: Fabric, report: dict, planes: list[dict], states: dict[int, dict], histograms: dict[str, list[int]],
            down: list[tuple[str, str]], drained: dict[str, list[str]]) -> str:
    """The page; `down`: (switch or cable, where it is known from) as declared."""
    over = sorted(((design.cable_id(i), s) for i, s in states.items() if s["state"] == "over"),
                  key=lambda x: (-x[1]["ratio"], x[0]))
    rows = [{"plane": p["plane"], "engine": p["engine"], "reachable": p["reachable"], "deadlock_free": p["deadlock_free"],
             "balance": p["balance"]["within_bound"], "max": p["balance"]["max_dest_per_up_port"],
             "bound": p["balance"]["lower_bound"], "design_bound": p["balance"]["design_bound"],
             "qos": None if p["qos"] is None else p["qos"]["ok"], "ebb": ebb_text(p), "warnings": p.get("warnings", [])}
            for p in planes]
    counts = {k: sum(1 for s in states.values() if s["state"] == k) for k in ("ok", "over", "down", "drained", "unjudged")}
    return render("check/report.html.j2", fabric=report["fabric"], ok=report["ok"], planes=rows, counts=counts,
                  picture=fabric_picture(design, link_style=_style(design, states), link_legend=legend()),
                  histograms=[histogram_svg(level, h) for level, h in histograms.items()],
                  over=over[:50], over_total=len(over), down=down,
                  drained=sorted((k, "; ".join(v)) for k, v in drained.items()))
