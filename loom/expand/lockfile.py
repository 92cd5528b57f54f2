"""The lock file: where everything that exists already is, so a change to the model changes the
floor only where it must (Terraform's state, for cables).

`topology/<model>.lock.json` sits next to `topology/<model>.yaml`.  JSON (also valid YAML 1.2),
one device per line: it reads in 0.05 s for 4,096 nodes where a YAML parser takes seconds, and
its name stays out of `topology/*.yaml` globs.  It holds, by name:
- every switch: rack, RU, GUID and LID;
- every node: rack, RU and, per NIC port (`nic/port`), the switch and port it is cabled to, its
  port GUID and LID;
- the rack list (names in walking order) and the first switch LID (`switch_lid_base`): CA ports
  take LIDs below it, switches from it upwards, so neither kind of growth renumbers the other;
- what NetBox knows and the model cannot (`loom netbox import --write`, see docs/netbox.md):
  `assets` (serial, asset tag, real MACs per device) and `as_built` (per zone, the design links
  and switches that are not there: `missing_links` / `missing_switches` entries, merged into the
  model's own when the fabric is loaded, so routing and checks see the fabric as it stands);
- `down`: what an operator marked down with `loom mark down` (switch name or cable ID → reason,
  date it should be back, who, since): routed around like `as_built`, until `loom mark up`;
- `digest`: SHA-256 of everything above, so `loom lock --check` notices a hand edit;
- GUIDs as hex strings ("0x0002c90100000010"), LIDs as numbers (InfiniBand); host addresses and
  switch loopbacks (Ethernet).

Expansion reads it first (`loom.expand.build`): what is locked stays, new things take free
places, and the places of removed things stay taken for the change that removes them (they are
freed when `loom lock` rewrites the file).  One line per device keeps `git diff` readable.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationError, field_validator

from loom.model.errors import ModelError, Problem
from loom.model.reading import read_text
from loom.model.schema import MissingLink, MissingSwitch, Strict

from .fabric import HOST, Fabric

VERSION = 1
ABOUT = ("Loom lock file: where every switch, node and cable of this fabric is (rack, RU, switch port, "
         "GUID, LID). Written by `loom lock MODEL`; commit it next to the model. Do not edit by hand "
         "(`loom lock --check` refuses a file whose digest no longer matches).")
Guid = Annotated[int, BeforeValidator(lambda v: int(v, 16) if isinstance(v, str) else v), Field(ge=0, le=2**64 - 1)]
MAX_LID = 0xBFFF  # the last unicast LID: 0xC000 and up are multicast


class LockedPort(Strict):
    switch: str = Field(description="switch the NIC port is cabled to")
    port: int = Field(ge=1, description="switch port number")
    lid: int = Field(0, ge=0, le=MAX_LID, description="LID of the NIC port (InfiniBand), 0 on Ethernet")
    guid: Guid = Field(0, description="port GUID (InfiniBand), 0 on Ethernet")
    address: str | None = Field(None, description="host address on its /31 (Ethernet)")


class LockedNode(Strict):
    rack: str
    ru: int = Field(ge=1)
    ports: dict[str, LockedPort] = Field(description="`nic/port` → where it is cabled")


class LockedSwitch(Strict):
    rack: str
    ru: int = Field(ge=1)
    lid: int = Field(0, ge=0, le=MAX_LID)
    guid: Guid = 0
    loopback: str | None = None


class Asset(Strict):
    serial: str | None = Field(None, max_length=100, description="serial number (NetBox)")
    asset_tag: str | None = Field(None, max_length=100, description="asset tag (NetBox)")
    macs: dict[str, str] = Field(default_factory=dict, description="port → MAC address (NetBox)")


class ZoneAsBuilt(Strict):
    missing_links: list[MissingLink] = Field(default_factory=list, max_length=65536)
    missing_switches: list[MissingSwitch] = Field(default_factory=list, max_length=65536)


class Mark(Strict):
    """Something an operator declared down (`loom mark down`): routed around until marked up."""

    reason: str = Field("", max_length=500, description="why it is down (a ticket, a symptom)")
    until: str | None = Field(None, pattern=r"^\d{4}-\d{2}-\d{2}$", description="the date it should be back (YYYY-MM-DD)")
    by: str = Field("", max_length=100, description="who marked it")
    since: str = Field("", max_length=40, description="when it was marked (ISO 8601)")

    @field_validator("until")
    @classmethod
    def _a_real_date(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                datetime.date.fromisoformat(v)
            except ValueError:
                raise ValueError(f"{v} is not a date of the calendar") from None
        return v


class Lock(Strict):
    about: str = Field(ABOUT, description="what the file is")
    version: Literal[1] = Field(VERSION, description="lock format version")
    fabric: str = Field(description="fabric name (the model's `name`)")
    digest: str = Field("", description="SHA-256 of the file's body, written by `loom lock`")
    switch_lid_base: int = Field(0, ge=0, description="first switch LID; CA ports take LIDs below it")
    racks: list[str] = Field(description="rack names in walking order")
    switches: dict[str, LockedSwitch]
    nodes: dict[str, LockedNode]
    assets: dict[str, Asset] = Field(default_factory=dict, description="device → what NetBox records of it")
    as_built: dict[str, ZoneAsBuilt] = Field(default_factory=dict, description="zone → what is not on the floor")
    down: dict[Annotated[str, Field(max_length=200)], Mark] = Field(default_factory=dict, max_length=65536,
                                  description="switch name or cable ID → why an operator marked it down (`loom mark`)")


def _short(key) -> str:
    """A key of a hostile file, as an error message may quote it."""
    text = str(key)
    return text if len(text) <= 60 else text[:57] + "..."


def lock_path(model_path: str | Path) -> Path:
    """`topology/fire-flyer-2.yaml` → `topology/fire-flyer-2.lock.json`."""
    p = Path(model_path)
    return p.with_name(p.name.removesuffix(".yaml").removesuffix(".yml") + ".lock.json")


def switch_lid_base(ca_ports: int) -> int:
    """First switch LID of a fresh lock: room for CA ports to grow to twice their number, rounded
    up to a multiple of 1024 (LFTs stay small; a switch LID moves only on `--relayout`)."""
    return 1024 * (-(-(2 * ca_ports + 1) // 1024))


# ------------------------------------------------------------------------------------ read


def read_lock(path: Path, signed: bool = True) -> Lock | None:
    """The lock at `path`, None if there is none; a malformed file is a ModelError naming it.

    `signed`: a file whose digest does not match its body (edited by hand, or half-merged) is
    refused too, so no command routes, checks or pushes from identities nobody wrote with
    `loom lock`.  Only `loom lock` itself reads without it: rewriting the file is how an edit
    is accepted, and `--check` names the mismatch in its own words."""
    if not path.exists():
        return None
    fix = f"restore it from git (`git checkout -- {path}`), or start over with `loom lock MODEL --relayout`"
    text = read_text(path, "lock file", tables=True)  # bounded, regular, UTF-8 (a ModelError naming the file)
    try:
        data = json.loads(text)
    except RecursionError:
        raise ModelError(str(path), [Problem("", "not valid JSON: nested too deeply", fix)]) from None
    except json.JSONDecodeError as exc:
        raise ModelError(str(path), [Problem("", f"not valid JSON: {exc.msg} (column {exc.colno})", fix,
                                             line=exc.lineno)]) from None
    try:
        lock = Lock.model_validate(data)
    except ValidationError as exc:
        probs = [Problem(".".join(_short(x) for x in e["loc"]), e["msg"], fix) for e in exc.errors()[:10]]
        raise ModelError(str(path), probs) from None
    if signed and not _signed_text(text, lock.digest) and lock.digest != digest(lock):
        raise ModelError(str(path), [Problem("digest", "the file was edited by hand (its digest does not match its body)",
                                             f"revert it (`git checkout -- {path}`), or accept the edit with "
                                             "`loom lock MODEL`, which re-signs it")])
    return lock


def with_as_built(model, lock: Lock, lock_file: str):
    """`model` with the lock's `as_built` entries added to its zones' `missing_links` and
    `missing_switches` (entries the model already lists are not repeated).  An entry naming a
    zone, leaf, up-link or switch the model does not have is a ModelError naming the lock file."""
    from loom.model.rules import missing_links

    unknown = sorted(set(lock.as_built) - {z.name for z in model.zones})
    if unknown:
        raise ModelError(lock_file, [Problem(f"as_built.{unknown[0]}", f"zone {unknown[0]} is not in the model",
                                             "run `loom netbox import MODEL --write` again, or `loom lock MODEL --relayout`")])
    zones = []
    for z in model.zones:
        extra = lock.as_built.get(z.name)
        if extra is None or not hasattr(z, "missing_links"):
            zones.append(z)
            continue
        links = list(z.missing_links) + [m for m in extra.missing_links if m not in z.missing_links]
        down = list(z.missing_switches) + [m for m in extra.missing_switches if m not in z.missing_switches]
        zones.append(z.model_copy(update={"missing_links": links, "missing_switches": down}))
    merged = model.model_copy(update={"zones": zones})
    problems = [Problem("as_built: " + ".".join(map(str, f.loc)), f.message, f.fix) for f in missing_links(merged)]
    if problems:
        raise ModelError(lock_file, problems[:10])
    return merged


def lock_error(lock_file: str, path: str, message: str) -> ModelError:
    """A lock that contradicts itself (two things in one place): name the file, the entry, the fix."""
    return ModelError(lock_file, [Problem(path, message, "correct the entry, or start over with "
                                          "`loom lock MODEL --relayout` (every device may move)")])


# ----------------------------------------------------------------------------------- write


def lock_of(fabric: Fabric, lid_base: int) -> Lock:
    """The lock that reproduces `fabric`: every device's place and identity, by name."""
    c = fabric.cables
    host_rows = (c.a_kind == HOST).nonzero()[0]
    nodes: dict[str, dict] = {n.name: {"rack": n.rack, "ru": n.ru, "ports": {}} for n in fabric.nodes}
    for i in host_rows.tolist():
        hp = fabric.ports[int(c.a_dev[i])]
        sw = fabric.switches[int(c.b_dev[i])]
        nodes[fabric.nodes[hp.node].name]["ports"][f"{hp.nic}/{hp.port}"] = LockedPort(
            switch=sw.name, port=int(c.b_port[i]), lid=hp.lid, guid=hp.guid, address=hp.address)
    return Lock(fabric=fabric.name, switch_lid_base=lid_base, racks=list(fabric.racks),
                switches={s.name: LockedSwitch(rack=s.rack, ru=s.ru, lid=s.lid, guid=s.guid, loopback=s.loopback)
                          for s in fabric.switches},
                nodes={k: LockedNode(**v) for k, v in nodes.items()},
                assets=dict(fabric.assets), as_built=dict(fabric.as_built), down=dict(fabric.marked))


