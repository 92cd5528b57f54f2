"""Cable labels for a label printer: one per cable end, wrapped for a wrap-around label.

Each label reads "ID · this end → far end": the cable ID on the first line, then this end and
the far end (rack, RU, device, port), each line at most `WIDTH` characters (words are kept
whole; a word longer than the line is cut).  `loom cabling MODEL --format labels` writes them
as CSV, one row per label, in walking order: the columns printers' templates bind to.
"""

from __future__ import annotations

import csv
import io

from .cabling import Cable, End

WIDTH = 25  # characters per line of a ~25 mm wrap-around label at the usual font
LINES = 4


def _wrap(text: str, width: int = WIDTH) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        word = word[:width]
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _end(e: End) -> str:
    return f"{e.rack} U{e.ru} {e.device} {e.port}"


def label_lines(cable: Cable, near: End, far: End) -> list[str]:
    """The label on the `near` end of `cable`: ID · this end → far end, in lines of WIDTH."""
    lines = _wrap(cable.cable_id) + _wrap(_end(near)) + _wrap("→ " + _end(far))
    if len(lines) > LINES:  # keep ID and far end whole: the far end is what the technician looks for
        lines = _wrap(cable.cable_id) + _wrap(f"{near.device} {near.port}") + _wrap("→ " + _end(far))
    return lines[:LINES]


def labels(plan: list[Cable]) -> list[dict]:
    out = []
    for cable in plan:
        for end, near, far in (("A", cable.a, cable.b), ("B", cable.b, cable.a)):
            lines = label_lines(cable, near, far)
            out.append({"cable_id": cable.cable_id, "end": end, "rack": near.rack,
                        **{f"line{i + 1}": (lines[i] if i < len(lines) else "") for i in range(LINES)}})
    return out


def to_labels_csv(plan: list[Cable]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["cable_id", "end", "rack", *(f"line{i + 1}" for i in range(LINES))],
                       lineterminator="\n")
    w.writeheader()
    w.writerows(labels(plan))
    return buf.getvalue()
