"""Read SL2VL and VL arbitration tables back from every switch and CA port of the running
simulated fabric, and compare them with the intent.  The queries are the SMPs `smpquery sl2vl`
/ `smpquery vlarb` send, issued from a reader process (`loom.fabrics.infiniband.madquery`): a process per query
costs minutes on the two-zone fabric.  A test shows both readers return the same tables.

Queries go by directed route from the subnet manager's port, not by LID: the tables must be
readable even where the forwarding tables do not (yet) reach a port, e.g. right after a node
was re-cabled.  A switch's SL2VL is per (input port, output port): one query per cabled output port returns
every input port's row (port 0 included as an input).  Base switch port 0 carries only
management traffic and is not an output that QoS configures, so it is not queried as one.  One reader
process (two for a large fabric, `madqueries`) answers them all, `madquery.WINDOW` SMPs in flight
at once each (ibsim serves at most 10 clients).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
from pathlib import Path
from collections import deque
from concurrent.futures import ThreadPoolExecutor

from loom.routing.subnet import NONE, TO_SWITCH, Subnet

from loom.progress import counting

from .compiled import exchange_library
from .daemon import Daemons, client_dir
from . import madquery
from .madquery import MADEXCHANGE, PROGRESS
from .sim import SimError

ROW = re.compile(r"ports: in\s+(\d+), out\s+(\d+):\s*\|(.*)\|")
WORKERS = 4
READERS, SPLIT_FROM = 2, 1024  # reader processes for a read-back of at least SPLIT_FROM jobs (`madqueries`)
READ_TIMEOUT = 600  # seconds for every port of the fabric (seconds on two zones)


def _smpquery(d: Daemons, *args: str) -> str:
    with client_dir() as cwd:
        res = subprocess.run(["smpquery", *args], cwd=cwd, env=d.env(), capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(f"smpquery {' '.join(args)}: {res.stderr.strip()[-200:]}")
    return res.stdout


def parse_sl2vl(text: str) -> dict[tuple[int, int], list[int]]:
    return {(int(m.group(1)), int(m.group(2))): [int(x) for x in m.group(3).split("|")] for m in ROW.finditer(text)}


def parse_vlarb(text: str) -> dict[str, list[list[int]]]:
    """{'low': [[vl, weight], ...], 'high': [...]} with zero-weight entries dropped."""
    out, which = {"low": [], "high": []}, None
    vls = None
    for line in text.splitlines():
        if "Low priority" in line:
            which = "low"
        elif "High priority" in line:
            which = "high"
        elif line.startswith("VL") and which:
            vls = [int(x, 16) for x in line.split(":", 1)[1].strip(" |").split("|")]
        elif line.startswith("WEIGHT") and which and vls is not None:
            ws = [int(x, 16) for x in line.split(":", 1)[1].strip(" |").split("|")]
            out[which] = [[v, w] for v, w in zip(vls, ws) if w]
    return out


def directed_routes(sn: Subnet, sm_ca: str, skip=None) -> tuple[dict[int, str], dict[int, str]]:
    """DR paths from the SM's CA port: {switch row: "0,p1,p2,..."} and {CA LID: path}; a hop
    from switch row r to row n is not taken where `skip(r, n)` says so."""
    sm = next(p for p in sn.fabric.ports if p.ca == sm_ca and p.plane == sn.plane)
    start = int(sn.ca_switch[sm.lid])
    paths = {start: [0, sm.port]}
    queue = deque([start])
    while queue:
        row = queue.popleft()
        for port in range(1, sn.max_port + 1):
            if sn.peer_kind[row, port] == TO_SWITCH:
                nxt = int(sn.peer_dev[row, port])
                if nxt not in paths and not (skip and skip(row, nxt)):
                    paths[nxt] = paths[row] + [port]
                    queue.append(nxt)
    fmt = lambda p: ",".join(map(str, p))
    cas = {int(l): fmt(paths[int(sn.ca_switch[l])] + [int(sn.ca_switch_port[l])]) for l in sn.ca_lids
           if int(sn.ca_switch[l]) in paths}
    cas[int(sm.lid)] = "0"
    return {r: fmt(p) for r, p in paths.items()}, cas


def qos_jobs(sn: Subnet, sm_host: str) -> list[dict]:
    """The queries of a full read-back from the CA `sm_host` (for `loom.fabrics.infiniband.madquery`)."""
    switch_dr, ca_dr = directed_routes(sn, sm_host)
    jobs = []
    for row, path in sorted(switch_dr.items()):
        n = sn.switch(row).ports
        for port in [int(p) for p in range(1, n + 1) if sn.peer_kind[row, p] != NONE]:
            jobs.append({"key": f"{sn.name(row)}/{port}", "path": path, "out": port, "ins": list(range(0, n + 1))})
    for lid, path in sorted(ca_dr.items()):
        port = sn.fabric.ports[int(sn.lid_port[lid])].port
        jobs.append({"key": f"{sn.lid_name(lid)}/{port}", "path": path, "out": port, "ins": []})
    return jobs


def read_qos(d: Daemons, sn: Subnet) -> dict[str, dict]:
    """{"<device>/<port>": {"sl2vl": {"<in port>": "<16 hex digits: SL 0's VL first>"}, "vlarb":
    {"low", "high"}}} for every cabled switch port and CA port, by `loom.fabrics.infiniband.madquery`
    processes (`madqueries`)."""
    d.health()
    jobs = qos_jobs(sn, d.sm_host)
    with counting("QoS read-back (ports)", len(jobs)) as advance:
        return qos_answered(madqueries(d, jobs, advance, "QoS read-back", "ports"))


def qos_answered(answers: list[dict]) -> dict[str, dict]:
    """The answers to `qos_jobs` as `read_qos` gives them, by port (others are passed over)."""
    return {a["key"]: {"sl2vl": a["sl2vl"], "vlarb": a["vlarb"]} for a in sorted(answers, key=lambda a: a["key"])
            if "sl2vl" in a}


def madqueries(d: Daemons, jobs: list[dict], advance=lambda n: None, what: str = "QoS read-back",
               items: str = "queries", every: bool = True) -> list[dict]:
    """Answer `jobs` by `loom.fabrics.infiniband.madquery` processes; SimError names what did not
    answer (with `every=False`, unanswered jobs are only left out).

    Under the simulator a reader is CPU-bound: each SMP costs it a send to ibsim and a hand-over
    from the umad2sim shim's receiver thread, ~17 µs of CPU, where ibsim answers in ~6.  Many
    jobs are therefore split between `READERS` processes, each with `madquery.WINDOW` SMPs in
    flight: two zones' QoS read-back (210,808 SMPs) took 3.3-4.3 s alone with one reader and
    2.8-3.1 s with two, and inside a plan (routing and checks on the other core) 4.2-5.2 s and
    3.9-4.4 s.  Few jobs go to one: a process start costs more than it saves."""
    if not jobs:
        return []
    readers = READERS if len(jobs) >= SPLIT_FROM else 1
    size = -(-len(jobs) // readers)
    lock = threading.Lock()

    def counted(n: int) -> None:  # the readers report from their own threads
        with lock:
            advance(n)

    with ThreadPoolExecutor(readers) as pool:
        outs = list(pool.map(lambda at: _madquery(d, jobs[at:at + size], counted, what), range(0, len(jobs), size)))
    answers, errors = [a for o in outs for a in o["answers"]], [e for o in outs for e in o["errors"]]
    if errors and every:
        raise SimError(f"{what}: {len(errors)} {items} did not answer, e.g. {errors[0]}")
    return answers


# the reader runs as a script (its file stands alone): `-m` would import the loom packages first,
# 40 ms of a watcher's 1 s reroute per start; -P keeps its own directory off sys.path
READER = [sys.executable, "-P", str(Path(madquery.__file__))]


def _madquery(d: Daemons, jobs: list[dict], advance, what: str) -> dict:
    """Answer `jobs` in one `loom.fabrics.infiniband.madquery` process: {"answers": [...], "errors": [...]}."""
    env, lib = d.env(), exchange_library()
    if lib:  # the reader's loop in C (`loom.fabrics.infiniband.compiled`)
        env[MADEXCHANGE] = lib
    with client_dir() as cwd:
        code, stdout, stderr = _run_counted(READER, json.dumps(jobs), env, cwd, advance)
    if code is None:
        raise SimError(f"{what} did not finish within {READ_TIMEOUT}s (is ibsim answering?)")
    if code != 0:
        raise SimError(f"{what} failed: {stderr.strip()[-300:]}")
    return json.loads(stdout)


def _run_counted(cmd: list[str], stdin: str, env: dict, cwd: str, advance) -> tuple[int | None, str, str]:
    """Run the reader, passing its progress lines (stderr) on as they come; stdout is drained by
    a thread (the answers are megabytes: a full pipe would stall the reader).  Returns (exit
    code or None on timeout, stdout, the other stderr lines)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=cwd)
    killed = threading.Event()
    timer = threading.Timer(READ_TIMEOUT, lambda: (killed.set(), proc.kill()))
    chunks: list[str] = []
    drain = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)
    timer.start()
    try:
        try:
            proc.stdin.write(stdin)  # the reader takes all of its input before it writes anything
            proc.stdin.close()
        except BrokenPipeError:
            pass  # it died first: its stderr says why
        drain.start()
        done, other = 0, []
        for line in proc.stderr:
            if line.startswith(PROGRESS):
                n = int(line[len(PROGRESS):])
                advance(n - done)
                done = n
            else:
                other.append(line)
        drain.join()
        code = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return (None if killed.is_set() else code), "".join(chunks), "".join(other)


