"""OpenSM's QoS files rendered from the plan through the Jinja2 templates in `templates/` (RoCE's
lossless set: `loom.render.sonic` for switches, `loom.render.roce.mlnx_qos` for NICs)."""

from __future__ import annotations

from loom.render.templates import render

from loom.qos.plan import QosPlan

def options_conf(fabric_name: str, model, plan: QosPlan | None) -> str:
    """OpenSM's options file as loom writes it for a model: the QoS options of its traffic
    classes (`qos FALSE` without), then its `opensm:` options."""
    return (opensm_qos_conf(fabric_name, plan) if plan else "qos FALSE\n") + sm_options(model)


def sm_options(model) -> str:
    """The model's `opensm:` options, one line each, as OpenSM's options file takes them."""
    wire = model.opensm.max_wire_smps
    return f"max_wire_smps {wire}\n" if wire else ""


def _vlarb(entries) -> str:
    return ",".join(f"{vl}:{w}" for vl, w in entries) or "0:0"


def opensm_qos_conf(fabric_name: str, plan: QosPlan) -> str:
    summary = ", ".join(f"{c.name}=SL{c.sl}/VL{c.vl}" for c in plan.classes)
    return render("opensm/qos.conf.j2", fabric=fabric_name, summary=summary, max_vls=plan.max_vls,
                  high_limit=plan.high_limit, vlarb_high=_vlarb(plan.vlarb_high), vlarb_low=_vlarb(plan.vlarb_low),
                  sl2vl=",".join(map(str, plan.sl2vl)))


def opensm_qos_policy(fabric, plan: QosPlan, plane: int = 0) -> str | None:
    """The SA's SLs: per direction (port groups per zone and one match rule per class and
    falling zone pair) with the cross-zone direction split, and per partition (a rule on its
    P_Key, first, for partitions that name a traffic class); None when neither applies."""
    from loom.expand.partitions import memberships

    partitions = [m for m in memberships(fabric) if m.qos_class]
    if not plan.sl_offset and not partitions:
        return None
    names = [z.name for z in fabric.model.zones]
    zones = [{"name": z, "guids": [f"0x{p.guid:016x}" for p in fabric.ports if p.zone == z and p.plane == plane]}
             for z in names]
    falling = [(a, b) for i, a in enumerate(names) for j, b in enumerate(names) if i > j]
    return render("opensm/qos-policy.conf.j2", fabric=fabric.name, zones=[z for z in zones if z["guids"]],
                  classes=plan.classes, falling=falling, sl_offset=plan.sl_offset, partitions=partitions)
