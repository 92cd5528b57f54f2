"""Fuzz cases for every input Loom reads besides the model: saved plans, apply journals, lock
files, LFT dumps, `ibnetdiscover` topologies, Slurm hostlists, SSH inventories and NetBox's HTTP
answers, damaged entries of the expansion cache, and what a switch prints for the Ethernet
target's reads (BGP summaries and neighbours, `ip -j route` and `ip -j link`).

Each surface starts from a valid seed (tiny's, in `seeds/` or `topology/`), mutates it — JSON
values replaced by hostile ones and the file re-signed half the time (so the checks behind the
digest are reached), lines of text files nudged, dropped, repeated or garbled, bytes flipped —
and runs the command a user would run on it, in-process.  A case is `ok` (exit 0), `refused`
(exit 1 or 2 with a message) or a failure: any exception the command lets out, a traceback in
its output, another exit code; the campaign adds hangs and memory blow-ups.  Like a model
case, a surface case is a pure function of (seed, index): its files are re-made from the number.
"""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .mutate import EXTREME_INTS, HOSTILE_NAMES, TOPOLOGY, _get, _paths, _strings

SEEDS = Path(__file__).resolve().parent / "seeds"
TINY = TOPOLOGY / "tiny.yaml"
NUMBERS = [str(i) for i in EXTREME_INTS] + ["9" * 5000, "-0", "0x" + "f" * 40, "1e400", "NaN", "1.5", "+7", "０"]
JUNK = ["", "\x00", "\xff", "[/x]", "[bold]", "$(id)", "`id`", "\u202e", "a" * 100_000, "\n\n", "{{ x }}", "%s%n"]
HTTP_BEHAVIOURS = ("silent", "trickle", "huge", "garbage", "close", "bad-chunks", "not-json", "deep-json", "mutated")


class SurfaceFailure(Exception):
    """A command that let out an exception or printed a traceback: what the fuzzer is for."""


@dataclass
class SurfaceCase:
    seed: int
    index: int
    surface: str
    mutations: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)  # relative path → content
    args: list[str] = field(default_factory=list)  # the loom command ({dir} is the case's directory)
    env: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------- mutation


def hostile_value(rng: random.Random):
    kind = rng.randrange(7)
    if kind == 0:
        return rng.choice(EXTREME_INTS) * rng.choice([1, -1])
    if kind == 1:
        return rng.choice(HOSTILE_NAMES + JUNK)
    if kind == 2:
        return rng.choice([None, True, False, 1.5, float(rng.choice(EXTREME_INTS))])
    if kind == 3:
        return rng.choice([[], {}, [[]] * 3, {"x": None}, list(range(rng.randrange(1, 50)))])
    if kind == 4:
        return "0x" + "f" * rng.choice([1, 16, 17, 40])
    if kind == 5:
        nested: object = 1
        for _ in range(rng.choice([10, 200, 2000])):
            nested = [nested]
        return nested
    return rng.choice(["", "x" * rng.choice([61, 300, 10_000])])


def mutate_json(rng: random.Random, doc, n: int, log: list[str]):
    """`n` values of `doc` replaced by hostile ones, or keys dropped / added."""
    for _ in range(n):
        paths = [p for p in _paths(doc, depth=12) if p]
        if not paths:
            return doc
        path = rng.choice(paths)
        parent = _get(doc, path[:-1])
        op = rng.randrange(5)
        here = parent[path[-1]]
        if op == 4 and isinstance(here, (int, str)) and not isinstance(here, bool):  # a plausible value, to get past the shape checks
            parent[path[-1]] = (rng.choice([here + 1, here - 1, 0, 1, 255, 256, 0xBFFF, 0xC000]) if isinstance(here, int)
                                else rng.choice(_strings(doc, depth=4)[:200] or [here]))
            log.append(f"nudge {path[:6]}")
        elif op == 0 and isinstance(parent, dict):
            parent.pop(path[-1], None)
            log.append(f"drop {path[:6]}")
        elif op == 1 and isinstance(parent, dict):
            key = rng.choice(HOSTILE_NAMES + ["version", "plan_sha256", "digest"])
            parent[key] = hostile_value(rng)
            log.append(f"add {key!r:.40} under {path[:5]}")
        else:
            parent[path[-1]] = hostile_value(rng)
            log.append(f"set {path[:6]}")
    return doc


