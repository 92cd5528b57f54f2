"""OpenSM's `partitions.conf` (`opensm -P`) from the model's partitions: one entry per
partition, its members by port GUID, IPoIB broadcast-group flags (MTU, rate, and the SL of the
partition's traffic class).  OpenSM's codes: MTU 256…4096 → 1…5, rate in Gb/s → IB rate enum."""

from __future__ import annotations

from loom.expand import Fabric
from loom.expand.partitions import memberships, port_members
from loom.render.templates import render

MTU_CODES = {256: 1, 512: 2, 1024: 3, 2048: 4, 4096: 5}
RATE_CODES = {10: 3, 20: 6, 40: 7, 56: 12, 100: 16, 200: 17, 400: 21}


def _flags(ipoib, sl: int | None) -> str:
    if ipoib is None:
        return ""
    flags = ["ipoib", f"mtu={MTU_CODES[ipoib.mtu]}"]
    if ipoib.rate is not None:
        flags.append(f"rate={RATE_CODES[ipoib.rate]}")
    if sl is not None:
        flags.append(f"sl={sl}")
    return ", " + ", ".join(flags)


def class_sls(fabric: Fabric) -> dict[str, int]:
    """Traffic class name → its SL (the model's QoS plan; empty without QoS)."""
    from loom.qos import plan_qos

    qos = plan_qos(fabric.model)
    return {c.name: c.sl for c in qos.classes} if qos else {}


def partitions_conf(fabric: Fabric, plane: int = 0) -> str | None:
    """The file's text for one plane's subnet, or None when the model has no partitions."""
    parts = memberships(fabric)
    if not parts:
        return None
    sls = class_sls(fabric)
    rows = []
    for m in parts:
        ports = port_members(fabric, m, plane)
        if not ports:
            continue  # none of its nodes is cabled into this plane
        sl = sls.get(m.qos_class) if m.qos_class else None
        rows.append({"name": m.name, "pkey": m.pkey, "ports": ports, "flags": _flags(m.ipoib, sl), "class_name": m.qos_class,
                     "sl": sl, "full": sum(1 for _, x in ports if x == "full"),
                     "limited": sum(1 for _, x in ports if x == "limited")})
    return render("opensm/partitions.conf.j2", fabric=fabric.name, plane=plane, partitions=rows)


def parse_partitions_conf(text: str) -> dict[int, dict[str, str]]:
    """{P_Key: {member: "full" | "limited"}} of a partitions.conf (members: `0x<port GUID>`,
    or OpenSM's keywords ALL, SELF, ...): what a restore of a saved file must be verified
    against.  Comments and flags are skipped; ValueError on an entry without a P_Key."""
    body = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    out: dict[int, dict[str, str]] = {}
    for entry in body.split(";"):
        if not entry.strip():
            continue
        head, _, members = entry.partition(":")
        name_key = head.split(",", 1)[0]
        if "=" not in name_key:
            raise ValueError(f"partition `{name_key.strip()}` has no P_Key")
        pkey = int(name_key.split("=", 1)[1].strip(), 16)
        table = out.setdefault(pkey, {})
        for m in members.split(","):
            if m.strip():
                who, _, how = m.strip().partition("=")
                table[who.strip().lower()] = how.strip() or "limited"
    return out
