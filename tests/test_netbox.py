"""NetBox without a NetBox: the intent of the reference fabrics, plans against made-up states
(drift, conflicts, deletes), the lock's as-built entries, and every connection failure against
a fake server on 127.0.0.1.  The live NetBox tests are in test_netbox_live.py (slow)."""

from __future__ import annotations

import http.server
import json
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric, lock_path, read_lock
from loom.expand.lockfile import ZoneAsBuilt, lock_text
from loom.model.schema import MissingLink, MissingSwitch
from loom.netbox.intent import TAG, intent
from loom.netbox.plan import compare
from loom.netbox.state import State

ROOT = Path(__file__).resolve().parent.parent
FF2, TINY = ROOT / "topology/fire-flyer-2.yaml", ROOT / "topology/tiny.yaml"
TOKEN = "0123456789abcdef0123456789abcdef01234567"


def _plan_of(path: Path):
    from loom.model.catalogue import load_catalogue
    from loom.render.cabling import cable_plan

    f = load_fabric(path, as_built=False)
    return f, cable_plan(f, load_catalogue(path, f.model.cabling.catalogue))


def test_intent_of_fire_flyer_2_has_every_device_port_and_cable():
    f, cp = _plan_of(FF2)
    want = intent(f, cp)
    assert len(want["devices"]) == 120 + 1404 and len(want["cables"]) == 3188
    assert len(want["interfaces"]) == 120 * 40 + 1200 + 180 * 2 + 24
    assert {t["type"] for t in want["interface_templates"].values()} == {"infiniband-hdr"}
    cable = want["cables"]["z0-c000|mlx5_0/1 <> z0-leaf0|1"]
    assert cable["status"] == "planned" and cable["length_unit"] == "m" and cable["type"] in ("dac-passive", "aoc")
    assert {c["color"] for c in want["cables"].values()} == {"2f6eba", "e08a1e"}  # one colour per zone
    assert intent(f, cp, installed=True)["cables"]["z0-c000|mlx5_0/1 <> z0-leaf0|1"]["status"] == "connected"
    d = want["devices"]["z0-leaf0"]
    assert (d["rack"].key, d["position"], d["role"].key) == (f.switches[0].rack, f.switches[0].ru, "leaf")


def test_intent_of_a_roce_fabric_has_prefixes_addresses_and_asns():
    f = load_fabric(ROOT / "tests/models/roce-lab.yaml", as_built=False)
    want = intent(f, None)
    assert len(want["prefixes"]) == len(f.cables) and len(want["asns"]) >= 2
    ip = next(v for v in want["ip_addresses"].values() if "assigned_object_id" in v)
    assert ip["assigned_object_id"].key in want["interfaces"]
    assert {t["type"] for t in want["interface_templates"].values()} == {"400gbase-x-osfp"}


def _record(kind: str, key: str, want: dict, rid: int, tagged: bool = True) -> dict:
    """A NetBox record (as the API returns it, brief nested objects) for an intent object."""
    from loom.netbox.intent import Ref

    r = {"id": rid, "tags": [{"id": 1, "slug": TAG}] if tagged else []}
    for f, v in want.items():
        if isinstance(v, Ref):
            r[f] = {"id": 9, "slug": v.key, "name": v.key}
        elif f in ("status", "face"):
            r[f] = {"value": v, "label": str(v).title()}
        elif f != "tags":
            r[f] = v
    if kind == "interfaces":
        r["device"] = {"id": 9, "name": key.split("|")[0]}
    return r


def _state_of(want: dict, skip: set[str] = frozenset()) -> State:
    st = State()
    rid = 100
    for kind, objs in want.items():
        st.objects[kind] = {}
        for key, w in objs.items():
            rid += 1
            if (kind, key) not in skip:
                st.objects[kind][key] = _record(kind, key, w, rid)
    return st