def _j(x) -> str:
    return json.dumps(x)


def _ident(x: LockedPort | LockedSwitch) -> str:
    """The identities of a port or switch: LID and GUID (InfiniBand), address or loopback (Ethernet)."""
    out = f', "lid": {x.lid}, "guid": "{x.guid:#018x}"' if x.guid else ""
    for key in ("address", "loopback"):
        if getattr(x, key, None):
            out += f', "{key}": "{getattr(x, key)}"'
    return out


def _body(lock: Lock) -> list[str]:
    lines = [f'"version": {lock.version}', f'"fabric": {_j(lock.fabric)}', f'"switch_lid_base": {lock.switch_lid_base}',
             f'"racks": {_j(lock.racks)}']
    sw = [f'    {_j(n)}: {{"rack": {_j(s.rack)}, "ru": {s.ru}{_ident(s)}}}' for n, s in lock.switches.items()]
    nodes = []
    for name, n in lock.nodes.items():
        ports = ", ".join(f'{_j(k)}: {{"switch": {_j(p.switch)}, "port": {p.port}{_ident(p)}}}'
                          for k, p in n.ports.items())
        nodes.append(f'    {_j(name)}: {{"rack": {_j(n.rack)}, "ru": {n.ru}, "ports": {{{ports}}}}}')
    out = [*lines, '"switches": {\n' + ",\n".join(sw) + "\n  }", '"nodes": {\n' + ",\n".join(nodes) + "\n  }"]
    for key in ("assets", "as_built", "down"):  # only when there are any: older files keep their bytes and digest
        if getattr(lock, key):
            rows = [f'    {_j(k)}: {_j(v.model_dump(exclude_defaults=True))}' for k, v in getattr(lock, key).items()]
            out.append(f'"{key}": {{\n' + ",\n".join(rows) + "\n  }")
    return out


