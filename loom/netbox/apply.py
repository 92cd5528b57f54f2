"""Carry out a plan with bulk API calls, keeping NetBox's workers busy.

Deletes go first, last kind first (cables before devices before racks), one request at a time.
Creates and changes are then cut into tasks of `CHUNK` objects, and `parallel` tasks run at once,
each as soon as what it needs is in NetBox:

- a task waits for every task of an earlier kind (`KINDS` order: parents first), with one
  exception: a cable waits only for the devices whose ports it joins.  A task that creates
  devices also reads the interfaces NetBox made for them from their types' templates, so a
  cable is ready once both its ports have ids.  Switch-to-switch cables thus run beside the
  long run of node creates instead of after it;
- new devices are chunked by device type, and two creates of one type never run at once: NetBox
  counts a type's devices in the type's own row (`device_count`), so two such requests
  serialise on that row's lock until the first commits, and the second worker would sit idle;
- devices move in two phases.  NetBox refuses a device in a rack unit another device holds
  ("U13 is already occupied"), checking each object as it saves it, so a growth that shifts
  devices up a rack failed when a new device (or a moved one) was written before the device
  leaving its units: first every device whose rack or position changes is taken out of its
  units (`position` null; it stays in its rack), then the creates and the moves run, and the
  units they fill are free whatever their order.

A reference (`Ref`) is resolved to the id of the object NetBox holds or has just created.
Nothing is done while the plan has a conflict.  If a request fails, no further task starts, the
ones in flight finish, and what was written stays written and is Loom's (tagged): the next
`loom netbox apply` plans again from NetBox's state and finishes the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from loom.progress import counting

from .client import Client, NetBoxError
from .intent import KINDS, Ref
from .plan import Change, Plan
from .state import endpoint, read_kind

CHUNK = 100  # objects per request at most
#: Objects NetBox writes per request at most, counting the interfaces it makes from a new
#: device's type: ~38 ms of NetBox CPU each (docs/netbox.md), so a request is ~15 s of its work,
#: well inside the client's 60 s deadline (100 switches of 40 ports were one 4,100-object request).
WORK = 400
#: Requests in flight by default.  NetBox's gunicorn serves one per worker, each busy on a core (its
#: PostgreSQL backend takes the rest): more requests than the server has cores only add contention
#: (on 2 cores, 3 in flight took 10-15% longer than 2).  `loom netbox apply --parallel N`.
PARALLEL = 2
IDS_PER_READ = 50  # device ids per interface read (`?device_id=` repeated: keep the URL short)


@dataclass(eq=False)
class _Task:
    """One request's worth of creates or changes of one kind."""

    kind: str
    action: str  # create | update
    changes: list[Change]
    lock: str | None = None  # tasks with the same lock never run at once
    groups: set[tuple[str, str]] = field(default_factory=set)  # (kind, action) whose tasks must all have finished
    after: set[_Task] = field(default_factory=set)  # and these tasks (that create what it refers to)
    vacate: bool = False  # the first phase of moves: the devices leave their rack units (not counted as changes)


def apply_plan(client: Client, plan: Plan, progress: Callable[[str], None] = lambda _: None,
               parallel: int = PARALLEL) -> dict[str, int]:
    """Apply `plan` with up to `parallel` requests in flight; returns the number of objects
    created, changed and deleted."""
    if plan.conflicts:
        raise NetBoxError(f"{len(plan.conflicts)} object(s) in NetBox are in Loom's way and not Loom's; nothing was "
                          f"applied:\n  " + "\n  ".join(plan.conflicts[:20]))
    ids = {kind: {key: r["id"] for key, r in objs.items()} for kind, objs in plan.state.objects.items()}
    for kind in KINDS:
        ids.setdefault(kind, {})
    done = {"create": 0, "update": 0, "delete": 0}
    total = sum(1 for c in plan.changes if not c.from_template)
    ports = _template_ports(plan)
    tasks = _tasks(plan, ids, ports)  # before any write: it refuses a reference to nothing
    with counting("NetBox objects written", total) as advance:
        try:
            _delete(client, plan, done, progress, advance)
            _Run(client, plan, ids, ports, done, progress, advance).run(tasks, parallel)
        except (NetBoxError, KeyboardInterrupt) as exc:
            why = str(exc) if isinstance(exc, NetBoxError) else "interrupted"
            raise NetBoxError(f"{why}\n{sum(done.values())} object(s) were written before this; they are Loom's, "
                              "and rerunning `loom netbox apply` finishes the rest") from None
    return done


