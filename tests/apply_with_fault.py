"""`loom apply PLAN` in a process that signals itself when the apply reaches a journal phase:
`python tests/apply_with_fault.py PLAN PHASE SIGNAL` (PHASE: intent, written, reloaded,
verified; SIGNAL: KILL, INT, TERM) — an operator's Ctrl-C, a kill, or power loss at that point.
`python tests/apply_with_fault.py --run PHASE SIGNAL ARGS...` runs `loom ARGS...` instead (a
watcher killed in the middle of its reroute)."""

from __future__ import annotations

import os
import signal
import sys

from loom.cli import app
from loom.push.journal import Journal

plan, phase, sig = sys.argv[1], sys.argv[2], getattr(signal, "SIG" + sys.argv[3])
command = sys.argv[4:] if plan == "--run" else ["apply", plan]
real_begin, real_mark = Journal.begin, Journal.mark


def begin(self, record, texts=None):
    real_begin(self, record, texts)
    if phase == "intent":
        os.kill(os.getpid(), sig)


def mark(self, p, **fields):
    real_mark(self, p, **fields)
    if p == phase:
        os.kill(os.getpid(), sig)


Journal.begin, Journal.mark = begin, mark
app(command)
