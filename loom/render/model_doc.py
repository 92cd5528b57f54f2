"""The model reference (docs/model.md), generated from the schema so it cannot drift from it."""

from __future__ import annotations

import types
from typing import Annotated, Literal, Union, get_args, get_origin

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
    """A field's type as a reader writes it: constraints dropped, `X or None` for optionals."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type(args[0])
    if origin is Literal:
        return f"Literal[{', '.join(repr(a) for a in args)}]"
    if origin in (Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        return f"{_type(rest[0])} or None" if len(rest) == 1 else f"Union[{', '.join(map(_type, rest))}]"
    if args:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(map(_type, args))}]"
    return getattr(annotation, "__name__", str(annotation))


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
