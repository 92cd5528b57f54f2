"""The model reference (docs/model.md), generated from the schema so it cannot drift from it."""

from __future__ import annotations

import re
from typing import get_args

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from loom.model import schema

SECTIONS = [
    (schema.Model, "The top level of a model file."),
    (schema.SwitchModel, "An entry of `switch_models` (keyed by model name)."),
    (schema.NodeType, "An entry of `node_types` (keyed by type name): the host layout."),
    (schema.RootComplex, "An entry of `root_complexes`."),
    (schema.PcieSwitch, "An entry of `pcie_switches`."),
    (schema.Gpu, "An entry of `gpus`."),
    (schema.Nic, "An entry of `nics`."),
    (schema.FatTree2, "A zone with `kind: fat-tree-2`."),
    (schema.FatTree3, "A zone with `kind: fat-tree-3`."),
    (schema.BiGraph, "A zone with `kind: bigraph`."),
    (schema.MissingLink, "An entry of a fat-tree zone's `missing_links`: a design link that is not there."),
    (schema.MissingSwitch, "An entry of a fat-tree zone's `missing_switches`: a switch that is down."),
    (schema.Planes, "`planes`: N parallel identical fabrics."),
    (schema.NodeGroup, "An entry of `node_groups`."),
    (schema.InterZoneLinks, "An entry of `inter_zone_links`."),
    (schema.InterZoneEnd, "`a` / `b` of an inter-zone link."),
    (schema.Addressing, "`addressing` (Ethernet fabrics)."),
    (schema.Layout, "`layout`: physical placement."),
    (schema.SwitchNaming, "`naming`: switch name patterns."),
    (schema.Cabling, "`cabling`: site and cable catalogue for the cabling sheets."),
    (schema.Qos, "`qos`: traffic classes and the ports' limits."),
    (schema.TrafficClass, "An entry of `qos.classes`."),
    (schema.QosLimits, "`qos.limits`."),
]


def _type(annotation) -> str:
    text = str(annotation) if get_args(annotation) else getattr(annotation, "__name__", str(annotation))
    text = re.sub(r"Annotated\[(.*?), FieldInfo\(.*?\)\]", r"\1", text)
    return text.replace("typing.", "").replace("loom.model.schema.", "").replace("|", "or")


def model_reference() -> str:
    out = ["# Model reference", "",
           "Generated from `loom/model/schema.py` by `loom docs`; do not edit by hand.",
           "Speeds: " + ", ".join(f"`{k}` = {v} Gb/s" for k, v in schema.SPEEDS_GBPS.items()) + ".", ""]
    for cls, what in SECTIONS:
        out += [f"## {cls.__name__}", "", what, ""]
        if cls.__doc__ and cls.__doc__.strip() and not cls.__doc__.startswith("Base"):
            out += [" ".join(cls.__doc__.split()), ""]
        out += ["| key | type | default | meaning |", "|---|---|---|---|"]
        for name, f in cls.model_fields.items():
            if f.is_required():
                default = "required"
            elif f.default_factory is not None:
                d = f.default_factory()
                default = "(see below)" if isinstance(d, BaseModel) else f"`{d!r}`"
            else:
                default = f"`{f.default!r}`" if f.default is not PydanticUndefined else ""
            out.append(f"| `{name}` | `{_type(f.annotation)}` | {default} | {f.description or ''} |")
        out.append("")
    return "\n".join(out)
