"""The InfiniBand backend (`loom.fabrics.backend.Backend`): OpenSM subnet managers — the
simulated fabric (ibsim + OpenSM) or real ones over SSH — fed static LFTs, pinned LIDs and
Loom's QoS options, checked, pushed and read back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Callable

from loom.expand import Fabric
from loom.fabrics.backend import Ui, Unsupported


class InfiniBand:
    technology = "infiniband"
    plan_label = "read live + route + check + diff"
    routing_resource = True  # Terraform's loom_routing resource plans and applies its tables

    # ---------------------------------------------------------------- the simulated fabric
    def sim_up(self, model: Path, fabric: Fabric, ui: Ui) -> None:
        """ibsim with the fabric and OpenSM on its SM node, up to SUBNET UP (idempotent), under
        the fabric lock; an interrupted apply is resolved first and only checked tables load."""
        from loom.push import audit
        from loom.push.engine import take_lock
        from loom.push.errors import PlanError
        from loom.push.packing import digest_live
        from loom.qos import plan_qos
        from loom.render.opensm_qos import options_conf
        from loom.render.opensm import guid2lid
        from loom.routing import route

        from .apply import recover
        from .checked import check_input_file
        from .daemon import Daemons
        from .design import applied_last
        from .target import SimTarget

        tables = ui.phase("route", route, fabric, "fattree")[0]
        d = Daemons.of(fabric.name)
        qos = plan_qos(fabric.model)
        conf = options_conf(fabric.name, fabric.model, qos)
        lock = take_lock(d, "sim up", ui.progress, fabric=fabric.name)
        try:
            recover(SimTarget(d), progress=ui.progress)
            if not d.up_and_running() and d.lfts_file.exists():
                text = d.lfts_file.read_text()
                ours = applied_last(d.dir, digest_live(text))
                failed = check_input_file(fabric, text, ours)  # as the simulator cables it: marks too
                if failed:
                    rejected = d.lfts_file.with_name("lfts.dump.rejected")
                    d.lfts_file.replace(rejected)
                    ui.progress(f"the tables OpenSM would load fail {failed[0]}: moved to {rejected}; OpenSM starts "
                                "with its own routing — run `loom plan` and `loom apply`")
            what = ui.phase("sim up", d.start, fabric, guid2lid(tables), conf)
            audit.record(d.dir, "sim up", outcome=what, fabric=fabric.name)
        except OSError as exc:
            raise PlanError(f"cannot write the state of {fabric.name} in {d.dir}: {exc.strerror}") from None
        finally:
            lock.release()
        s = d.status()
        ui.out.print(f"{fabric.name}: {what} — ibsim pid {s['ibsim']['pid']}, OpenSM pid {s['opensm']['pid']} on "
                     f"{s['opensm']['sm_host']}, routing {s['routing_engine']}; state in {d.dir}", highlight=False)

    def sim_down(self, fabric: Fabric, force: bool, ui: Ui) -> None:
        from loom.push import audit
        from loom.push.engine import lock_for_down

        from .apply import RESOLVER
        from .daemon import Daemons
        from .target import SimTarget

        d = Daemons.of(fabric.name)
        lock = lock_for_down(SimTarget(d), RESOLVER, force, ui.progress)
        try:
            stopped = d.stop()
            audit.record(d.dir, "sim down" if lock else "sim down forced", stopped=stopped)
        finally:
            if lock:
                lock.release()
        ui.out.print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running", highlight=False)

    def sim_status(self, fabric: Fabric, as_json: bool, ui: Ui) -> bool:
        from loom.push.journal import Journal
        from loom.push.links import links_down
        from loom.push.lock import is_free

        from .daemon import Daemons

        d = Daemons.of(fabric.name)
        s = {**d.status(), "lock_free": is_free(d.dir), "interrupted_apply": Journal(d.dir).load() is not None,
             "links_down": links_down(d.dir)}
        s.update(_subnet_managers(d, s))
        if as_json:
            sys.stdout.write(json.dumps(s, indent=2) + "\n")
        else:
            def daemon(name: str) -> str:
                return f"running (pid {s[name]['pid']})" if s[name]["running"] else "down"

            ui.out.print(f"ibsim: {daemon('ibsim')}  OpenSM: {daemon('opensm')}  "
                         f"subnet up: {'yes' if s['subnet_up'] else 'no'}  sweeps: {s['sweeps']}  "
                         f"engine: {s['routing_engine']}  lock: {'free' if s['lock_free'] else 'held'}"
                         + (f"  links down: {', '.join(s['links_down'])}" if s["links_down"] else "")
                         + (f"\nsubnet manager: {s['subnet_manager']}" if s["subnet_manager"] else "")
                         + ("  [yellow]an interrupted apply awaits recovery (the next `loom plan`, `apply`, "
                            "`sim up` or `sim down` resolves it)[/yellow]" if s["interrupted_apply"] else ""), highlight=False)
        return s["subnet_up"]

    def sim_dead(self, fabric: Fabric) -> list[str] | None:
        from .daemon import Daemons

        return Daemons.of(fabric.name).dead()

    def link_event(self, model: Path, fabric: Fabric, cables: list[int], up: bool, ui: Ui) -> list[str]:
        """Pull or put back cables in ibsim (no fabric lock: the physical world changing); the
        cable IDs that changed, audited."""
        from loom.push.links import audit_link_event
        from loom.push.state import sim_not_running

        from .daemon import Daemons
        from .links import set_links

        d = Daemons.of(fabric.name)
        if d.fabric_down():
            raise Unsupported(sim_not_running(fabric.name, d.dir, model), 1)
        return audit_link_event(d.dir, up, set_links(d.dir, fabric, cables, up))

    # ---------------------------------------------------------------- route and check
    def route_files(self, fabric: Fabric, tables) -> dict[str, str]:
        """What `loom route` writes beside each plane's tables: the fabric as it stands in the
        ibnetdiscover/ibsim format, OpenSM's QoS policy when cross-zone traffic needs its own VLs or
        partitions ride a traffic class, and OpenSM's partitions.conf when the model has partitions."""
        from loom.render.opensm_qos import opensm_qos_policy
        from loom.render.ibsim import ibsim_net
        from loom.render.partitions import partitions_conf

        files = {"topology.net": ibsim_net(fabric, tables.subnet.plane)}
        partitions = partitions_conf(fabric, tables.subnet.plane)
        if partitions:
            files["partitions.conf"] = partitions
        qos = self.qos(fabric)
        policy = opensm_qos_policy(fabric, qos, tables.subnet.plane) if qos else None
        if policy:
            files["qos-policy.conf"] = policy
        return files

    def qos(self, fabric: Fabric):
        from loom.qos import plan_qos

        return plan_qos(fabric.model)

    def check_extra(self, fabric: Fabric) -> dict:
        """The isolation matrix of the model's partitions against the intent (none without)."""
        from loom.checks.partitions import check_partitions

        report = check_partitions(fabric)
        return {"partitions": report} if report else {}

    def drained_links(self, fabric: Fabric, target_kind: str) -> dict[str, list[str]]:
        """Cable ID → what was seen, for the links the watcher on that target kind drained
        (`watch.drained.json` in its state directory; none without a record)."""
        from loom.push.state import state_dir

        from .drains import drained_ids

        return drained_ids(state_dir(fabric.name, target_kind))

    def print_check(self, ui: Ui, name: str, planes: list[dict], cabling: dict) -> None:
        from loom.render.check_report import print_check
        from loom.render.partitions_report import print_partitions

        if cabling.get("partitions"):
            print_partitions(ui.out, name, cabling["partitions"])
        for p in planes:
            print_check(ui.out, name, p)

    # ---------------------------------------------------------------- plan and apply
    def target(self, fabric: Fabric, kind: str, inventory: Path | None, ssh_config: Path | None):
        from .targets import target_named

        return target_named(fabric, kind, inventory, ssh_config)

    def prepare_plan(self, model: Path, fabric: Fabric, ui: Ui, target) -> Fabric:
        """Route first: a fabric no engine can route is refused before the target is touched.
        Not where loom applied or recorded tables for this very fabric (its routing key): it
        routed then, and a no-change plan of a two-zone fabric spent a tenth of its time here."""
        from loom.routing import route

        from .design import routed_before
        from .plan import routing_key

        if not routed_before(target.dir, routing_key(fabric)):
            ui.phase("route", route, fabric, "fattree")
        return fabric

    def make_plan(self, model: Path, fabric: Fabric, target) -> dict:
        from .plan import make_plan

        return make_plan(model, fabric, target)

    def has_changes(self, plan: dict) -> bool:
        from .plan import has_changes

        return has_changes(plan)

    def print_plan(self, ui: Ui, plan: dict, saved: Path) -> None:
        from loom.render.plan_report import print_lft_plan

        print_lft_plan(ui.out, plan, saved, self.has_changes(plan))

    no_entries = "no LFT entries change"

    def plan_entries(self, plan: dict) -> list[dict]:
        """Every LFT entry the plan changes (`loom show PLAN --entries`)."""
        from loom.render.plan_report import changed_entries

        return changed_entries(plan)

    def entry_lines(self, entries: list[dict]) -> list[str]:
        from loom.render.plan_report import entry_lines

        return entry_lines(entries)

    def check_shape(self, plan: dict, path: Path) -> None:
        from .plan import check_shape

        check_shape(plan, path)

    def review(self, plan: dict) -> list[str]:
        """Warnings for `loom show`: tables that are not what the plan's model routes."""
        from .apply import edited_against_model

        edited = edited_against_model(plan)
        return [f"its tables differ from what its model routes on that fabric ({edited}): it was edited after "
                "`loom plan` made it, and `loom apply` refuses it unless given --from-edited-plan"] if edited else []

    def settle(self, target, progress: Callable[[str], None]) -> str | None:
        from .apply import settle

        return settle(target, progress)

    def apply(self, plan: dict, plan_path: Path, progress: Callable[[str], None], keep_live: bool,
              from_edited: bool = False, timeout: float | None = None):
        from .apply import PUSH_TIMEOUT, apply_plan

        return apply_plan(plan, plan_path, timeout or PUSH_TIMEOUT, progress=progress, keep_live=keep_live,
                          from_edited=from_edited)

    # ---------------------------------------------------------------- InfiniBand only
    def watcher(self, model: Path, fabric: Fabric, target, hold_down: float, log: Callable,
                health_interval: float | None = None):
        from .watch import Watcher

        return Watcher(model, fabric, target, hold_down=hold_down, log=log, health_interval=health_interval)

    def serve_metrics(self, watcher, address: str):
        """Prometheus text at `address` (`loom.fabrics.infiniband.metrics`); returns (collector, server)."""
        from .metrics import serve

        return serve(watcher, address)

    def link_health(self, model: Path, fabric: Fabric, target, interval: float) -> tuple[list, float]:
        """Two readings of every cable's port counters `interval` seconds apart, judged per link."""
        from .health import survey

        target.health()
        return survey(target, fabric, interval)

    def require_discovery(self, model: Path, fabric: Fabric) -> None:
        pass  # ibnetdiscover reads every InfiniBand fabric

    def discover_text(self, fabric: Fabric, target) -> tuple[str, str]:
        """`ibnetdiscover` run where the target's master port is."""
        return target.run(["ibnetdiscover"]), f"ibnetdiscover on {target.where()}"

    def opensm_recompute(self, fabric: Fabric, failure, design, engines: list[str], ui: Ui) -> dict:
        from loom.expand.failures import without

        from .recompute import opensm_recompute
        from .sim import tools_missing

        if tools_missing():
            raise Unsupported(f"--vs-opensm needs an InfiniBand fabric and the simulator ({', '.join(tools_missing())})")
        return {e: ui.phase(f"opensm -R {e}, intact and failed", opensm_recompute, fabric, without(fabric, failure),
                            design[0], e) for e in engines}

    def configs_allowed(self, model: Path, fabric: Fabric) -> None:
        raise Unsupported(f"{model} is {fabric.technology}: switch configs are for Ethernet planes "
                          "(InfiniBand gets `loom route`)", 1)


BACKEND = InfiniBand()


def _subnet_managers(d, status: dict) -> dict:
    """Who is master, asked of the fabric (`sminfo.py`) while both daemons run: the subnet is up
    only when exactly one SM is master, whatever OpenSM's log says."""
    from loom.push.errors import TargetError
    from loom.render.plan_report import sm_line

    from .target import SimTarget

    if not status["subnet_up"]:
        return {"subnet_manager": None}
    try:
        master, ports = SimTarget(d).subnet_managers()
    except TargetError as exc:
        return {"subnet_up": False, "subnet_manager": str(exc)}
    return {"subnet_manager": "; ".join(sm_line(p.as_dict()) for p in (master, *(p for p in ports if p is not master)))}
