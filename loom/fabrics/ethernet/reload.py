"""FRR's own configuration diff, the one `frr-reload.py` applies: which lines a reload would
delete from a running configuration and add to it.

Debian's frr-pythontools installs `frr-reload.py` as a script; its `Config` (a configuration
parsed by `vtysh -m`, FRR's own parser, into contexts) and `compare_context_objects` are used
here as a library, on text, so a plan needs no live daemon to diff (the SSH target reads the
running configuration remotely and diffs it here).  `loom apply` runs the script itself
(`--reload`) on the switch.
"""

from __future__ import annotations

import importlib.util
import logging
import tempfile
import warnings
from functools import cache
from pathlib import Path

from loom.push.errors import TargetError

FRR_RELOAD = Path("/usr/lib/frr/frr-reload.py")


@cache
def _module():
    if not FRR_RELOAD.exists():
        raise TargetError(f"{FRR_RELOAD} is missing: install Debian's frr-pythontools (make setup)")
    spec = importlib.util.spec_from_file_location("frr_reload", FRR_RELOAD)
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():  # its regular expressions are not raw strings
        warnings.simplefilter("ignore", DeprecationWarning)
        spec.loader.exec_module(module)
    module.log.setLevel(logging.ERROR)  # it logs every step at INFO
    return module


def _entry(sign: str, ctx_keys: tuple, line: str | None) -> str:
    return sign + " " + " / ".join([*ctx_keys, *([line] if line else [])])


def delta(desired: str, running: str) -> list[str]:
    """What a reload changes: "- context / line" to delete, then "+ context / line" to add."""
    m = _module()
    with tempfile.TemporaryDirectory(prefix="loom-frr-diff-") as d:
        Path(d, "vtysh.conf").write_text("service integrated-vtysh-config\n")
        vtysh = m.Vtysh("/usr/bin", d, None, None)
        configs = []
        for name, text in (("desired.conf", desired), ("running.conf", running)):
            path = Path(d, name)
            path.write_text(text)
            conf = m.Config(vtysh)
            try:
                conf.load_from_file(str(path))
            except m.VtyshException as exc:
                raise TargetError(f"FRR's parser (vtysh -m) rejects the {name[:-5]} configuration: {exc}") from None
            configs.append(conf)
        to_add, to_del = m.compare_context_objects(*configs)
    return [_entry("-", k, l) for k, l in to_del] + [_entry("+", k, l) for k, l in to_add]
