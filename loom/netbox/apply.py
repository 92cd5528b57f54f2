"""Carry out a plan with bulk API calls in dependency order.

Deletes first, last kind first (cables before devices before racks), then per kind in `KINDS`
order its creates (`CHUNK` objects per request, `PARALLEL` requests at once) and its changes.  A reference (`Ref`) is resolved
to the id of the object NetBox holds or has just created.  Nothing is done while the plan has a
conflict.  If a request fails half-way, what was written stays written and is Loom's (tagged):
the next `loom netbox apply` plans again from NetBox's state and finishes the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from loom.progress import counting

from .client import Client, NetBoxError
from .intent import KINDS, TAG, Ref
from .plan import Change, Plan
from .state import endpoint, read_kind

CHUNK = 100  # objects per request: NetBox makes a switch's 40 interfaces per device, ~0.1 s each
PARALLEL = 3  # requests in flight (NetBox's gunicorn serves one per worker)


def apply_plan(client: Client, plan: Plan, progress: Callable[[str], None] = lambda _: None) -> dict[str, int]:
    """Apply `plan`; returns the number of objects created, changed and deleted."""
    if plan.conflicts:
        raise NetBoxError(f"{len(plan.conflicts)} object(s) in NetBox are in Loom's way and not Loom's; nothing was "
                          f"applied:\n  " + "\n  ".join(plan.conflicts[:20]))
    ids = {kind: {key: r["id"] for key, r in objs.items()} for kind, objs in plan.state.objects.items()}
    done = {"create": 0, "update": 0, "delete": 0}
    total = sum(1 for c in plan.changes if not c.from_template)
    with counting("NetBox objects written", total) as advance:
        _write(client, plan, ids, done, progress, advance)
    return done


def _write(client: Client, plan: Plan, ids: dict, done: dict[str, int], progress, advance) -> None:
    """Deletes (children first), then creates and changes kind by kind (parents first)."""
    try:
        for kind in reversed(KINDS):
            for chunk in _chunks(plan.of("delete", kind)):
                client.call(lambda c=chunk: endpoint(client, kind).delete([x.id for x in c]), what=f"delete {kind}")
                done["delete"] += len(chunk)
                advance(len(chunk))
                progress(f"deleted {len(chunk)} {kind}")
        for kind in KINDS:
            ids.setdefault(kind, {})
            creates = [c for c in plan.of("create", kind) if not c.from_template]
            chunks = list(_chunks(creates))
            bodies = [[_resolve(c.want, ids) for c in chunk] for chunk in chunks]
            with ThreadPoolExecutor(PARALLEL) as pool:  # several NetBox workers at once
                for chunk, made in zip(chunks, pool.map(lambda b: client.call(
                        lambda: endpoint(client, kind).create(b), what=f"create {kind}"), bodies)):
                    for c, r in zip(chunk, made):
                        ids[kind][c.key] = r.id
                    done["create"] += len(chunk)
                    advance(len(chunk))
                    progress(f"created {sum(len(x) for x in chunks[:chunks.index(chunk) + 1])}/{len(creates)} {kind}")
            if kind == "devices" and creates:  # NetBox made their interfaces from the device types
                site = ids["sites"].get(plan.site)
                fresh = read_kind(client, "interfaces", site)
                ids["interfaces"] = {k: r["id"] for k, r in fresh.items()}
                done["create"] += len(plan.of("create", "interfaces")) - sum(
                    1 for c in plan.of("create", "interfaces") if not c.from_template)
            for chunk in _chunks(plan.of("update", kind)):
                body = [{"id": c.id, **{f: _ref(w, ids) for f, (_, w) in c.want.items()}} for c in chunk]
                client.call(lambda b=body: endpoint(client, kind).update(b), what=f"change {kind}")
                done["update"] += len(chunk)
                advance(len(chunk))
                progress(f"changed {len(chunk)} {kind}")
    except (NetBoxError, KeyboardInterrupt) as exc:
        why = str(exc) if isinstance(exc, NetBoxError) else "interrupted"
        raise NetBoxError(f"{why}\n{sum(done.values())} object(s) were written before this; they are Loom's, and "
                          "rerunning `loom netbox apply` finishes the rest") from None


def _chunks(xs: list[Change]):
    return (xs[i:i + CHUNK] for i in range(0, len(xs), CHUNK))


def _ref(v, ids: dict) -> object:
    """A field value for the API: a reference becomes the id of the object it names."""
    if isinstance(v, Ref):
        if v.key not in ids.get(v.kind, {}):
            raise NetBoxError(f"{v.kind.replace('_', ' ')}: {v.key} is not in NetBox (it should exist by now); "
                              "fix: rerun `loom netbox apply`")
        return ids[v.kind][v.key]
    return v


def _resolve(want: dict, ids: dict) -> dict:
    out = {}
    for f, v in want.items():
        if f == "tags":
            out[f] = [{"slug": TAG}]
        elif f in ("a_terminations", "b_terminations"):
            out[f] = [{"object_type": "dcim.interface", "object_id": _ref(x, ids)} for x in v]
        else:
            out[f] = _ref(v, ids)
    return out