def test_plan_is_empty_when_netbox_matches_and_names_drift_conflicts_and_deletes():
    f = load_fabric(TINY, as_built=False)
    want = intent(f, None)
    st = _state_of(want)
    assert compare(want, st, f.name) == ([], [])
    # drift: a Loom device moved by hand; a Loom cable relabelled
    st.objects["devices"]["z0-c00"]["position"] = 30.0
    ck = next(iter(want["cables"]))
    st.objects["cables"][ck]["label"] = "by hand"
    # conflict: a hand-made device under a name Loom wants (no `loom` tag)
    st.objects["devices"]["st00"]["tags"] = []
    # delete: a Loom device the model no longer has
    st.objects["devices"]["old-node"] = _record("devices", "old-node", want["devices"]["z0-c01"], 999)
    changes, conflicts = compare(want, st, f.name)
    got = {(c.kind, c.key, c.action): c for c in changes}
    assert got[("devices", "z0-c00", "update")].want == {"position": (30.0, float(want["devices"]["z0-c00"]["position"]))}
    assert got[("cables", ck, "update")].want == {"label": ("by hand", want["cables"][ck]["label"])}
    assert ("devices", "old-node", "delete") in got
    assert len(conflicts) == 1 and "device st00" in conflicts[0] and "not Loom's" in conflicts[0]
    assert not any(c.key == "st00" for c in changes)  # never touched


def test_new_node_plans_one_device_its_interfaces_and_its_cables():
    f = load_fabric(TINY, as_built=False)
    want = intent(f, None)
    st = _state_of(want, skip={("devices", "mgmt0"), ("interfaces", "mgmt0|hca0/1")}
                   | {("cables", k) for k in want["cables"] if "mgmt0|" in k})
    changes, conflicts = compare(want, st, f.name)
    assert not conflicts
    assert sorted((c.kind, c.action, c.from_template) for c in changes) == [
        ("cables", "create", False), ("devices", "create", False), ("interfaces", "create", True)]


def test_lock_as_built_joins_the_model_and_round_trips(tmp_path):
    model = tmp_path / "tiny.yaml"
    model.write_text(TINY.read_text())
    (tmp_path / "catalogue").symlink_to(ROOT / "topology/catalogue")
    old = read_lock(lock_path(TINY))
    lock = old.model_copy(update={"as_built": {"z0": ZoneAsBuilt(missing_links=[MissingLink(leaf=1, up_port=2)],
                                                                 missing_switches=[MissingSwitch(role="spine", index=1)])}})
    lock_path(model).write_text(lock_text(lock))
    design, built = load_fabric(model, as_built=False), load_fabric(model)
    assert len(design.cables) == len(built.cables) + 1
    assert [built.switches[i].name for i in built.down_switches] == ["z0-spine1"]
    assert lock_text(read_lock(lock_path(model))) == lock_text(lock)
    r = CliRunner().invoke(app, ["lock", str(model), "--check"])
    assert r.exit_code == 0, r.output  # `loom lock` keeps what import wrote
    bad = lock.model_copy(update={"as_built": {"z0": ZoneAsBuilt(missing_links=[MissingLink(leaf=9, up_port=0)])}})
    lock_path(model).write_text(lock_text(bad))
    r = CliRunner().invoke(app, ["check", str(model)])
    assert r.exit_code == 1 and "tiny.lock.json" in r.output and "leaf 9 does not exist" in r.output


# ----------------------------------------------------------------------------- failures


