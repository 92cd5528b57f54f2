"""docs/cabling.md, written by `loom docs`: the columns of the cabling sheet, the labels and the
change sheet, from the tables that define them (so the reference cannot drift from the code)."""

from __future__ import annotations

from .cabling import COLUMN_DOC, COLUMNS
from .cabling_diff import COLUMN_DOC as CHANGE_DOC
from .labels import LINES, WIDTH


def columns_doc() -> str:
    lines = ["# Cabling sheet columns", "", "Generated from `loom/render/cabling.py` by `loom docs`.", "",
             "`loom cabling MODEL --format csv` writes one row per cable, in walking order (rack, RU, device,",
             "port of end A).  End A is the lower layer (the node, or the lower switch), end B the upper.", "",
             "| column | meaning |", "|---|---|"]
    lines += [f"| `{c}` | {COLUMN_DOC[c]} |" for c in COLUMNS]
    lines += ["", "## Labels (`--format labels`)", "",
              "One row per cable end (two per cable), in walking order: `cable_id`, `end` (A or B), `rack` (where the",
              f"label goes), `line1`..`line{LINES}`: the cable ID, this end, then `→` the far end (rack, RU, device, port),",
              f"each line at most {WIDTH} characters, for a wrap-around label printer.", "",
              "## HTML and XLSX", "",
              "`--format html`: a table of contents of the racks, the fabric picture (switches labelled, inter-zone",
              "links as red arcs, legend), then per rack its elevation (every device at its RUs; fill = zone or",
              "plane, strip = kind), its bill of materials (cables counted in the rack of their end A) and its cable",
              "ends.  `--format xlsx`: a sheet per row of racks (numbers as numbers, autofilter, widths, header",
              "repeated on every printed page), `BOM` and `Rack BOM`.", "",
              "## Change sheets (`loom cabling diff OLD NEW --format text|csv|labels|html|xlsx`)", "",
              "Built from the same churn as `loom diff` (`loom/expand/churn.py`): one row per cable to add, remove",
              "or re-pull, in walking order (rack by rack; at each rack remove, re-pull, add).  The text format ends",
              "with the pull list: per rack, the parts to bring and the parts coming back.  `labels`: the labels",
              "above for the added and re-pulled cables only.  `html` and `xlsx`: NEW's sheet with those rows marked",
              "(green new, yellow re-pulled; XLSX a first column `change`), the removals listed apart (XLSX sheet",
              "`Removed`), new devices marked NEW in the elevations; `--only-changes` keeps only what the change",
              "touches ([growing the floor](growth.md)).  The CSV columns:", "",
              "| column | meaning |", "|---|---|"]
    lines += [f"| `{c}` | {d} |" for c, d in CHANGE_DOC.items()]
    return "\n".join(lines) + "\n"
