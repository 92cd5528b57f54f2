"""`loom netbox` against a real NetBox on 127.0.0.1 (tests/netboxlab.py: PostgreSQL, Redis and
gunicorn on private ports, from a cached migrated dump), the issue's acceptance on the tiny
two-zone fabric: apply, no changes, one more node, drift, a conflict left alone, a cable marked
`planned` routed around, identities into the lock and the inventory.  The Fire-Flyer 2 figures
(first apply, no-change plan) are `make bench-netbox`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pynetbox
import pytest
from typer.testing import CliRunner

from loom.cli import app
from loom.expand import load_fabric, lock_path, read_lock

from .netboxlab import NetBox

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def netbox():
    with NetBox(workers=2) as nb:
        yield nb


@pytest.fixture
def model(tmp_path):
    """The tiny model and its lock in a directory of their own (import writes the lock)."""
    m = tmp_path / "tiny.yaml"
    m.write_text((ROOT / "topology/tiny.yaml").read_text())
    lock_path(m).write_text(lock_path(ROOT / "topology/tiny.yaml").read_text())
    (tmp_path / "catalogue").symlink_to(ROOT / "topology/catalogue")
    return m


def loom(nb: NetBox, *args) -> tuple[int, str]:
    r = CliRunner().invoke(app, [str(a) for a in args], env=nb.env())
    assert "Traceback" not in r.output, r.output
    assert nb.token not in r.output
    return r.exit_code, r.output


def plan_json(nb: NetBox, model: Path) -> tuple[int, dict]:
    code, out = loom(nb, "netbox", "plan", model, "--json")
    return code, json.loads(out)


def api(nb: NetBox):
    return pynetbox.api(nb.url, token=nb.token)


def test_acceptance_on_a_live_netbox(netbox, model):
    nb = api(netbox)
    hand = nb.dcim.sites.create(name="hand-made", slug="hand-made")  # someone else's: never touched
    code, out = loom(netbox, "netbox", "apply", model)
    assert code == 0, out
    code, out = loom(netbox, "netbox", "plan", model)
    assert code == 0 and "No changes." in out, out
    site = nb.dcim.sites.get(slug="lab")
    fabric = load_fabric(model)
    assert nb.dcim.devices.count(site_id=site.id) == len(fabric.switches) + len(fabric.nodes)
    assert nb.dcim.cables.count(site_id=site.id, status="planned") == len(fabric.cables)

    # one more node: exactly one device, its interface, its cable
    grown = model.read_text().replace("count: 9, zones: [z0]", "count: 10, zones: [z0]")
    model.write_text(grown)
    code, p = plan_json(netbox, model)
    assert code == 2 and p["counts"] == {"devices": {"create": 1, "update": 0, "delete": 0},
                                         "interfaces": {"create": 1, "update": 0, "delete": 0},
                                         "cables": {"create": 1, "update": 0, "delete": 0}}, p["counts"]
    assert {c["key"] for c in p["changes"] if c["kind"] == "devices"} == {"z0-c09"}

    # a hand-made object in Loom's way: named, nothing applied, left exactly as it was
    other = nb.dcim.devices.create(name="z0-c09", device_type=nb.dcim.device_types.get(slug="compute").id,
                                   role=nb.dcim.device_roles.get(slug="compute").id, site=site.id, serial="HAND-1")
    before = dict(nb.dcim.devices.get(other.id))
    code, out = loom(netbox, "netbox", "apply", model)
    assert code == 1 and "device z0-c09" in out and "not Loom's" in out and "nothing was applied" in out, out
    after = dict(nb.dcim.devices.get(other.id))
    assert {k: v for k, v in after.items() if k != "last_updated"} == {k: v for k, v in before.items() if k != "last_updated"}
    assert nb.dcim.cables.count(site_id=site.id) == len(fabric.cables)
    nb.dcim.devices.get(other.id).delete()
    code, out = loom(netbox, "netbox", "apply", model)
    assert code == 0, out
    assert loom(netbox, "lock", model)[0] == 0  # the model change records its node in the lock, as always
    assert loom(netbox, "netbox", "plan", model)[0] == 0
    assert nb.dcim.sites.get(hand.id).name == "hand-made"

    # drift: a Loom cable edited by hand shows, and apply sets it back
    cable = next(iter(nb.dcim.cables.filter(site_id=site.id, label="z0-leaf0/5")))
    cable.length = 42
    cable.save()
    code, out = loom(netbox, "netbox", "plan", model)
    assert code == 2 and re.search(r"~ cables .*drift.*length 42\.0 → \d", out), out
    assert loom(netbox, "netbox", "apply", model)[0] == 0
    assert loom(netbox, "netbox", "plan", model)[0] == 0

    # technicians install everything, one leaf-spine cable is marked planned again
    ids = [c.id for c in nb.dcim.cables.filter(site_id=site.id)]
    nb.dcim.cables.update([{"id": i, "status": "connected"} for i in ids])
    code, out = loom(netbox, "netbox", "import", model)
    assert code == 0 and "0 missing" in out and "0 change(s)" in out, out
    leaf_up = next(iter(nb.dcim.cables.filter(site_id=site.id, label="z0-leaf1/6")))  # leaf 1, up-link 1
    leaf_up.status = "planned"
    leaf_up.save()
    assert loom(netbox, "netbox", "plan", model)[0] == 0  # status belongs to the floor: no drift
    code, out = loom(netbox, "netbox", "import", model)
    assert code == 0 and "missing link leaf 1 up-link 1" in out and read_lock(lock_path(model)).as_built == {}, out
    code, out = loom(netbox, "netbox", "import", model, "--write")
    assert code == 0 and "wrote" in out, out
    assert [m.model_dump() for m in read_lock(lock_path(model)).as_built["z0"].missing_links] == [
        {"leaf": 1, "up_port": 1}]
    assert len(load_fabric(model).cables) == len(load_fabric(model, as_built=False).cables) - 1
    code, out = loom(netbox, "check", model)
    assert code == 0, out  # routed around it: reachable, deadlock-free, at the as-built bound
    assert loom(netbox, "lock", model, "--check")[0] == 0
    assert loom(netbox, "netbox", "plan", model)[0] == 0  # NetBox still holds the design

    # identities: serial, asset tag, port GUID and MAC recorded in NetBox reach lock and inventory
    dev = nb.dcim.devices.get(name="z0-c00", site_id=site.id)
    dev.serial, dev.asset_tag = "SN-0001", "AT-0001"
    dev.save()
    iface = nb.dcim.interfaces.get(device_id=dev.id, name="hca0/1")
    iface.wwn = "98:03:9b:03:00:aa:bb:cc"
    iface.save()
    mac = nb.dcim.mac_addresses.create(mac_address="98:03:9B:AA:BB:CC", assigned_object_type="dcim.interface",
                                       assigned_object_id=iface.id)
    iface.primary_mac_address = mac.id
    iface.save()
    code, out = loom(netbox, "netbox", "import", model, "--write")
    assert code == 0 and "SN-0001" in out and "GUID" in out, out
    lock = read_lock(lock_path(model))
    assert lock.assets["z0-c00"].serial == "SN-0001" and lock.nodes["z0-c00"].ports["hca0/1"].guid == 0x98039B0300AABBCC
    inv = model.parent / "inv"
    assert loom(netbox, "inventory", model, "--out", inv)[0] == 0
    host = (inv / "host_vars/z0-c00.yml").read_text()
    assert "loom_serial: SN-0001" in host and "loom_asset_tag: AT-0001" in host
    assert "0x98039b0300aabbcc" in host and "98:03:9b:aa:bb:cc" in host

    # the model shrinks back: the node Loom added goes, with its cable; the hand-made site stays
    model.write_text(grown.replace("count: 10, zones: [z0]", "count: 9, zones: [z0]"))
    code, p = plan_json(netbox, model)
    assert code == 2 and {(c["kind"], c["key"]) for c in p["changes"] if c["action"] == "delete"} >= {("devices", "z0-c09")}
    assert loom(netbox, "netbox", "apply", model)[0] == 0
    assert nb.dcim.devices.get(name="z0-c09") is None and nb.dcim.sites.get(hand.id) is not None


def test_partitions_are_device_tags_on_a_live_netbox(netbox, tmp_path):
    """tiny-tenants (its own site): each member device carries its partition tags; a node moved
    between tenants is one device's tags changed, and a tag of the site's own on it is kept."""
    nb = api(netbox)
    text = (ROOT / "tests/models/tiny-tenants.yaml").read_text()
    m = tmp_path / "tiny-tenants.yaml"
    m.write_text(text)
    code, out = loom(netbox, "netbox", "apply", m)
    assert code == 0, out
    site = nb.dcim.sites.get(slug="tiny-tenants")
    dev = nb.dcim.devices.get(name="z0-c08", site_id=site.id)
    assert sorted(t.slug for t in dev.tags) == ["loom", "loom-pkey-0101-full", "loom-pkey-0200-limited"]
    assert nb.dcim.devices.count(site_id=site.id, tag="loom-pkey-0102-full") == 9
    assert nb.dcim.devices.count(site_id=site.id, tag="loom-pkey-0200-full") == 4
    assert plan_json(netbox, m)[0] == 0
    nb.extras.tags.create(name="hot aisle", slug="hot-aisle")
    nb.dcim.devices.update([{"id": dev.id, "tags": [{"slug": t.slug} for t in dev.tags] + [{"slug": "hot-aisle"}]}])
    m.write_text(text.replace("members: [{zone: z0, role: compute, membership: full}]",
                              'members: [{nodes: "z0-c[00-07]", membership: full}]').replace(
        "members: [{zone: z1, role: compute, membership: full}]",
        'members: [{zone: z1, role: compute, membership: full}, {nodes: z0-c08, membership: full}]'))
    code, p = plan_json(netbox, m)
    assert code == 2 and [(c["kind"], c["key"], c["action"]) for c in p["changes"]] == [("devices", "z0-c08", "update")]
    code, out = loom(netbox, "netbox", "apply", m)
    assert code == 0, out
    dev = nb.dcim.devices.get(name="z0-c08", site_id=site.id)
    assert sorted(t.slug for t in dev.tags) == ["hot-aisle", "loom", "loom-pkey-0102-full", "loom-pkey-0200-limited"]
    assert plan_json(netbox, m)[0] == 0


def test_a_growth_without_a_lock_moves_devices_in_two_phases(netbox, tmp_path):
    """Without a lock, one more node shifts 22 devices to other rack units (a new node where a
    storage node was, two switches swapping units).  NetBox refuses a device in a unit another
    holds: this apply failed with "U13 is already occupied" until moving devices left their
    units first (loom/netbox/apply.py)."""
    m = tmp_path / "tiny.yaml"  # no lock beside it: placement is computed afresh
    m.write_text((ROOT / "topology/tiny.yaml").read_text().replace("site: lab", "site: growth-lab"))
    (tmp_path / "catalogue").symlink_to(ROOT / "topology/catalogue")
    code, out = loom(netbox, "netbox", "apply", m)
    assert code == 0, out
    m.write_text(m.read_text().replace("count: 9, zones: [z0]", "count: 10, zones: [z0]"))
    code, p = plan_json(netbox, m)
    moves = [c for c in p["changes"] if c["kind"] == "devices" and c["action"] == "update" and "position" in c["fields"]]
    assert code == 2 and len(moves) >= 10, p["counts"]
    code, out = loom(netbox, "netbox", "apply", m)
    assert code == 0 and "out of their rack units" in out, out
    assert plan_json(netbox, m)[0] == 0
    nb = api(netbox)
    site = nb.dcim.sites.get(slug="growth-lab")
    fabric = load_fabric(m)
    held = {d.name: (d.rack.name, int(d.position)) for d in nb.dcim.devices.filter(site_id=site.id)}
    assert held == {x.name: (x.rack, x.ru) for x in [*fabric.switches, *fabric.nodes]}