def digest(lock: Lock) -> str:
    return hashlib.sha256("\n".join(_body(lock)).encode()).hexdigest()


_HEAD = re.compile(r'\{\n  "about": [^\n]*,\n  "digest": "[0-9a-f]{64}",\n  ')
_ITEM = re.compile(r',\n  (?=")')  # between top-level entries (one inside a section is indented further)


def _signed_text(text: str, claimed: str) -> bool:
    """Does the file's own body text hash to its digest?  The quick check (a hash of the bytes
    `lock_text` wrote, ~30 ms for 36,000 entries where rebuilding the body from the parsed
    lock takes ~0.3 s); a file laid out differently is judged by `digest` itself."""
    head = _HEAD.match(text)
    if head is None or not text.endswith("\n}\n"):
        return False
    body = _ITEM.split(text[head.end():-3])
    return hashlib.sha256("\n".join(body).encode()).hexdigest() == claimed


def lock_text(lock: Lock) -> str:
    """The file's bytes: what it is, its digest, the body (same lock ⇒ same bytes)."""
    head = [f'"about": {_j(ABOUT)}', f'"digest": "{digest(lock)}"']
    return "{\n" + ",\n".join("  " + x for x in head + _body(lock)) + "\n}\n"


# ----------------------------------------------------------------------------------- check


