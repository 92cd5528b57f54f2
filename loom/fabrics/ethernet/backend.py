"""The Ethernet backend (`loom.fabrics.backend.Backend`): multi-plane RoCE switches running FRR —
the live simulation (FRR per switch and every host in network namespaces) or real switches over
SSH — planned per switch with FRR's own diff and the kernel FIB, applied with frr-reload.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

from loom.expand import Fabric
from loom.fabrics.backend import Ui, Unsupported


class Ethernet:
    technology = "ethernet"
    plan_label = "read switches + render + diff"
    routing_resource = False  # the switches' configurations are `loom plan`'s, not Terraform's loom_routing

    # ---------------------------------------------------------------- the simulated fabric
    def sim_up(self, model: Path, fabric: Fabric, ui: Ui) -> None:
        """Bring the fabric's planes up live (FRR per switch, hosts with per-NIC source routing),
        switches on the configuration loom applied last (else interfaces only).  An interrupted
        apply is settled here too: a verified one is recorded first (the switches then start on
        its configurations), any other restored once the daemons run (a restore reloads them)."""
        from loom.push import audit
        from loom.push.engine import take_lock
        from loom.push.errors import PlanError
        from loom.push.journal import Journal

        from .apply import STARTUP, recover
        from .lab import needed_daemons, too_big
        from .plan import intent_of
        from .target import FrrSimTarget

        problem = too_big(fabric)
        if problem:
            raise PlanError(problem)
        intent = ui.phase("route + render", intent_of, fabric)
        d = FrrSimTarget.of(fabric.name)
        lock = take_lock(d, "sim up", ui.progress, fabric=fabric.name)
        try:
            pending = Journal(d.dir).load()
            if pending is None or pending.get("phase") == "verified" or d.lab.is_up():
                recover(d, progress=ui.progress)
            saved = d.dir / STARTUP
            startup = {n: (saved / f"{n}.conf").read_text() if (saved / f"{n}.conf").exists() else intent.startup[n]
                       for n in intent.configs}
            daemons = {n: needed_daemons(intent.configs[n]) for n in intent.configs}
            what = ui.phase("sim up", d.lab.up, fabric, startup, daemons)
            audit.record(d.dir, "sim up", outcome=what, fabric=fabric.name)
            recover(d, progress=ui.progress)  # the restore of an apply that died while the fabric was down
        except OSError as exc:
            raise PlanError(f"cannot write the state of {fabric.name} in {d.dir}: {exc.strerror}") from None
        finally:
            lock.release()
        s = d.lab.status()
        applied = sum(1 for n in intent.configs if (d.dir / STARTUP / f"{n}.conf").exists())
        ui.out.print(f"{fabric.name}: {what} — {s['switches']} switches ({s['daemons']} FRR daemons) and {s['hosts']} "
                     f"hosts in network namespaces lm{s['tag']}-*; switches start with "
                     + (f"the configurations loom applied last ({applied})" if applied else
                        "their bootstrap configuration (interfaces, no routing): `loom plan` then `loom apply`")
                     + f"; state in {d.dir}", highlight=False, markup=False)

    def sim_down(self, fabric: Fabric, force: bool, ui: Ui) -> None:
        from loom.push import audit
        from loom.push.engine import lock_for_down

        from .apply import RESOLVER
        from .target import FrrSimTarget

        d = FrrSimTarget.of(fabric.name)
        lock = lock_for_down(d, RESOLVER, force, ui.progress)
        try:
            stopped = d.lab.down()
            audit.record(d.dir, "sim down" if lock else "sim down forced", stopped=len(stopped))
        finally:
            if lock:
                lock.release()
        ui.out.print(f"stopped {len(stopped)} FRR daemons and the namespaces of {fabric.name}" if stopped
                     else "nothing was running", highlight=False)

    def sim_status(self, fabric: Fabric, as_json: bool, ui: Ui) -> bool:
        from loom.push.journal import Journal
        from loom.push.links import links_down
        from loom.push.lock import is_free

        from .lab import FrrLab

        lab = FrrLab.of(fabric.name)
        s = {**lab.status(), "technology": "ethernet", "lock_free": is_free(lab.dir),
             "interrupted_apply": Journal(lab.dir).load() is not None, "links_down": links_down(lab.dir)}
        if as_json:
            sys.stdout.write(json.dumps(s, indent=2) + "\n")
        else:
            ui.out.print(f"live FRR simulation: {'up' if s['up'] else 'down'}  switches: {s['switches']}  "
                         f"daemons: {s['daemons']}  hosts: {s['hosts']}  lock: {'free' if s['lock_free'] else 'held'}"
                         + (f"  not running: {', '.join(s['down'][:5])}" if s["down"] else "")
                         + (f"  links down: {', '.join(s['links_down'])}" if s["links_down"] else "")
                         + ("  an interrupted apply awaits recovery (the next `loom plan`, `apply`, `sim up` or "
                            "`sim down` resolves it)" if s["interrupted_apply"] else ""), highlight=False, markup=False)
        return s["up"]

    def sim_dead(self, fabric: Fabric) -> list[str] | None:
        from .lab import FrrLab

        lab = FrrLab.of(fabric.name)
        return lab.status()["down"] if lab.state else None

    def link_event(self, model: Path, fabric: Fabric, cables: list[int], up: bool, ui: Ui) -> list[str]:
        """Take veth pairs down or up in the live simulation; the cable IDs that changed, audited."""
        from loom.push.links import audit_link_event, record_links
        from loom.push.state import sim_not_running

        from .lab import FrrLab

        lab = FrrLab.of(fabric.name)
        if not lab.is_up():
            raise Unsupported(sim_not_running(fabric.name, lab.dir, model), 1)
        changed = record_links(lab.dir, fabric, cables, up, lambda cs, u: lab.set_cables(fabric, cs, u))
        return audit_link_event(lab.dir, up, changed)

    # ---------------------------------------------------------------- route and check
    def route_files(self, fabric: Fabric, tables) -> dict[str, str]:
        return {}  # the switches' configurations are `loom configs`'

    def qos(self, fabric: Fabric):
        return None  # RoCE QoS is checked per switch (`check_extra`), not as OpenSM's SL/VL plan

    def drained_links(self, fabric: Fabric, target_kind: str) -> dict[str, list[str]]:
        return {}  # no link watcher drains Ethernet links (BFD takes a failing one out on the switch)

    def check_extra(self, fabric: Fabric) -> dict:
        from loom.checks.roce_qos import check_fabric

        return {"roce_qos": check_fabric(fabric)}

    def print_check(self, ui: Ui, name: str, planes: list[dict], cabling: dict) -> None:
        from loom.render.roce_report import print_lossless, print_plane

        for p in planes:
            print_plane(ui.out, name, p)
        print_lossless(ui.out, name, cabling["roce_qos"])

    # ---------------------------------------------------------------- plan and apply
    def target(self, fabric: Fabric, kind: str, inventory: Path | None, ssh_config: Path | None):
        from .targets import target_named

        return target_named(fabric, kind, inventory, ssh_config)

    def prepare_plan(self, model: Path, fabric: Fabric, ui: Ui, target) -> Fabric:
        return fabric  # the plan itself routes and renders

    def make_plan(self, model: Path, fabric: Fabric, target) -> dict:
        from .plan import make_frr_plan

        return make_frr_plan(model, fabric, target)

    def has_changes(self, plan: dict) -> bool:
        from .plan import frr_has_changes

        return frr_has_changes(plan)

    def print_plan(self, ui: Ui, plan: dict, saved: Path) -> None:
        from loom.render.plan_report import print_frr_plan

        print_frr_plan(ui.out, plan, saved, self.has_changes(plan))

    no_entries = "no configuration lines change"

    def plan_entries(self, plan: dict) -> list[dict]:
        """Every configuration line the plan changes (`loom show PLAN --entries`)."""
        from loom.render.plan_report import changed_lines

        return changed_lines(plan)

    def entry_lines(self, entries: list[dict]) -> list[str]:
        from loom.render.plan_report import line_lines

        return line_lines(entries)

    def check_shape(self, plan: dict, path: Path) -> None:
        from .plan import check_shape

        check_shape(plan, str(path))

    def review(self, plan: dict) -> list[str]:
        return []  # apply renders the model again and refuses other configurations (`check_plan`)

    def settle(self, target, progress: Callable[[str], None]) -> str | None:
        from .apply import settle

        return settle(target, progress)

    def apply(self, plan: dict, plan_path: Path, progress: Callable[[str], None], keep_live: bool,
              from_edited: bool = False, timeout: float | None = None):
        from .apply import READ_BACK_TIMEOUT, apply_frr_plan

        if from_edited:
            raise Unsupported("--from-edited-plan is for InfiniBand plans: an Ethernet apply renders the model's "
                              "configurations again and refuses a plan holding others")
        return apply_frr_plan(plan, plan_path, timeout or READ_BACK_TIMEOUT, progress=progress, keep_live=keep_live)

    # ---------------------------------------------------------------- InfiniBand only
    def watcher(self, model: Path, fabric: Fabric, target, hold_down: float, log: Callable,
                health_interval: float | None = None):
        raise Unsupported(f"{model}: the watcher follows OpenSM on InfiniBand fabrics; {fabric.name} is ethernet "
                          "(BGP reroutes around a failed link by itself)")

    def serve_metrics(self, watcher, address: str):
        raise Unsupported("--metrics serves the InfiniBand watcher's metrics")

    def link_health(self, model: Path, fabric: Fabric, target, interval: float) -> tuple[list, float]:
        raise Unsupported(f"{model}: link health reads InfiniBand port counters (PMA); {fabric.name} is ethernet")

    def require_discovery(self, model: Path, fabric: Fabric) -> None:
        raise Unsupported(f"{model}: discover reads InfiniBand fabrics (ibnetdiscover); {fabric.name} is {fabric.technology}")

    def discover_text(self, fabric: Fabric, target) -> tuple[str, str]:
        raise Unsupported(f"discover reads InfiniBand fabrics (ibnetdiscover); {fabric.name} is {fabric.technology}")

    def opensm_recompute(self, fabric: Fabric, failure, design, engines: list[str], ui: Ui) -> dict:
        raise Unsupported(f"--vs-opensm needs an InfiniBand fabric and the simulator; {fabric.name} is ethernet")

    def configs_allowed(self, model: Path, fabric: Fabric) -> None:
        pass


BACKEND = Ethernet()