def _delete(client: Client, plan: Plan, done: dict[str, int], progress, advance) -> None:
    for kind in reversed(KINDS):
        for chunk in _chunks(plan.of("delete", kind)):
            client.call(lambda c=chunk: endpoint(client, kind).delete([x.id for x in c]), what=f"delete {kind}")
            done["delete"] += len(chunk)
            advance(len(chunk))
            progress(f"deleted {len(chunk)} {kind}")


def _tasks(plan: Plan, ids: dict, ports: Counter[str]) -> list[_Task]:
    """The creates and changes as tasks in priority order, each with what it waits for."""
    made: dict[tuple[str, str], _Task] = {}  # (kind, key) → the task creating it
    tasks: list[_Task] = []
    for kind in KINDS:
        creates = [c for c in plan.of("create", kind) if not c.from_template]
        updates = plan.of("update", kind)
        needs = {id(c): _producers(c, ids, made) for c in creates + updates}
        if kind == "devices":  # one type per task; types with the most ports first (their cables wait)
            by_type: dict[str, list[Change]] = {}
            for c in creates:
                by_type.setdefault(c.want["device_type"].key, []).append(c)
            types = sorted(by_type.items(), key=lambda kv: -ports[kv[1][0].key])
            mine = [_Task(kind, "create", chunk, lock=f"device type {t}") for t, cs in types
                    for chunk in _chunks(cs, lambda c: 1 + ports[c.key])]
        else:
            if kind == "cables":  # the cables whose ports exist soonest first
                order = {t: i for i, t in enumerate(tasks)}
                creates.sort(key=lambda c: max((order[p] for p in needs[id(c)]), default=-1))
            mine = [_Task(kind, "create", chunk) for chunk in _chunks(creates)]
        mine += [_Task(kind, "update", chunk) for chunk in _chunks(updates)]
        vacate = [_Task(kind, "update", chunk, vacate=True) for chunk in _chunks(_moving(updates))]
        earlier = {(k, a) for k in KINDS[:KINDS.index(kind)] for a in ("create", "update")}
        for t in vacate + mine:
            t.groups = earlier - {("devices", "create")} if kind == "cables" else earlier
            t.after = set().union(*(needs[id(c)] for c in t.changes)) if not t.vacate else set()
            t.after |= set(vacate) if not t.vacate else set()
            if t.action == "create":
                made.update({(kind, c.key): t for c in t.changes})
        tasks += vacate + mine
    return tasks


def _moving(updates: list[Change]) -> list[Change]:
    """The device changes that take a device out of the rack units it holds now."""
    return [c for c in updates if c.kind == "devices" and {"rack", "position"} & c.want.keys()]


def _producers(c: Change, ids: dict, made: dict[tuple[str, str], _Task]) -> set[_Task]:
    """The tasks that create what `c` refers to (an interface: the task creating its device)."""
    out = set()
    for ref in _refs(c):
        if ref.key in ids[ref.kind]:
            continue
        task = made.get((ref.kind, ref.key))
        if task is None and ref.kind == "interfaces":
            task = made.get(("devices", ref.key.split("|")[0]))
        if task is None:
            raise NetBoxError(f"{ref.kind.replace('_', ' ')}: {ref.key} is neither in NetBox nor planned ({c.kind} "
                              f"{c.key} refers to it); fix: rerun `loom netbox plan` and report the plan")
        out.add(task)
    return out


def _template_ports(plan: Plan) -> Counter[str]:
    """Interfaces NetBox makes from the type's templates, per new device."""
    return Counter(c.key.split("|")[0] for c in plan.of("create", "interfaces") if c.from_template)


def _refs(c: Change):
    for v in c.want.values():
        v = v[1] if c.action == "update" else v  # an update's fields are (have, want)
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, Ref):
                yield x