def differences(old: Lock, new: Lock, limit: int = 20) -> list[str]:
    """What `new` (the lock the model gives) has that `old` (the file) does not, in words."""
    out = []
    for kind, a, b in (("switch", old.switches, new.switches), ("node", old.nodes, new.nodes)):
        out += [f"{kind} {n} is in the model but not in the lock" for n in b if n not in a]
        out += [f"{kind} {n} is in the lock but no longer in the model" for n in a if n not in b]
        out += [f"{kind} {n}: lock {a[n].model_dump()} != model {b[n].model_dump()}" for n in b if n in a and a[n] != b[n]]
    if old.racks != new.racks:
        out.append(f"racks: lock {len(old.racks)} racks, model {len(new.racks)}")
    if old.switch_lid_base != new.switch_lid_base:
        out.append(f"switch_lid_base: lock {old.switch_lid_base}, model {new.switch_lid_base}")
    if old.fabric != new.fabric:
        out.append(f"fabric: lock {old.fabric}, model {new.fabric}")
    return out[:limit] + ([f"... {len(out) - limit} more"] if len(out) > limit else [])


def with_found_guids(lock: Lock, found: dict[str, int], ca_of: dict[tuple[str, str], str]) -> tuple[Lock, int]:
    """The lock with the GUIDs discovery found (`loom discover --record`): switch node GUIDs by
    switch name, NIC port GUIDs by `ca:port` (`ca_of` maps (node, nic) to the CA name).
    Returns the new lock and how many GUIDs changed."""
    changed = 0

    def update(entry, key: str):
        nonlocal changed
        guid = found.get(key)
        if guid is None or guid == entry.guid:
            return entry
        changed += 1
        return entry.model_copy(update={"guid": guid})

    switches = {name: update(s, name) for name, s in lock.switches.items()}
    nodes = {}
    for name, n in lock.nodes.items():
        ports = {}
        for k, p in n.ports.items():
            nic, _, port = k.partition("/")
            ports[k] = update(p, f"{ca_of.get((name, nic), '')}:{port}")
        nodes[name] = n.model_copy(update={"ports": ports})
    return lock.model_copy(update={"switches": switches, "nodes": nodes}), changed
