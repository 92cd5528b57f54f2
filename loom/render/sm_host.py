"""What a subnet-manager host holds for Loom, rendered once for `loom apply` over SSH and for the
Ansible `opensm` role (`loom inventory` writes these same texts, its filter merges the options):

- the OpenSM options file: the site's own settings kept, Loom's keys (routing by the file
  engine, its tables, pinned LIDs, priority, QoS) in one marked block, and any site line that
  sets one of Loom's keys commented out (OpenSM would otherwise take whichever comes last);
- the forwarding tables (`lfts_file`) and `guid2lid` in OpenSM's cache directory;
- the partitions (`partition_config_file`, OpenSM's default path unless the inventory says);
- the systemd drop-in that runs OpenSM with that options file.

Paths are per host (`SmPaths`): Debian's defaults, or what the inventory sets.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from loom.render.templates import render

BEGIN = "# >>> loom: managed options (loom apply / ansible role opensm); edit the model, not this block"
END = "# <<< loom: managed options"
KEY = re.compile(r"^\s*([A-Za-z0-9_]+)\s")


@dataclass(frozen=True)
class SmPaths:
    """Where OpenSM's inputs live on one SM host (inventory variables `opensm_<field>`)."""

    conf: str = "/etc/opensm/opensm.conf"
    lfts: str = "/etc/opensm/loom-lfts.dump"
    partitions: str = "/etc/opensm/partitions.conf"  # OpenSM's own default path
    cache_dir: str = "/var/cache/opensm"
    log: str = "/var/log/opensm.log"
    pidfile: str = "/run/opensm.pid"

    @property
    def guid2lid(self) -> str:
        return f"{self.cache_dir}/guid2lid"

    def as_dict(self) -> dict:
        return asdict(self)


# the inventory variable of each path (the opensm role's defaults and the SSH target read them)
INVENTORY_VARS = {"conf": "opensm_conf_path", "lfts": "opensm_lfts_path", "partitions": "opensm_partitions_path",
                  "cache_dir": "opensm_cache_dir",
                  "log": "opensm_log_path", "pidfile": "opensm_pidfile"}


def routing_options(paths: SmPaths, priority: int) -> str:
    return render("opensm/loom-routing.conf.j2", lfts_path=paths.lfts, priority=priority, partitions_path=paths.partitions)


def managed_block(paths: SmPaths, priority: int, qos_conf: str) -> str:
    """Loom's options for one host: routing first, then the QoS options of the plan."""
    return routing_options(paths, priority) + qos_conf


def _keys(text: str) -> set[str]:
    return {m.group(1) for line in text.splitlines() if not line.lstrip().startswith("#") and (m := KEY.match(line + " "))}


def site_part(text: str) -> str:
    """The site's own lines: the file without Loom's block, lines Loom commented back as they were."""
    lines, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.startswith(BEGIN):
            inside = True
        elif line.startswith(END):
            inside = False
        elif not inside:
            lines.append(line[len("#loom# "):] if line.startswith("#loom# ") else line)
    return "".join(lines)


def merge(site_text: str, block: str) -> str:
    """The options file: the site's settings, those that set a key of `block` commented out
    (`#loom# `, put back if Loom's block goes), then Loom's block."""
    ours = _keys(block)
    kept = "".join(f"#loom# {line}" if _keys(line) & ours else line
                   for line in site_part(site_text).splitlines(keepends=True))
    if kept and not kept.endswith("\n"):
        kept += "\n"
    return f"{kept}{BEGIN}\n{block}{END}\n"


def managed_part(text: str) -> str | None:
    """The content of Loom's block, or None when the file has none."""
    m = re.search(rf"^{re.escape(BEGIN)}\n(.*?)^{re.escape(END)}$", text, re.M | re.S)
    return m.group(1) if m else None


def qos_part(text: str | None, paths: SmPaths, priority: int) -> str | None:
    """The QoS options Loom wrote into an options file (what a plan compares), or None when
    Loom's block is missing; a block whose routing part was edited is returned whole, so it
    differs from any plan and is rewritten."""
    block = managed_part(text) if text is not None else None
    if block is None:
        return None
    head = routing_options(paths, priority)
    return block[len(head):] if block.startswith(head) else block


def unit(paths: SmPaths) -> str:
    return render("opensm/opensm.service.j2", cache_dir=paths.cache_dir, conf_path=paths.conf, log_path=paths.log)


@dataclass(frozen=True)
class WatchUnit:
    """`loom watch` as a systemd service on the master SM host (role variables `opensm_watch_<field>`)."""

    model: str  # the model file on the host
    loom: str = "/opt/loom/bin/loom"
    inventory: str = "/etc/loom/inventory"
    state_dir: str = "/var/lib/loom"
    interval: float = 5.0
    hold_down: float = 10.0


def watch_unit(w: WatchUnit) -> str:
    return render("opensm/loom-watch.service.j2", **asdict(w))

