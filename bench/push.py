"""Plan and apply benchmark on the simulated two-zone fabric (issue 24): a no-change plan
(target ≤ 5 s), a full apply with QoS (target ≤ 10 s), a routing-only apply, and what bounds
them: the QoS read-back's SMPs per second beside the CPU that ibsim and Loom's readers spend
on them (2 cores: when the two together use both, the simulation is the ceiling), with the
readers' loop in C (`loom/fabrics/infiniband/madexchange.c`, as `loom` runs them) and in Python
(as on a machine without a C compiler), and beside a bare C reader of the same SMPs
(`bench/bare_reader.c`, built here with gcc): the simulator's floor, which no change to Loom's
reader can pass.

Run: `make bench-push` or `.venv/bin/python bench/push.py [MODEL]`.
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.figures import Figures  # noqa: E402
from bench.simtools import sim_console  # noqa: E402
from loom.expand import load_fabric  # noqa: E402
from loom.expand.failures import parse_failures, without  # noqa: E402
from loom.fabrics.infiniband.apply import apply_tables  # noqa: E402
from loom.fabrics.infiniband.daemon import client_dir  # noqa: E402
from loom.fabrics.infiniband.madquery import SIM_WINDOW, answer  # noqa: E402
from loom.fabrics.infiniband import qos_readback  # noqa: E402
from loom.fabrics.infiniband.compiled import exchange_library  # noqa: E402
from loom.fabrics.infiniband.qos_readback import READERS, qos_jobs  # noqa: E402
from loom.fabrics.infiniband.target import SimTarget  # noqa: E402
from loom.render.opensm import tables_from_dump  # noqa: E402
from loom.routing import get_engine, subnet  # noqa: E402


def loom(*args: str) -> tuple[float, int, str, dict[str, float]]:
    """(wall s, exit code, the line that says what happened: its outcome, else the last, and the
    phases it printed: {"push": 6.9, ...}).  The CPU that loom and its MAD readers spent (not
    ibsim's: the simulator runs in the sim's own daemon) is left in `LAST_CPU`."""
    global LAST_CPU
    kids, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    r = subprocess.run([str(ROOT / ".venv/bin/loom"), *args], capture_output=True, text=True)
    wall, after = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    LAST_CPU = (after.ru_utime - kids.ru_utime) + (after.ru_stime - kids.ru_stime)
    lines = (r.stdout + r.stderr).strip().splitlines() or [""]
    said = next((l for l in lines if any(w in l for w in ("applied and verified", "No changes", "refused", "failed"))), lines[-1])
    phases = {m.group(1): float(m.group(2)) for m in (PHASE.match(l) for l in lines) if m}
    return wall, r.returncode, said.strip(), phases


LAST_CPU = 0.0
# what the readers' CPU is made of: the bare C reader's row (same SMPs, same shim) is the shim's share
READERS_SHARE = "the readers' share: the umad2sim shim's socket traffic, building asks and decoding answers (see the bare C reader)"


PHASE = re.compile(r"^  ([^:]+): (\d+\.\d+)s$")


# one `madquery` reader with `window` SMPs in flight, waiting in umad_recv for each answer, on the
# jobs given on stdin
READER = ("import json, sys; from loom.fabrics.infiniband.madquery import Port, answer_all; "
          "answer_all(Port(window=int(sys.argv[1]), nap=0), json.load(sys.stdin))")


def asks_of(jobs: list[dict]) -> list[tuple]:
    """The SMPs madquery sends for `jobs` (its own asks: (kind, route, attribute, modifier))."""
    return [a for q in jobs for a in next(answer(q))]


def bare_rate(target: SimTarget, jobs: list[dict], window: int) -> tuple[float, int]:
    """SMPs per second one reader with `window` SMPs in flight gets from ibsim on `jobs`: with
    window 1 (what libibmad's `smp_query_via` allows), beside Loom's, it shows what keeping
    several in flight buys."""
    smps = len(asks_of(jobs))
    with client_dir() as cwd:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", READER, str(window)], input=json.dumps(jobs), env=target.d.env(),
                       cwd=cwd, capture_output=True, text=True, check=True)
    return smps / (time.perf_counter() - t0), smps


def build_bare_reader(tmp: str) -> tuple[Path | None, str]:
    """`bench/bare_reader.c` compiled into `tmp`: (the program, "") or (None, why not)."""
    exe = Path(tmp) / "bare_reader"
    made = subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-o", str(exe), str(ROOT / "bench" / "bare_reader.c"),
                           "-l:libibumad.so.3"], capture_output=True, text=True)
    return (exe, "") if made.returncode == 0 else (None, f"not built: {made.stderr.strip()[:60]}")


def bare_c_rate(target: SimTarget, exe: Path, jobs: list[dict], processes: int) -> tuple[float, str]:
    """SMPs per second of the bare C reader `exe` on the SMPs of `jobs` (madquery's own asks),
    split over `processes` running at once, each with as many in flight as Loom's reader: the
    floor of the simulator (ibsim and its umad2sim shim) beside Loom's reader.  (nan, why)
    when not all are answered."""
    lines = [f"{path} {attr} {mod}" for _, path, attr, mod in asks_of(jobs)]
    parts = ["\n".join(lines[i::processes]) + "\n" for i in range(processes)]
    with client_dir() as cwd:
        t0 = time.perf_counter()
        procs = []
        for part in parts:  # each gets all its SMPs before any starts sending: they run at once, as Loom's do
            p = subprocess.Popen([str(exe), str(SIM_WINDOW)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=target.d.env(), cwd=cwd)
            p.stdin.write(part)
            p.stdin.close()
            procs.append(p)
        outs = [(p.stdout.read(), p.stderr.read(), p.wait(300)) for p in procs]
        wall = time.perf_counter() - t0
    # sent answered errors seconds: an SMP answered with an error status is answered
    answered = sum(int(w[1]) + int(w[2]) for out, _, _ in outs if len(w := out.split()) == 4)
    if answered != len(lines):
        return float("nan"), f"{answered:,} of {len(lines):,} answered: {' '.join(e.strip() for _, e, _ in outs)[:60]}"
    return answered / wall, f"{processes} process(es), {SIM_WINDOW} in flight each, {answered:,} SMPs in {wall:.1f} s"


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(model: Path) -> int:
    console = sim_console(160)
    if console is None:
        return 1
    fabric = load_fabric(model)
    report = Figures("push")
    name = fabric.name
    with tempfile.TemporaryDirectory(prefix="loom-bench-push-") as tmp:
        os.environ["LOOM_STATE_DIR"] = tmp
        console.print(f"{name}: sim up ...")
        loom("sim", "up", str(model))
        try:
            secs, code, last, _ = loom("plan", str(model), "--out", f"{tmp}/first.json")
            report.add(f"{name}: first plan (OpenSM's minhop live)", secs, "s", note=f"exit {code}")
            secs, code, last, phases = loom("apply", f"{tmp}/first.json")
            report.add(f"{name}: full apply with QoS (restart, read back everything)", secs, "s", target=10,
                       note=last[:70] if code == 0 else f"FAILED: {last[:60]}")
            report.add(f"{name}: … CPU of loom + its MAD readers in it (not ibsim's or OpenSM's)", LAST_CPU, "s",
                       note=READERS_SHARE)
            report.add(f"{name}: … of which route the model (the plan's record: not routed again)",
                       phases.get("route the model"), "s", note="9.5-13 s when it routed again")
            report.add(f"{name}: … of which push (OpenSM restarts, programs every switch)", phases.get("push"), "s",
                       note=f"OpenSM max_wire_smps {fabric.model.opensm.max_wire_smps or 4} (the model's `opensm:`; "
                       "4, OpenSM's default: 6.6-7.0 s)")
            report.add(f"{name}: … of which LFT + QoS read-back at once", phases.get("read back LFTs + QoS at once"), "s")
            secs, code, last, _ = loom("plan", str(model))
            report.add(f"{name}: no-change plan", secs, "s", target=5, note="No changes" if code == 0 else f"exit {code}")
            # ibsim answers one SMP at a time on one core, where every switch's SMA answers on its
            # own: beside the wall time, the CPU that loom and its readers spent
            report.add(f"{name}: … CPU of loom + its MAD readers in it (not ibsim's)", LAST_CPU, "s",
                       note=READERS_SHARE)
            # routing only: tables routed around a cable put in by loom, then the plan back
            target = SimTarget.of(name)
            design = tables_from_dump(subnet(fabric, 0), target.read_lfts(), "design")
            around = get_engine("fattree").repair(subnet(without(fabric, parse_failures(fabric, ["z0-leaf3/30"])), 0), design)
            apply_tables(target, model, around, "bench")
            loom("plan", str(model), "--out", f"{tmp}/back.json")
            secs, code, last, _ = loom("apply", f"{tmp}/back.json")
            report.add(f"{name}: routing-only apply (OpenSM re-reads, changed blocks read back)", secs, "s",
                       note=last[:70] if code == 0 else f"FAILED: {last[:60]}")
            # the ceiling: the QoS read-back's SMPs, and the CPU ibsim and the readers spend on them
            sn = subnet(fabric, 0)
            smps = len(asks_of(qos_jobs(sn, target.d.sm_host)))
            ibsim = target.d.pid("ibsim")
            for loop, lib in (("C", exchange_library), ("Python", lambda: None)):
                qos_readback.exchange_library = lib  # the readers' loop (`loom.fabrics.infiniband.compiled`)
                before, kids, t0 = cpu_of(ibsim), resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
                target.read_qos(sn)
                wall = time.perf_counter() - t0
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                readers = (after.ru_utime - kids.ru_utime) + (after.ru_stime - kids.ru_stime)
                sim_cpu = cpu_of(ibsim) - before
                which = "as loom runs it" if loop == "C" else "where no C compiler is (the SSH target's way)"
                report.add(f"{name}: QoS read-back, readers' loop in {loop}", wall, "s", note=f"{smps:,} SMPs, {which}")
                report.add(f"{name}: … rate", smps / wall, "SMP/s", note=f"{READERS} readers, {SIM_WINDOW} SMPs in flight each")
                report.add(f"{name}: … CPU busy (ibsim + readers)", (readers + sim_cpu) / wall / os.cpu_count() * 100,
                           "% of all cores", note=f"ibsim {sim_cpu:.1f} s, readers {readers:.1f} s, in {wall:.1f} s")
            qos_readback.exchange_library = exchange_library
            exe, why = build_bare_reader(tmp)
            for processes in (1, READERS):  # one: ibsim's own pace; as many as Loom's: what they cost each other
                rate, note = bare_c_rate(target, exe, qos_jobs(sn, target.d.sm_host), processes) if exe else (float("nan"), why)
                report.add(f"{name}: a bare C reader of the same SMPs (bench/bare_reader.c), {processes} at once", rate,
                           "SMP/s", note=f"the simulator's floor: {note}")
            rate, sample = bare_rate(target, qos_jobs(sn, target.d.sm_host)[:600], 1)
            report.add(f"{name}: … the bare reader with one SMP in flight", rate, "SMP/s",
                       note=f"{sample:,} SMPs of the read-back (libibmad's smp_query_via waits for each)")
        finally:
            loom("sim", "down", "--force", str(model))
    console.print(report.table())
    report.save()
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "topology/fire-flyer-2.yaml"))
