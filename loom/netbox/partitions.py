"""Partitions in NetBox: a tag per partition and membership (`loom-pkey-0101-full`, named
`P_Key 0x0101 tenant-a full`) on every device that is that kind of member, so NetBox shows — and
filters by — who is in which tenant.  Tags, because a device may be in several partitions and
NetBox has them without a plugin or a custom field to install first; on devices, not interfaces,
because membership is per node (every port of a member node carries it) and Loom creates the
devices (NetBox makes the interfaces from their type, after the fact).

Loom owns the `loom-pkey-` tags on its devices: a plan compares them (drift, a model change) and
apply sets them, keeping every other tag a device has (those are the site's).
"""

from __future__ import annotations

from loom.expand import Fabric
from loom.expand.partitions import memberships

PREFIX = "loom-pkey-"
COLOUR = {"full": "3c9d4e", "limited": "95a5a6"}


def tag_slug(pkey: int, membership: str) -> str:
    return f"{PREFIX}{pkey:04x}-{membership}"


def partition_tags(fabric: Fabric) -> tuple[dict[str, dict], dict[str, list[str]]]:
    """The partition tags ({slug: fields}) and each member device's share of them ({node: slugs})."""
    tags: dict[str, dict] = {}
    devices: dict[str, list[str]] = {}
    for m in memberships(fabric):
        for node, how in m.members.items():
            slug = tag_slug(m.pkey, how)
            tags.setdefault(slug, {"name": f"P_Key 0x{m.pkey:04x} {m.name} {how}", "slug": slug, "color": COLOUR[how],
                                   "description": f"{fabric.name}: {how} members of partition {m.name} "
                                   f"(P_Key 0x{m.pkey:04x}), set by Loom"})
            devices.setdefault(node, []).append(slug)
    return tags, devices


def tag_changes(kind: str, want: dict, have: dict) -> dict:
    """A device whose partition tags differ: {"tags": (its tags, its other tags + the model's
    partition tags)}; other tags are kept as they are (slugs), never Loom's to change.  The
    model's tags are the intent's references (`Ref`), so an apply creates them first."""
    if kind != "devices":
        return {}
    held = [t.get("slug") for t in have.get("tags") or []]
    mine = sorted((r for r in want.get("tags", []) if r.key.startswith(PREFIX)), key=lambda r: r.key)
    if sorted(s for s in held if s and s.startswith(PREFIX)) == [r.key for r in mine]:
        return {}
    return {"tags": (held, [s for s in held if s and not s.startswith(PREFIX)] + mine)}