def mutate_text(rng: random.Random, text: str, n: int, log: list[str]) -> bytes:
    """`n` line-level mutations of `text`; then, rarely, bytes flipped or the file cut short."""
    lines = text.splitlines()
    for _ in range(n):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:  # a number on the line replaced
            words = lines[i].split(" ")
            j = rng.randrange(len(words))
            words[j] = rng.choice(NUMBERS)
            lines[i] = " ".join(words)
            log.append(f"number on line {i + 1}")
        elif op == 1:
            del lines[i]
            log.append(f"drop line {i + 1}")
        elif op == 2:
            lines[i:i] = [lines[i]] * rng.choice([1, 2, 1000])
            log.append(f"repeat line {i + 1}")
        elif op == 3:
            lines[i] = lines[i] + rng.choice(JUNK)
            log.append(f"junk after line {i + 1}")
        elif op == 4:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            log.append(f"swap lines {i + 1}, {j + 1}")
        else:
            lines[i] = rng.choice(JUNK)
            log.append(f"replace line {i + 1}")
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + b"\n"
    roll = rng.random()
    if roll < 0.05:
        data = data[:rng.randrange(len(data) + 1)]
        log.append("cut short")
    elif roll < 0.10:
        b = bytearray(data)
        for _ in range(rng.randrange(1, 20)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        data = bytes(b)
        log.append("bytes flipped")
    return data


def _dump(doc) -> bytes:
    try:
        return json.dumps(doc, indent=1, allow_nan=True).encode()
    except (RecursionError, ValueError):
        return b"[" * 100_000


# ----------------------------------------------------------------------------------- surfaces


def _tiny_files() -> dict[str, bytes]:
    return {"tiny.yaml": TINY.read_bytes(), "tiny.lock.json": (TOPOLOGY / "tiny.lock.json").read_bytes()}


def _plan(rng: random.Random, case: SurfaceCase) -> None:
    from loom.push.planfile import content_digest

    doc = json.loads((SEEDS / "tiny.plan.json").read_text())
    doc["model"] = "{dir}/tiny.yaml"
    doc = mutate_json(rng, doc, rng.randint(1, 3), case.mutations)
    if isinstance(doc, dict) and rng.random() < 0.5:
        try:
            doc["plan_sha256"] = content_digest(doc)
            case.mutations.append("re-signed")
        except (TypeError, ValueError, RecursionError):
            pass
    case.files = {**_tiny_files(), "p.json": _dump(doc)}
    case.args = rng.choice([["show", "{dir}/p.json"], ["show", "{dir}/p.json", "--entries"],
                            ["show", "{dir}/p.json", "--json"], ["apply", "{dir}/p.json"]])


def _lock(rng: random.Random, case: SurfaceCase) -> None:
    from loom.expand.lockfile import Lock, digest

    doc = json.loads((TOPOLOGY / "tiny.lock.json").read_text())
    doc = mutate_json(rng, doc, rng.randint(1, 3), case.mutations)
    if isinstance(doc, dict) and rng.random() < 0.5:
        try:
            doc["digest"] = digest(Lock.model_validate(doc))
            case.mutations.append("re-signed")
        except Exception:  # noqa: BLE001 - a lock pydantic refuses cannot be signed; Loom must refuse it too
            pass
    case.files = {"tiny.yaml": TINY.read_bytes(), "tiny.lock.json": _dump(doc)}
    case.args = rng.choice([["lock", "{dir}/tiny.yaml", "--check"], ["route", "{dir}/tiny.yaml", "--out", "{dir}/out"],
                            ["status", "{dir}/tiny.yaml"], ["cabling", "{dir}/tiny.yaml", "--format", "csv"]])


def _dump_surface(rng: random.Random, case: SurfaceCase) -> None:
    text = (SEEDS / "tiny.lfts.dump").read_text()
    case.files = {**_tiny_files(), "lfts.dump": mutate_text(rng, text, rng.randint(1, 4), case.mutations)}
    case.args = ["check", "{dir}/tiny.yaml", "--lfts", "{dir}/lfts.dump", "--ebb-samples", "2"]


def _topology(rng: random.Random, case: SurfaceCase) -> None:
    text = (Path(__file__).resolve().parents[1] / "facts" / "tiny.ibnetdiscover").read_text()
    case.files = {**_tiny_files(), "net.txt": mutate_text(rng, text, rng.randint(1, 4), case.mutations)}
    case.args = ["discover", "{dir}/tiny.yaml", "--topology", "{dir}/net.txt", "--format", rng.choice(["text", "json", "csv"])]


def _hostlist(rng: random.Random, case: SurfaceCase) -> None:
    parts = []
    for _ in range(rng.randint(1, 4)):
        prefix = rng.choice(["z0-c", "z1-c", "st", "x", "", "z0-c[", "a" * rng.choice([1, 1000, 100_000])])
        lo = rng.choice(NUMBERS[:8] + ["00", "08", "1", "9" * rng.choice([5, 20, 5000])] + ["00", "02"] * 4)
        hi = rng.choice(NUMBERS + ["03", "08", "07"] * 6)
        form = rng.randrange(5)
        parts.append([f"{prefix}[{lo}-{hi}]", f"{prefix}{lo}", f"{prefix}[{lo},{hi}]", f"{prefix}[{lo}-{hi}]{rng.choice(JUNK)}",
                      f"{prefix}[[{lo}]]"][form])
    job = rng.choice([",", " ", ""]).join(parts)
    case.mutations.append(f"job {job[:80]!r} ({len(job)} chars)")
    case.files = _tiny_files()
    case.args = ["ranks", "{dir}/tiny.yaml", "--job", job, "--out", "{dir}/ranks"]


def _inventory(rng: random.Random, case: SurfaceCase) -> None:
    import yaml

    hosts = {"mgmt0": {"loom_sm_priority": 15, "opensm_conf_path": "/etc/opensm/opensm.conf", "ansible_host": "127.0.0.1",
                       "ansible_user": "loom", "ansible_port": 22}}
    doc = {"all": {"children": {"subnet_managers": {"hosts": hosts}}}}
    doc = mutate_json(rng, doc, rng.randint(1, 3), case.mutations)
    try:
        text = yaml.safe_dump(doc).encode()
    except (RecursionError, yaml.YAMLError, ValueError):
        text = b"all: [" * 5000
    if rng.random() < 0.2:
        text = mutate_text(rng, text.decode(), 2, case.mutations)
    case.files = {**_tiny_files(), "inv/hosts.yml": text}
    case.args = ["<sm_hosts>", "{dir}/tiny.yaml", "{dir}/inv"]


def _http(rng: random.Random, case: SurfaceCase) -> None:
    behaviour = rng.choice(HTTP_BEHAVIOURS)
    case.mutations.append(f"server {behaviour}")
    case.files = _tiny_files()
    case.args = ["netbox", rng.choice(["plan", "import"]), "{dir}/tiny.yaml", f"<server:{behaviour}>"]
    # Half a second of deadline: a silent or trickling server costs the case that long (it was
    # 2 s, 70 of the CI share's 155 s), and a closed connection is refused at once (its retry
    # pause, 1 s, would pass the deadline).  The retries that give up and that succeed are
    # tests/test_netbox.py's (3 s deadline, each behaviour).  A `mutated` server's status and
    # first page still arrive well within it (60 of 60 at a load of 3.4 on 2 cores).
    case.env = {"NETBOX_TOKEN": "0123456789abcdef0123456789abcdef01234567", "LOOM_NETBOX_TIMEOUT": "0.5"}


def _journal(rng: random.Random, case: SurfaceCase) -> None:
    """An interrupted apply's journal left in the state directory, damaged: every command that
    takes the fabric reads it first (`sim status` only says whether there is one)."""
    doc = {"plan": "{dir}/p.json", "pid": 4242, "phase": rng.choice(["intent", "written", "reloaded", "verified"]),
           "phases": {"intent": "2026-11-26T04:00:00+0000"}, "texts": ["previous_lfts", "desired_lfts"],
           "restore_conf": "routing_engine minhop\n", "in_service": ["0x0002c90000000001"]}
    doc = mutate_json(rng, doc, rng.randint(1, 3), case.mutations)
    files = {**_tiny_files(), "state/tiny/apply.journal": _dump(doc)}
    for name in ("previous_lfts", "desired_lfts"):
        files[f"state/tiny/apply.journal.{name}"] = mutate_text(rng, (SEEDS / "tiny.lfts.dump").read_text()[:2000], 1, case.mutations)
    case.files = files
    case.args = ["sim", "status", "{dir}/tiny.yaml", *rng.choice([[], ["--json"]])]
    case.env = {"LOOM_STATE_DIR": "{dir}/state"}


def _state_records(rng: random.Random, case: SurfaceCase) -> None:
    """The records commands leave in a fabric's state directory for each other, damaged: the
    simulation's pulled cables and daemons' PID files, the watcher's record and its PID file,
    the digest of what loom applied last — what `loom status` and `sim status` read."""
    pid_line = f"{rng.choice([4242, 1, 2**31, 10**30])} {rng.choice([123456, 0])} {rng.choice(['opensm', 'loom', ''])}\n"
    records = {"links-down.json": _dump(mutate_json(rng, {"down": ["z0-leaf0/21", "z0-spine1"]}, rng.randint(1, 3),
                                                    case.mutations)),
               "watch.down.json": _dump(mutate_json(rng, {"down": ["z0-leaf3/7"], "tables_sha256": "0" * 64},
                                                    rng.randint(1, 3), case.mutations)),
               "last-applied.sha256": ("0" * 64 + "\n").encode()}
    for name in ("watch.pid", "ibsim.pid", "opensm.pid"):
        records[name] = mutate_text(rng, pid_line, 1, case.mutations)
    chosen = rng.sample(sorted(records), rng.randint(1, len(records)))
    case.files = {**_tiny_files(), **{f"state/tiny/{name}": records[name] for name in chosen}}
    case.args = [*rng.choice([["status"], ["sim", "status"]]), "{dir}/tiny.yaml", *rng.choice([[], ["--json"]])]
    case.env = {"LOOM_STATE_DIR": "{dir}/state"}


def _fabric_cache(rng: random.Random, case: SurfaceCase) -> None:
    """A damaged entry of the expansion cache where tiny's would be: bytes flipped, cut short,
    junk behind a right checksum, another entry's format.  Every command must expand afresh.
    (A pickle mutated and then re-signed is not a case: the checksum is the cache's guard against
    damage; whoever can write the user's cache can already run code as the user.)"""
    import hashlib

    from loom.expand import cache

    files = _tiny_files()
    entry = bytearray(_tiny_entry())
    kind = rng.randrange(4)
    if kind == 0:
        for _ in range(rng.randint(1, 8)):
            entry[rng.randrange(len(entry))] ^= 1 << rng.randrange(8)
        case.mutations.append("bytes flipped")
    elif kind == 1:
        entry = entry[:rng.randrange(len(entry))]
        case.mutations.append(f"cut at {len(entry)}")
    elif kind == 2:
        junk = rng.randbytes(rng.choice([0, 1, 100, 5000]))
        entry = bytearray(cache._MAGIC + hashlib.sha256(junk).digest() + junk)
        case.mutations.append(f"{len(junk)} bytes of junk, re-signed")
    else:
        entry = bytearray(b"loom-fabric-cache 0\n") + entry[len(cache._MAGIC):]
        case.mutations.append("another format's magic")
    name = cache.key_of(files["tiny.yaml"], files["tiny.lock.json"], True)
    case.files = {**files, f"cache/{name}.fabric": bytes(entry)}
    case.args = rng.choice([["show", "{dir}/tiny.yaml"], ["cabling", "{dir}/tiny.yaml", "--format", "csv"],
                            ["route", "{dir}/tiny.yaml", "--out", "{dir}/out"]])
    case.env = {"LOOM_CACHE_DIR": "{dir}/cache"}


@functools.cache
def _tiny_entry() -> bytes:
    """The cache entry tiny's expansion is kept as (whatever its expansion time)."""
    import hashlib
    import pickle

    from loom.expand import cache, load_fabric

    body = pickle.dumps(cache._packed(load_fabric(TINY)), protocol=pickle.HIGHEST_PROTOCOL)
    return cache._MAGIC + hashlib.sha256(body).digest() + body


SWITCH_OUTPUTS = {"bgp-summary": "frr-bgp-summary.json", "bgp-neighbors": "frr-bgp-neighbors.json",
                  "ip-route": "frr-ip-route.json", "ip-link": "frr-ip-link.json"}


def _switch_output(rng: random.Random, case: SurfaceCase) -> None:
    """What a switch prints for the Ethernet target's reads (vtysh's JSON, `ip -j`; seeds from
    the live lab, a session and a link down), damaged: the SSH target takes it from a device
    that is not ours to trust, so a reader either makes sense of it or refuses (TargetError)."""
    which = rng.choice(list(SWITCH_OUTPUTS))
    text = (SEEDS / SWITCH_OUTPUTS[which]).read_text()
    if rng.random() < 0.6:
        data = _dump(mutate_json(rng, json.loads(text), rng.randint(1, 4), case.mutations))
    else:
        data = mutate_text(rng, text, rng.randint(1, 4), case.mutations)
    case.files = {"out.json": data}
    case.args = ["<switch_output>", which, "{dir}/out.json"]


def _help_cache(rng: random.Random, case: SurfaceCase) -> None:
    """A kept `loom --help` (loom/cli/helpcache.py) damaged where the next help would read it:
    lines and bytes changed, cut short, repeated to megabytes, or whole.  The reader answers the
    text, or None (a miss: printed the long way)."""
    from loom.cli import helpcache

    text = "Usage: loom [OPTIONS] COMMAND [ARGS]...\n\n  Loom: declarative AI-cluster fabrics.\n"
    whole = f"{helpcache._MAGIC} {helpcache._digest(text)}\n{text}"
    data = whole.encode() if rng.random() < 0.2 else mutate_text(rng, whole, rng.randint(1, 3), case.mutations)
    case.files = {"xdg/loom/help/" + "0" * 64: data}
    case.args = ["<help_cache>", "{dir}/xdg"]


SURFACES = {"plan": _plan, "journal": _journal, "lock": _lock, "lfts-dump": _dump_surface, "topology": _topology, "hostlist": _hostlist,
            "inventory": _inventory, "netbox-http": _http, "fabric-cache": _fabric_cache, "switch-output": _switch_output,
            "state-records": _state_records, "help-cache": _help_cache}


def surface_case(seed: int, index: int, surface: str | None = None) -> SurfaceCase:
    """Case `index` of `seed`: the surface (by turn unless given) and its files and command."""
    names = list(SURFACES)
    name = surface or names[(index // 2) % len(names)]
    rng = random.Random(f"surface-{seed}-{index}")
    case = SurfaceCase(seed, index, name)
    SURFACES[name](rng, case)
    return case


# ----------------------------------------------------------------------------------- running


def run_surface(case: SurfaceCase, workdir: Path) -> str:
    """Write the case's files under `workdir`, run its command in-process; "ok" or "refused"
    (exit 1/2), else SurfaceFailure (MemoryError and the campaign's timeout pass through)."""
    from typer.testing import CliRunner

    from loom.cli import app

    d = workdir / "surface"
    shutil.rmtree(d, ignore_errors=True)
    for rel, data in case.files.items():
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_bytes(data)
    args = [a.replace("{dir}", str(d)) for a in case.args]
    if args[0] == "<sm_hosts>":
        return _run_sm_hosts(Path(args[1]), Path(args[2]))
    if args[0] == "<switch_output>":
        return _run_switch_output(args[1], Path(args[2]))
    if args[0] == "<help_cache>":
        return _run_help_cache(Path(args[1]))
    server = None
    if args[-1].startswith("<server:"):
        server = _server(args.pop()[len("<server:"):-1], case)
        case.env["NETBOX_URL"] = server.url
    env = {k: v.replace("{dir}", str(d)) for k, v in case.env.items()}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        r = CliRunner().invoke(app, args, catch_exceptions=True)
    finally:
        for k, v in saved.items():
            os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
        if server is not None:
            server.__exit__(None, None, None)
    if isinstance(r.exception, MemoryError):
        raise r.exception
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        import traceback

        raise SurfaceFailure("".join(traceback.format_exception(*r.exc_info))[-3000:])
    if "Traceback (most recent call last)" in r.output:
        raise SurfaceFailure(r.output[-3000:])
    if r.exit_code not in (0, 1, 2):
        raise SurfaceFailure(f"exit {r.exit_code}: {r.output[-1000:]}")
    if "NETBOX_TOKEN" in case.env and case.env["NETBOX_TOKEN"] in r.output:
        raise SurfaceFailure("the NetBox token was printed")
    return "ok" if r.exit_code == 0 else "refused"


def _run_help_cache(xdg: Path) -> str:
    """The kept help's reader: "ok" with the whole text, "refused" with a miss."""
    from loom.cli import helpcache

    saved = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(xdg)
    try:
        text = helpcache.load("0" * 64)
    finally:
        os.environ.pop("XDG_CACHE_HOME") if saved is None else os.environ.__setitem__("XDG_CACHE_HOME", saved)
    if text is not None and not text.startswith("Usage: loom"):
        raise SurfaceFailure(f"a damaged kept help was taken as whole: {text[:200]!r}")
    return "ok" if text is not None else "refused"


def _run_sm_hosts(model: Path, inventory: Path) -> str:
    """The SSH target's inventory reader (no ssh is started): refused with PlanError, or hosts
    whose every value is safe on an ssh command line."""
    from loom.expand import load_fabric
    from loom.fabrics.infiniband.inventory import sm_hosts
    from loom.push.errors import PlanError

    try:
        hosts = sm_hosts(load_fabric(model), inventory)
    except PlanError:
        return "refused"
    for h in hosts:
        for v in (h.name, h.destination, h.user or "x", h.ca, *h.paths.as_dict().values()):
            if not isinstance(v, str) or v.startswith("-") or any(ord(c) < 32 for c in v):
                raise SurfaceFailure(f"inventory value {v!r} would reach ssh")
    return "ok"


class _Answering:
    """An Ethernet target whose every switch prints `text` for `ip -j link`."""

    def __init__(self, fabric, text: str) -> None:
        self.fabric, self.text = fabric, text

    def switches(self) -> list[str]:
        return [s.name for s in self.fabric.switches]

    def links(self, switch: str) -> str:
        return self.text


@functools.cache
def _lab_design():
    from loom.expand import load_fabric

    return load_fabric(TOPOLOGY / "roce-lab.yaml")


def _run_switch_output(which: str, path: Path) -> str:
    """The reader of one switch output, on the text as the ssh transport hands it over (decoded,
    undecodable bytes replaced): "ok" with well-formed results, "refused" on TargetError."""
    from loom.fabrics.ethernet.answers import bgp_peers, kernel_routes, sessions_down
    from loom.fabrics.ethernet.plan import cables_down
    from loom.push.errors import TargetError

    text = path.read_bytes().decode("utf-8", "replace")
    try:
        if which == "bgp-summary":
            ok = all(isinstance(a, str) and isinstance(st, str) for a, st in bgp_peers(text).items())
        elif which == "bgp-neighbors":
            ok = all(isinstance(l, str) for l in sessions_down(text) + sessions_down(text, "leaf0", {"10.0.128.0", "10.9.9.9"}))
        elif which == "ip-route":
            ok = all(isinstance(p, str) and all(isinstance(g, str) for g in gws) for p, gws in kernel_routes(text).items())
        else:
            ok = all(isinstance(c, str) for c in cables_down(_Answering(_lab_design(), text), _lab_design()))
    except TargetError:
        return "refused"
    if not ok:
        raise SurfaceFailure(f"{which}: a reader returned something that is not what it promises")
    return "ok"


def _server(behaviour: str, case: SurfaceCase):
    from tests.hostile_http import HostileServer

    return HostileServer(behaviour, seed=case.index).__enter__()
