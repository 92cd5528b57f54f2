"""`loom discover` for a technician: what differs from the model, in rack/RU/port terms, as text,
JSON or a change sheet (CSV, one line per action, in walking order of the kept end's rack)."""

from __future__ import annotations

import csv
import io
import json

ORDER = ("swapped", "miswired", "missing", "extra", "speed", "device-not-found", "unknown-device")
SHEET = ("kind", "cable_id", "action", "expected_rack", "expected_ru", "expected_device", "expected_port",
         "found_rack", "found_ru", "found_device", "found_port", "what")


def _sorted(report) -> list:
    return sorted(report.findings, key=lambda f: (ORDER.index(f.kind), f.cable_id))


def as_text(fabric: str, report) -> str:
    if report.clean:
        return (f"{fabric}: cabled as the model says — {report.checked} cables checked, "
                f"{len(report.mapping)} devices found and identified\n")
    counts = ", ".join(f"{n} {k}" for k, n in sorted(report.counts().items(), key=lambda kv: ORDER.index(kv[0])))
    lines = [f"{fabric}: {len(report.findings)} difference(s) from the model ({counts}); "
             f"{report.checked} cables checked, {len(report.mapping)} devices identified"]
    for f in _sorted(report):
        lines += [f"  [{f.kind}] {f.cable_id}: {f.what}", f"      → {f.action}"]
    return "\n".join(lines) + "\n"


def as_json(fabric: str, report) -> str:
    return json.dumps({"fabric": fabric, "clean": report.clean, "cables_checked": report.checked,
                       "devices_identified": len(report.mapping), "counts": report.counts(),
                       "findings": [f.as_dict() for f in _sorted(report)]}, indent=2) + "\n"


def _inert(value):
    """A cell a spreadsheet will not run: text read from the fabric (a node description is
    whatever the device says) that starts like a formula gets a leading quote (OWASP's advice)."""
    return "'" + value if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def as_csv(report) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SHEET)
    for f in _sorted(report):
        e, g = f.expected, f.found
        w.writerow([_inert(v) for v in [
            f.kind, f.cable_id, f.action,
            *(["", "", "", ""] if e is None else [e.rack, e.ru, e.device, e.port_name]),
            *(["", "", "", ""] if g is None else [g.rack, g.ru or "", g.device, g.port_name]), f.what]])
    return buf.getvalue()
