"""`loom netbox apply`'s scheduler against an in-memory NetBox: Fire-Flyer 2's first apply runs
every create once, never two creates of one device type at once (NetBox serialises them on the
type's row), never a cable before both its ports were read back, and cables beside the node
creates rather than after them; a failed request stops it cleanly.  The real NetBox is in
test_netbox_live.py and `make bench-netbox`."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from loom.netbox import apply as nb_apply
from loom.netbox.client import NetBoxError
from loom.netbox.intent import Ref, intent, site_slug
from loom.netbox.plan import Change, Plan, compare
from loom.netbox.state import KIND_INFO, State

from .test_netbox import FF2, _plan_of

KIND_OF = {info.endpoint: kind for kind, info in KIND_INFO.items()}


class FakeNetBox:
    """Endpoints that create objects with ids, make a device's interfaces from its type (as
    NetBox does) and log every request with its start and end."""

    def __init__(self, want: dict, fail_at: tuple[str, int] | None = None, delay: float = 0.0005,
                 slow: dict[str, float] | None = None, units: dict[int, tuple[int, int]] | None = None) -> None:
        # devices racked now: id → (rack id, position); each object of a request is checked as NetBox
        # does, one after the other, against the units the others hold at that moment
        self.units = dict(units or {})
        self.ports = {}  # device name → its interface names (from the device type)
        for key in want["interfaces"]:
            dev, port = key.split("|")
            self.ports.setdefault(dev, []).append(port)
        self.type_of = {}  # device name → device type key
        for name, d in want["devices"].items():
            self.type_of[name] = d["device_type"].key
        self.fail_at, self.delay, self.slow = fail_at, delay, slow or {}
        self.lock = threading.Lock()
        self.next_id, self.names, self.iface_ids = 1, {}, {}
        self.log: list[dict] = []  # {kind, action, body, start, end}
        self.requests: dict[str, int] = {}
        self.api = SimpleNamespace(**{app: SimpleNamespace(**{
            name: _Endpoint(self, KIND_OF[f"{app}.{name}"]) for a, name in (e.split(".") for e in KIND_OF) if a == app})
            for app in {e.split(".")[0] for e in KIND_OF}})

    def call(self, fn, *, what: str):
        return fn()

    def request(self, kind: str, action: str, body) -> list:
        entry = {"kind": kind, "action": action, "body": body, "start": time.monotonic(), "end": None}
        with self.lock:
            self.log.append(entry)
            n = self.requests[f"{action} {kind}"] = self.requests.get(f"{action} {kind}", 0) + 1
        time.sleep(self.delay * (len(body) if isinstance(body, list) else 1) + self.slow.get(kind, 0.0))
        if self.fail_at == (f"{action} {kind}", n):
            entry["end"] = time.monotonic()
            raise NetBoxError(f"NetBox refused to {action} {kind} (HTTP 400): planted")
        out = []
        with self.lock:
            if kind == "devices" and action in ("create", "update"):
                for obj in body:
                    self._rack(obj, action)
            for obj in body if action == "create" else []:
                rid, self.next_id = self.next_id, self.next_id + 1
                if kind == "devices":
                    self.names[rid] = obj["name"]
                    for port in self.ports.get(obj["name"], []):
                        self.iface_ids[f"{obj['name']}|{port}"] = (self.next_id, rid)
                        self.next_id += 1
                out.append(SimpleNamespace(id=rid))
        entry["end"] = time.monotonic()
        return out

    def _rack(self, obj: dict, action: str) -> None:
        rid = obj.get("id", -1 - len(self.units))  # a new device: an id of its own until it has one
        rack, position = self.units.get(rid, (None, None))
        rack, position = obj.get("rack", rack), obj.get("position", position)
        if position is not None and (rack, position) in {u for i, u in self.units.items() if i != rid}:
            raise NetBoxError(f"NetBox refused to {action} devices (HTTP 400): U{position}.0 is already occupied")
        self.units[rid] = (rack, position)

    def interfaces_of(self, device_ids: list[int]) -> list[dict]:
        entry = {"kind": "interfaces", "action": "read", "body": device_ids, "start": time.monotonic()}
        with self.lock:
            self.log.append(entry)
            names = {self.names[i] for i in device_ids}
            got = [{"id": iid, "name": key.split("|")[1], "device": {"id": dev, "name": self.names[dev]}, "tags": []}
                   for key, (iid, dev) in self.iface_ids.items() if key.split("|")[0] in names]
        entry["end"] = time.monotonic()
        return got


class _Endpoint:
    def __init__(self, nb: FakeNetBox, kind: str) -> None:
        self.nb, self.kind = nb, kind

    def create(self, body):
        return self.nb.request(self.kind, "create", body)

    def update(self, body):
        return self.nb.request(self.kind, "update", body)

    def delete(self, ids):
        return self.nb.request(self.kind, "delete", ids)

    def filter(self, *, device_id, **_):
        assert self.kind == "interfaces"
        return self.nb.interfaces_of(device_id)


@pytest.fixture(scope="module")
def ff2():
    f, cp = _plan_of(FF2)
    want = intent(f, cp)
    changes, conflicts = compare(want, State(), f.name)
    assert not conflicts
    return want, Plan("http://fake", site_slug(f), changes, [], State())


def _creates(nb: FakeNetBox, kind: str) -> list[dict]:
    return [e for e in nb.log if e["kind"] == kind and e["action"] == "create"]


@pytest.mark.parametrize("parallel", [2, 8])  # 8: more requests in flight than there are device types
def test_first_apply_creates_everything_once_in_dependency_order(ff2, parallel):
    want, plan = ff2
    # slow tags and templates: nothing refers to them by id, yet a tagged object needs its tag and
    # a device its type's templates (NetBox makes the device's interfaces from them) to exist first
    nb = FakeNetBox(want, slow={"tags": 0.2, "interface_templates": 0.2})
    done = nb_apply.apply_plan(nb, plan, parallel=parallel)
    assert done == {"create": sum(len(v) for v in want.values()), "update": 0, "delete": 0}
    for kind in ("devices", "cables", "racks"):
        made = [o for e in _creates(nb, kind) for o in e["body"]]
        assert len(made) == len(want[kind])
    # never two creates of one device type in flight: NetBox would serialise them on the type's row
    devices = _creates(nb, "devices")
    for a in devices:
        for b in devices:
            if a is not b and a["start"] < b["start"] < a["end"]:
                assert nb.type_of[a["body"][0]["name"]] != nb.type_of[b["body"][0]["name"]]
    # a cable is created only after both of its ports were read back (ids NetBox gave them)
    port_read = {}
    for e in nb.log:
        if e["action"] == "read":
            for dev in e["body"]:
                port_read[dev] = e["end"]
    dev_of_port = {iid: dev for iid, dev in nb.iface_ids.values()}
    cables = _creates(nb, "cables")
    for e in cables:
        for c in e["body"]:
            for end in ("a_terminations", "b_terminations"):
                assert port_read[dev_of_port[c[end][0]["object_id"]]] <= e["start"]
    # and cables run beside the node creates, not after all of them
    assert min(e["start"] for e in cables) < max(e["end"] for e in devices)
    # every kind before devices finished before the first device create (parents first), the tag before
    # anything tagged
    first_device = min(e["start"] for e in devices)
    assert all(e["end"] <= first_device for e in nb.log if e["kind"] in ("racks", "device_types", "interface_templates"))
    tag_made = max(e["end"] for e in _creates(nb, "tags"))
    assert all(e["start"] >= tag_made for e in nb.log if e["kind"] != "tags" and e["action"] == "create"
               and "tags" in e["body"][0])


def test_a_failed_request_stops_new_ones_and_says_what_was_written(ff2):
    want, plan = ff2
    nb = FakeNetBox(want, fail_at=("create cables", 3))
    with pytest.raises(NetBoxError) as exc:
        nb_apply.apply_plan(nb, plan, parallel=2)
    msg = str(exc.value)
    assert "planted" in msg and "object(s) were written before this" in msg and "rerunning" in msg
    failed = _creates(nb, "cables")[2]
    # no new request once the failure is seen (one may have been on its way as it failed)
    assert len([e for e in nb.log if e["start"] > failed["end"] and e["action"] != "read"]) <= 1
    written = int(msg.split("\n")[-1].split()[0])
    assert 0 < written < sum(len(v) for v in want.values())


def test_a_reference_to_nothing_is_refused_before_anything_is_written(ff2):
    want, plan = ff2
    broken = [c for c in plan.changes if not (c.kind == "devices" and c.key == "z0-leaf0")] + [
        Change("devices", "old-node", "delete", id=7)]  # deletes come first, yet not even they run
    nb = FakeNetBox(want)
    with pytest.raises(NetBoxError, match="z0-leaf0.* is neither in NetBox nor planned"):
        nb_apply.apply_plan(nb, Plan(plan.url, plan.site, broken, [], State()))
    assert nb.log == []


def test_devices_move_out_of_their_units_before_any_device_takes_them(monkeypatch):
    """A growth without a lock shifts devices up their racks: the new node goes where a storage
    node was, which moves into a unit another node leaves, two switches swap units.  NetBox checks
    each device as it saves it, so this failed with "U13 is already occupied" whatever order
    creates and changes ran in, until the moving devices left their units first."""
    refs = {"device_types": {"compute": {"id": 1}}, "racks": {"A01": {"id": 10}, "A02": {"id": 11}}}
    racked = {101: ("A02", 13), 102: ("A02", 15), 103: ("A01", 36), 104: ("A01", 35)}  # st00, z0-c02, leaf, spine
    names = {101: "st00", 102: "z0-c02", 103: "z1-leaf2", 104: "z1-spine0"}
    to = {101: ("A02", 15), 102: ("A02", 17), 103: ("A01", 35), 104: ("A01", 36)}
    changes = [Change("devices", "z0-c09", "create", {"name": "z0-c09", "device_type": Ref("device_types", "compute"),
                                                     "rack": Ref("racks", "A02"), "position": 13})]
    for i, (rack, ru) in to.items():
        fields = {"position": (racked[i][1], ru)}
        if rack != racked[i][0]:
            fields["rack"] = (Ref("racks", racked[i][0]), Ref("racks", rack))
        changes.append(Change("devices", names[i], "update", fields, id=i))
    plan = Plan("http://fake", "lab", changes, [], State(objects=refs))
    rack_id = {k: v["id"] for k, v in refs["racks"].items()}
    want = {"interfaces": {}, "devices": {"z0-c09": {"device_type": Ref("device_types", "compute")}}}
    nb = FakeNetBox(want, units={i: (rack_id[r], ru) for i, (r, ru) in racked.items()})
    assert nb_apply.apply_plan(nb, plan, parallel=2) == {"create": 1, "update": 4, "delete": 0}
    placed = {names.get(i, "z0-c09"): u for i, u in nb.units.items()}
    assert placed == {"z0-c09": (11, 13), **{names[i]: (rack_id[r], ru) for i, (r, ru) in to.items()}}
    # the fault this guards against: without the first phase the same plan is refused
    nb = FakeNetBox(want, units={i: (rack_id[r], ru) for i, (r, ru) in racked.items()})
    monkeypatch.setattr(nb_apply, "_moving", lambda updates: [])
    with pytest.raises(NetBoxError, match="already occupied"):
        nb_apply.apply_plan(nb, plan, parallel=2)