def read_qos_smpquery(d: Daemons, sn: Subnet) -> dict[str, dict]:
    """The same read-back with `smpquery`, one process per query (slow: tests compare the two)."""
    def one(job):
        path, out = job["path"], str(job["out"])
        rows = parse_sl2vl(_smpquery(d, "-D", "sl2vl", path, *([out] if job["ins"] else [])))
        return job["key"], {"sl2vl": {str(i): vls_hex(v) for (i, _), v in sorted(rows.items())},
                            "vlarb": parse_vlarb(_smpquery(d, "-D", "vlarb", path, *([out] if job["ins"] else [])))}

    with ThreadPoolExecutor(WORKERS) as pool:
        return dict(sorted(pool.map(one, qos_jobs(sn, d.sm_host))))


def vls_hex(vls: list[int]) -> str:
    """16 VLs (one per SL) as the read-back writes them: 16 hex digits (`madquery.sl2vl`)."""
    return "".join(f"{v:x}" for v in vls)


def digest(readback: dict) -> str:
    return hashlib.sha256(json.dumps(readback, sort_keys=True).encode()).hexdigest()


def mismatches(readback: dict, want: dict | None) -> list[str]:
    """Ports whose tables differ from the intent (nothing is required without QoS)."""
    if want is None:
        return []
    want_sl2vl, want_low = vls_hex(want["sl2vl"]), want["vlarb_low"]
    bad = []
    for port, got in readback.items():
        wrong = next((r for r in got["sl2vl"].values() if r != want_sl2vl), None)
        if wrong is not None:
            bad.append(f"{port}: SL2VL {[int(v, 16) for v in wrong]} instead of {want['sl2vl']}")
        elif got["vlarb"]["low"] != want_low or got["vlarb"]["high"]:
            bad.append(f"{port}: VLArb low {got['vlarb']['low']} high {got['vlarb']['high']} instead of low {want_low} high []")
    return bad
