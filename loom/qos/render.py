"""QoS files rendered from the plan through the Jinja2 templates in `templates/`."""

from __future__ import annotations

import json

from loom.render.templates import render

from .plan import QosPlan

ECN = {"min": 150000, "max": 1500000, "probability": 5}  # bytes, bytes, percent: marking starts early


def _vlarb(entries) -> str:
    return ",".join(f"{vl}:{w}" for vl, w in entries) or "0:0"


def opensm_qos_conf(fabric_name: str, plan: QosPlan) -> str:
    summary = ", ".join(f"{c.name}=SL{c.sl}/VL{c.vl}" for c in plan.classes)
    return render("opensm/qos.conf.j2", fabric=fabric_name, summary=summary, max_vls=plan.max_vls,
                  high_limit=plan.high_limit, vlarb_high=_vlarb(plan.vlarb_high), vlarb_low=_vlarb(plan.vlarb_low),
                  sl2vl=",".join(map(str, plan.sl2vl)))


def opensm_qos_policy(fabric, plan: QosPlan, plane: int = 0) -> str | None:
    """The SA's per-direction SLs (None without the cross-zone direction split): port groups per
    zone and one match rule per class and falling zone pair."""
    if not plan.sl_offset:
        return None
    names = [z.name for z in fabric.model.zones]
    zones = [{"name": z, "guids": [f"0x{p.guid:016x}" for p in fabric.ports if p.zone == z and p.plane == plane]}
             for z in names]
    falling = [(a, b) for i, a in enumerate(names) for j, b in enumerate(names) if i > j]
    return render("opensm/qos-policy.conf.j2", fabric=fabric.name, zones=[z for z in zones if z["guids"]],
                  classes=plan.classes, falling=falling, sl_offset=plan.sl_offset)


def _dwrr(plan: QosPlan) -> list[dict]:
    pct = [round(c.share * 100) for c in plan.classes]
    pct[0] += 100 - sum(pct)  # percentages that add up to 100
    return [{**c.__dict__, "dwrr": p} for c, p in zip(plan.classes, pct)]


def sonic_qos(plan: QosPlan, ports: list[str]) -> dict:
    pfc = ",".join(str(c.tc) for c in plan.classes if c.lossless)
    text = render("sonic/qos_config_db.json.j2", classes=_dwrr(plan), ports=ports, pfc=pfc, ecn=ECN)
    return json.loads(text)


def mlnx_qos(plan: QosPlan, node_type: str, nics: list[str]) -> str:
    classes = _dwrr(plan)
    prio = {c["tc"]: c for c in classes}
    return render("host/mlnx_qos.sh.j2", node_type=node_type, nics=nics,
                  pfc=",".join(c["name"] for c in classes if c["lossless"]) or "none",
                  pfc_vector=",".join("1" if prio.get(i, {}).get("lossless") else "0" for i in range(8)),
                  tsa=",".join("ets" for _ in range(8)),
                  tcbw=",".join(str(prio[i]["dwrr"]) if i in prio else "0" for i in range(8)))
