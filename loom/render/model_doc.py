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
    (schema.Slurm, "`slurm`: what `loom slurm` tells Slurm's topology plugins."),
    (schema.Partition, "An entry of `partitions` (InfiniBand P_Keys; docs/partitions.md)."),
    (schema.PartitionMember, "An entry of a partition's `members`."),
    (schema.Ipoib, "A partition's `ipoib`."),
    (schema.Health, "`health`: how `loom health` and `loom watch` judge a link from its port counters (docs/health.md)."),
    (schema.ErrorLimit, "An entry of `health.limits` (keyed by counter): errors per hour."),
    (schema.OpenSm, "`opensm`: OpenSM options written into its options file beside QoS (docs/targets.md)."),
]


def _type(annotation) -> str:
    """A field's type as a reader writes it: constraints dropped, `X or None` for optionals."""
    from loom.model import names

    for alias in ("Name", "EnvVar", "Label"):
        if annotation is getattr(names, alias):
            return alias
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


def _field_type(f) -> str:
    """pydantic moves a field's `Annotated` constraints into `f.metadata`; a safe-name pattern
    there means the field is a `Name` (or `EnvVar`)."""
    from loom.model import names

    patterns = {getattr(m, "pattern", None) for m in f.metadata}
    for alias, pattern in (("Name", names.NAME_RE), ("EnvVar", names.ENV_VAR_RE), ("Label", names.LABEL_RE)):
        if pattern in patterns:
            return alias
    return _type(f.annotation)


def _range(f) -> str:
    """` (1..1024)` for a bounded number, from the field's constraints."""
    lo = next((getattr(m, a) for m in f.metadata for a in ("ge", "gt") if getattr(m, a, None) is not None), None)
    hi = next((getattr(m, a) for m in f.metadata for a in ("le", "lt") if getattr(m, a, None) is not None), None)
    if lo is None and hi is None:
        return ""
    return f" ({'' if lo is None else f'{lo:g}'}..{'' if hi is None else f'{hi:g}'})"


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
            out.append(f"| `{name}` | `{_field_type(f)}`{_range(f)} | {default} | {f.description or ''} |")
        out.append("")
    return "\n".join(out + _limits())


def _limits() -> list[str]:
    """The limits a model is checked against before anything is built (`loom/model/limits.py`,
    `loom/model/names.py`, `loom/model/reading.py`)."""
    from loom.model import limits, names, reading

    return [
        "## Limits", "",
        "Checked before any other rule and before the expansion allocates anything:", "",
        f"- the file: a regular file of at most {reading.DEFAULT_MAX_BYTES} bytes (`{reading.MAX_BYTES_ENV}` overrides), UTF-8, "
        f"YAML nested at most {reading.LIMITS.depth} levels, at most {reading.LIMITS.nodes} values once aliases and merge keys "
        f"are expanded, {reading.LIMITS.aliases} aliases, numbers of at most {reading.LIMITS.digits} characters; "
        "scalars follow YAML 1.2 (`011` is eleven, `yes` is text);",
        f"- a switch (InfiniBand or Ethernet) has at most {limits.MAX_IB_PORTS} ports; a subnet (plane) at most {limits.MAX_UNICAST_LID} "
        "unicast LIDs (switches + CA ports);",
        f"- the fabric: at most {limits.MAX_SWITCHES} switches, {limits.MAX_NODES} nodes, {limits.MAX_HOST_PORTS} NIC ports, "
        f"{limits.MAX_CABLES} cables, {limits.MAX_LFT_CELLS} forwarding-table entries per subnet;",
        "- ASNs within 1..4294967294 after adding the leaf or pod index; the loopback pool holds one address per switch;",
        "- nodes and switches fit their racks (`layout`);",
        f"- partitions: member entries × nodes at most {limits.MAX_PARTITION_WORK}; a member's `nodes` hostlist names "
        "at most as many nodes as the model has.", "",
        f"Names (every `Name` above, and every name a pattern makes: switches, nodes, NICs, racks): letters, digits, `-`, "
        f"`_`, `.`, starting with a letter or digit, no `..`, at most {names.MAX_NAME} characters; nodes, NICs and switches "
        "never share a name.  Name patterns use only their listed fields, with an optional width of at most "
        f"{names.MAX_WIDTH} (`{{index:04d}}`); no attribute access, indexing or conversions.  Environment variable names "
        f"(`env_sl`, `env_tc`) match `{names.ENV_VAR_RE}`.", ""]


def model_schema() -> str:
    """The model's JSON Schema (draft 2020-12, from the pydantic schema), for editors: a YAML
    file that starts with `# yaml-language-server: $schema=../docs/model.schema.json` is
    completed and checked as it is typed (the full rules run in `loom validate`)."""
    import json

    from loom.model.schema import Model

    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://loom.invalid/model.schema.json",
              **Model.model_json_schema()}
    return json.dumps(schema, indent=1, sort_keys=True) + "\n"