class _Run:
    """Runs tasks `parallel` at a time, each once every task it waits for has finished."""

    def __init__(self, client: Client, plan: Plan, ids: dict, ports: Counter[str], done: dict[str, int], progress,
                 advance) -> None:
        self.client, self.plan, self.ids, self.ports, self.done = client, plan, ids, ports, done
        self.progress, self.advance = progress, advance
        self.totals = Counter(c.kind for c in plan.of("create") if not c.from_template)
        self.created: Counter[str] = Counter()
        self.open: Counter[tuple[str, str]] = Counter()  # unfinished tasks per (kind, action)

    def run(self, tasks: list[_Task], parallel: int) -> None:
        pending, running, finished = list(tasks), {}, set()
        self.open.update((t.kind, t.action) for t in tasks)
        failure: NetBoxError | None = None
        with ThreadPoolExecutor(parallel) as pool:
            while pending or running:
                if failure is None:
                    self._start(pool, parallel, pending, running, finished)
                if not running:
                    break
                for f in wait(running, return_when=FIRST_COMPLETED)[0]:
                    t = running.pop(f)
                    try:
                        self._record(t, *f.result())
                    except NetBoxError as exc:
                        failure = failure or exc
                    else:
                        finished.add(t)
                        self.open[(t.kind, t.action)] -= 1
        if failure is not None:
            raise failure
        assert not pending, "a task waits for one that never runs"

    def _start(self, pool, parallel: int, pending: list[_Task], running: dict[Future, _Task],
               finished: set[_Task]) -> None:
        locks = {t.lock for t in running.values()}
        for t in list(pending):
            if len(running) >= parallel:
                return
            if (t.lock is None or t.lock not in locks) and not any(self.open[g] for g in t.groups) \
                    and t.after <= finished:
                body = self._body(t)
                running[pool.submit(self._send, t, body)] = t
                pending.remove(t)
                locks.add(t.lock)

    def _body(self, t: _Task) -> list[dict]:
        if t.vacate:
            return [{"id": c.id, "position": None} for c in t.changes]
        if t.action == "create":
            return [_resolve(c.want, self.ids) for c in t.changes]
        return [{"id": c.id, **_resolve({f: w for f, (_, w) in c.want.items()}, self.ids)} for c in t.changes]

    def _send(self, t: _Task, body: list[dict]) -> tuple[list[int], dict[str, int]]:
        """One request (in a worker thread); a device create also reads the new devices' interfaces."""
        ep = endpoint(self.client, t.kind)
        if t.action == "update":
            self.client.call(lambda: ep.update(body), what=f"change {t.kind}")
            return [], {}
        new = [r.id for r in self.client.call(lambda: ep.create(body), what=f"create {t.kind}")]
        ports: dict[str, int] = {}
        if t.kind == "devices":
            site = self.ids["sites"].get(self.plan.site)
            for i in range(0, len(new), IDS_PER_READ):
                read = read_kind(self.client, "interfaces", site, device_id=new[i:i + IDS_PER_READ])
                ports.update({k: r["id"] for k, r in read.items()})
        return new, ports

    def _record(self, t: _Task, new: list[int], ports: dict[str, int]) -> None:
        n = len(t.changes)
        if t.vacate:
            self.progress(f"took {n} moving {t.kind} out of their rack units")
            return
        self.done[t.action] += n
        self.advance(n)
        if t.action == "update":
            self.progress(f"changed {n} {t.kind}")
            return
        self.ids[t.kind].update({c.key: i for c, i in zip(t.changes, new)})
        self.ids["interfaces"].update(ports)
        self.done["create"] += sum(self.ports[c.key] for c in t.changes) if t.kind == "devices" else 0
        self.created[t.kind] += n
        self.progress(f"created {self.created[t.kind]}/{self.totals[t.kind]} {t.kind}")


def _chunks(xs: list[Change], work: Callable[[Change], int] = lambda c: 1):
    """`xs` cut into requests of at most CHUNK changes and WORK objects written (`work` of each)."""
    chunk, total = [], 0
    for c in xs:
        w = work(c)
        if chunk and (len(chunk) == CHUNK or total + w > WORK):
            yield chunk
            chunk, total = [], 0
        chunk.append(c)
        total += w
    if chunk:
        yield chunk


def _ref(v, ids: dict) -> object:
    """A field value for the API: a reference becomes the id of the object it names."""
    if isinstance(v, Ref):
        if v.key not in ids[v.kind]:
            raise NetBoxError(f"{v.kind.replace('_', ' ')}: {v.key} is not in NetBox (it should exist by now); "
                              "fix: rerun `loom netbox apply`")
        return ids[v.kind][v.key]
    return v


def _resolve(want: dict, ids: dict) -> dict:
    out = {}
    for f, v in want.items():
        if f == "tags":  # Loom's tags by slug (`loom`, partitions), others as the device has them
            out[f] = [{"slug": x.key if isinstance(x, Ref) else x} for x in v]
        elif f in ("a_terminations", "b_terminations"):
            out[f] = [{"object_type": "dcim.interface", "object_id": _ref(x, ids)} for x in v]
        else:
            out[f] = _ref(v, ids)
    return out