class _Fake(http.server.BaseHTTPRequestHandler):
    """Answers from `self.server.script`: a list of (status, headers, body) popped per request,
    the last one repeated."""

    def do_GET(self):  # noqa: N802
        self.server.seen.append(dict(self.headers))
        script = self.server.script
        status, headers, body = script.pop(0) if len(script) > 1 else script[0]
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
        self.end_headers()
        self.wfile.write(body.encode() if isinstance(body, str) else json.dumps(body).encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def fake():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    srv.seen, srv.script = [], []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _run(url: str, *args: str):
    return CliRunner().invoke(app, ["netbox", *args, str(TINY)], env={"NETBOX_URL": url, "NETBOX_TOKEN": TOKEN})


STATUS_OK = (200, {}, {"netbox-version": "4.7.3", "django-version": "6.1"})
TAGS_OK = (200, {}, {"count": 0, "next": None, "previous": None, "results": []})


@pytest.mark.parametrize("script, message", [
    ([(200, {}, {"netbox-version": "3.7.8"})], "version 3.7.8; Loom needs 4.2 or newer"),
    ([(403, {}, {"detail": "Invalid v1 token"})], "refused the token in NETBOX_TOKEN (HTTP 403)"),
    ([(429, {"Retry-After": "0"}, {"detail": "slow down"})], "kept rate-limiting us (HTTP 429, 5 retries)"),
    ([(200, {"Content-Type": "text/html"}, "<html>login</html>")], "did not answer like a NetBox API"),
])
def test_connection_failures_are_one_clear_line_and_exit_1(fake, script, message):
    fake.script = script
    url = f"http://127.0.0.1:{fake.server_address[1]}"
    for cmd in ("plan", "apply", "import"):
        r = _run(url, cmd)
        assert r.exit_code == 1, r.output
        assert message in r.output and "Traceback" not in r.output
        assert TOKEN not in r.output  # the token is never printed


def test_rate_limits_are_waited_out(fake, monkeypatch):
    from loom.netbox.client import Client

    fake.script = [(429, {"Retry-After": "0"}, {}), (429, {"Retry-After": "0"}, {}), STATUS_OK, TAGS_OK]
    c = Client(f"http://127.0.0.1:{fake.server_address[1]}", TOKEN).check()
    assert c.version == "4.7.3" and len(fake.seen) == 4


def test_unreachable_and_missing_settings():
    r = _run("http://127.0.0.1:9", "plan")
    assert r.exit_code == 1 and "is unreachable (Connection refused)" in r.output
    r = CliRunner().invoke(app, ["netbox", "plan", str(TINY)], env={"NETBOX_URL": "http://127.0.0.1:9", "NETBOX_TOKEN": ""})
    assert r.exit_code == 1 and "NETBOX_TOKEN is not set" in r.output
    r = CliRunner().invoke(app, ["netbox", "plan", str(TINY)], env={"NETBOX_URL": "ftp://x", "NETBOX_TOKEN": TOKEN})
    assert r.exit_code == 1 and "not an http(s) URL" in r.output


@pytest.mark.parametrize("url", ["http://[::1", "http://h:99999", "http://:80"])
def test_a_url_no_client_can_use_is_refused_naming_it(url):
    """Issue 35: `NETBOX_URL='http://[::1'` was a LocationParseError traceback."""
    r = CliRunner().invoke(app, ["netbox", "plan", str(TINY)], env={"NETBOX_URL": url, "NETBOX_TOKEN": TOKEN})
    assert r.exit_code == 1 and "not an http(s) URL" in r.output and "Traceback" not in r.output, r.output


# ------------------------------------------------------------------- a hostile server (issue 35)


@pytest.mark.parametrize("behaviour, message", [
    ("silent", "did not finish answering within 3 s"),
    ("trickle", "did not finish answering within 3 s"),
    ("huge", "did not finish answering within 3 s|answered more than 268435456 bytes"),
    ("garbage", "unreachable"),
    ("close", "unreachable"),
    ("bad-chunks", "broke off"),
    ("not-json", "did not answer like a NetBox API"),
    ("deep-json", "did not answer like a NetBox API"),
])
def test_a_hostile_server_is_one_clear_line_within_the_deadline(monkeypatch, behaviour, message):
    """A server that never answers, trickles, streams without end or answers garbage: every
    `loom netbox` command exits 1 within the total deadline (LOOM_NETBOX_TIMEOUT, 3 s here),
    naming the URL and what it was doing; the token never appears."""
    from tests.hostile_http import HostileServer

    with HostileServer(behaviour) as srv:
        t0 = time.monotonic()
        r = CliRunner().invoke(app, ["netbox", "plan", str(TINY)],
                               env={"NETBOX_URL": srv.url, "NETBOX_TOKEN": TOKEN, "LOOM_NETBOX_TIMEOUT": "3"})
        took = time.monotonic() - t0
    out = " ".join(r.output.split())
    assert r.exit_code == 1 and r.exception is None or isinstance(r.exception, SystemExit), r.output
    assert any(m in out for m in message.split("|")) and srv.url in out and "read the status" in out, out
    assert TOKEN not in out
    assert took < 3 + 5, took


def test_reads_are_retried_and_writes_are_not(monkeypatch):
    """A connection closed before any answer: a read (GET) is tried again after a pause and
    succeeds; a write (POST) is not repeated, since NetBox may have done it."""
    from loom.netbox.client import Client, NetBoxError
    from tests.hostile_http import HostileServer

    pauses: list[float] = []
    with HostileServer("flaky") as srv:
        c = Client(srv.url, TOKEN, sleep=pauses.append)
        assert c.call(c.api.status, what="read the status")["netbox-version"] == "4.7.3"
        assert pauses == [1.0] and [r.split()[0] for r in srv.requests] == ["GET", "GET"]
    with HostileServer("flaky") as srv:
        c = Client(srv.url, TOKEN, sleep=pauses.append)
        with pytest.raises(NetBoxError, match="unreachable"):
            c.call(lambda: c.api.http_session.post(srv.url + "/api/dcim/sites/", json={}), what="create a site")
        assert [r.split()[0] for r in srv.requests] == ["POST"] and pauses == [1.0]


def test_partitions_are_tags_on_their_member_devices_kept_apart_from_the_sites_tags():
    from loom.netbox.intent import Ref

    f = load_fabric(ROOT / "tests/models/tiny-tenants.yaml", as_built=False)
    want = intent(f, None)
    assert want["tags"]["loom-pkey-0101-full"]["name"] == "P_Key 0x0101 tenant-a full"
    assert [r.key for r in want["devices"]["z0-c00"]["tags"]] == [TAG, "loom-pkey-0101-full", "loom-pkey-0200-limited"]
    assert [r.key for r in want["devices"]["st00"]["tags"]] == [TAG, "loom-pkey-0200-full"]
    assert [r.key for r in want["devices"]["z0-leaf0"]["tags"]] == [TAG]
    st = _state_of(want)
    for name, d in want["devices"].items():  # NetBox holds the tags the intent gives
        st.objects["devices"][name]["tags"] = [{"id": 1, "slug": r.key} for r in d["tags"]]
    assert compare(want, st, f.name) == ([], [])
    # drift: someone took z0-c00 out of tenant-a in NetBox and gave it a tag of the site's own
    st.objects["devices"]["z0-c00"]["tags"] = [{"id": 1, "slug": TAG}, {"id": 7, "slug": "rack-a-hot"},
                                               {"id": 8, "slug": "loom-pkey-0200-limited"}]
    (change,), _ = compare(want, st, f.name)
    have, new = change.want["tags"]
    assert (change.kind, change.key, change.action) == ("devices", "z0-c00", "update")
    assert have == [TAG, "rack-a-hot", "loom-pkey-0200-limited"]
    assert new == [TAG, "rack-a-hot", Ref("tags", "loom-pkey-0101-full"), Ref("tags", "loom-pkey-0200-limited")]


def test_a_record_of_netbox_own_shape_passes_and_a_foreign_one_is_named():
    """The record check takes what NetBox 4 sends — a cable's `type` as a plain string, an
    interface's as {"value", "label"} — and names the field of anything else."""
    from loom.netbox.client import NetBoxError
    from loom.netbox.state import check_record

    client = type("C", (), {"url": "http://127.0.0.1:9"})()
    cable = {"id": 1, "type": "cat6", "status": {"value": "connected", "label": "Connected"}, "a_terminations": [],
             "b_terminations": [], "length_unit": None, "tags": [{"id": 3, "slug": "loom"}]}
    assert check_record(client, "cables", cable) is cable
    iface = {"id": 2, "name": "p1", "type": {"value": "200gbase-x-qsfp56", "label": "QSFP56"}, "device": {"id": 5, "name": "x"}}
    assert check_record(client, "interfaces", iface) is iface
    with pytest.raises(NetBoxError, match="field 'tags'"):
        check_record(client, "cables", {**cable, "tags": "loom"})
    with pytest.raises(NetBoxError, match="field 'name'"):
        check_record(client, "interfaces", {**iface, "name": None})


@pytest.mark.parametrize("body, refused", [
    (b'{"count": 3, "next": null, "previous": null, "results": [1, 2, 3]}', False),
    (b'{"count": 1000000000, "next": null, "results": []}', True),  # a million page reads
    (b'{"count": "many", "results": []}', True),
    (b'{"count": -1, "results": []}', True),
    (b'{"count": 2, "results": [], "count": 1000000000}', True),  # the last key is the one JSON keeps
    (b'{"results": [], "count": 1000000000}', True),  # not first: parsed whole
])
def test_a_list_page_count_must_be_a_count(body, refused):
    from loom.netbox.client import NotNetBox, _check_count

    class Answer:
        headers, content = {"Content-Type": "application/json"}, body

    if refused:
        with pytest.raises(NotNetBox):
            _check_count(Answer())
    else:
        _check_count(Answer())
