"""Load a model file: YAML → plain data (with line numbers) → pydantic `Model` → whole-model rules.

The file is read and parsed within bounds (`loom.model.reading`: size, file type, UTF-8, depth,
aliases, YAML 1.2 scalars).  PyYAML's composer gives each YAML node its start mark; we walk the composed tree once to map
every YAML path ("zones[0].leaves") to its line, so pydantic's error locations and our own rules
can point at the line the user must edit.  Duplicate keys, which YAML silently collapses, are
refused here because the user almost always meant two different things.
"""

from __future__ import annotations

from pathlib import Path

from typing import get_args

import yaml
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from .errors import ModelError, Problem
from .reading import parse_yaml, read_text
from .schema import BiGraph, FatTree2, FatTree3, Model


def path_str(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class LineMap:
    """YAML path (tuple of keys / indices) → 1-based line, with fallback to the nearest parent."""

    def __init__(self) -> None:
        self.lines: dict[tuple, int] = {}
        self.duplicates: list[tuple[tuple, int]] = []

    def walk(self, node: yaml.Node, loc: tuple = ()) -> None:
        self.lines.setdefault(loc, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen: set = set()
            for key_node, value_node in node.value:
                key = key_node.value
                if key == "<<":
                    continue
                if key in seen:
                    self.duplicates.append((loc + (key,), key_node.start_mark.line + 1))
                seen.add(key)
                self.lines[loc + (key,)] = key_node.start_mark.line + 1
                self.walk(value_node, loc + (key,))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.walk(item, loc + (i,))

    def line(self, loc: tuple) -> int | None:
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get(())


#: What to tell the user for each pydantic error type; `{desc}` is the field's description.
FIXES = {
    "missing": "add this key: {desc}",
    "extra_forbidden": "remove it, or check its spelling against the allowed keys: {allowed}",
    "int_type": "write a whole number: {desc}",
    "int_parsing": "write a whole number: {desc}",
    "int_from_float": "write a whole number: {desc}",
    "greater_than": "use a larger value: {desc}",
    "greater_than_equal": "use a larger value: {desc}",
    "less_than_equal": "use a smaller value: {desc}",
    "literal_error": "use one of the listed values: {desc}",
    "union_tag_invalid": "set `kind` to fat-tree-2, fat-tree-3 or bigraph",
    "union_tag_not_found": "add `kind: fat-tree-2` (or fat-tree-3, bigraph)",
    "string_pattern_mismatch": "use letters, digits, '-', '_' or '.', starting with a letter or digit",
    "too_short": "give at least one entry: {desc}",
    "dict_type": "write a mapping (key: value lines) here: {desc}",
    "list_type": "write a list (lines starting with '- ') here: {desc}",
    "model_type": "write a mapping (key: value lines) here",
    "string_type": "write a text value: {desc}",
}


ZONE_KINDS = {"fat-tree-2": FatTree2, "fat-tree-3": FatTree3, "bigraph": BiGraph}


def _schema_at(loc: tuple) -> tuple[FieldInfo | None, type[BaseModel]]:
    """Follow a pydantic error location through the schema.

    Returns the FieldInfo of the last key (for its description) and the model class that
    the location points into (for the list of allowed keys).
    """
    model: type[BaseModel] = Model
    info = None
    for part in loc:
        if part in ZONE_KINDS:
            model = ZONE_KINDS[part]
            continue
        if isinstance(part, int) or part not in model.model_fields:
            continue
        info = model.model_fields[part]
        stack = [info.annotation]
        while stack:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                model = t
                break
            stack.extend(get_args(t))
    return info, model


def _short(value: object, limit: int = 60) -> str:
    """A value quoted back to the user: repr (control characters escaped), at most `limit` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _pydantic_problems(err: ValidationError, lines: LineMap) -> list[Problem]:
    problems = []
    for e in err.errors():
        raw = tuple(e["loc"])
        loc = tuple(p for p in raw if p not in ZONE_KINDS)
        info, _ = _schema_at(raw)
        desc = info.description if info and info.description else "see docs/model.md"
        message = e["msg"]
        allowed = ""
        if e["type"] == "missing":
            message = f"required key `{loc[-1]}` is missing"
        elif e["type"] == "extra_forbidden":
            message = f"unknown key `{loc[-1]}`"
            allowed = ", ".join(sorted(_schema_at(raw[:-1])[1].model_fields))
        elif "input" in e and not isinstance(e["input"], (dict, list)):
            message = f"{e['msg']} (got {_short(e['input'])})"
        fix = FIXES.get(e["type"], "check the value: {desc}").format(desc=desc, allowed=allowed)
        problems.append(Problem(path_str(loc), message, fix, lines.line(loc)))
    return problems


def locate(path: str | Path, error: ModelError) -> ModelError:
    """Give problems raised after loading (they carry `loc`, no line) the file and line."""
    lines = LineMap()
    try:
        node, _ = parse_yaml(str(path), read_text(path, "model file"))
    except ModelError:
        node = None  # the file changed since it was loaded: keep the problems, without lines
    if node is not None:
        lines.walk(node)
    return ModelError(str(path), [Problem(path_str(p.loc) or p.path, p.message, p.fix, p.line or lines.line(p.loc), p.loc)
                                  for p in error.problems])


def load_model(path: str | Path) -> Model:
    """Read, parse and fully validate a model file; raise `ModelError` listing every problem."""
    from .catalogue import catalogue_path
    from .limits import check_limits
    from .rules import check_rules

    file = str(path)
    node, data = parse_yaml(file, read_text(path, "model file"))
    lines = LineMap()
    if node is not None:
        lines.walk(node)
    if lines.duplicates:
        raise ModelError(file, [
            Problem(path_str(loc), f"key `{loc[-1]}` appears twice", "keep one of them; YAML would silently drop the first", line)
            for loc, line in lines.duplicates
        ])
    if not isinstance(data, dict):
        raise ModelError(file, [Problem("", "the file must hold a mapping with name, technology, switch_models, node_types, zones, node_groups", "start from topology/tiny.yaml", 1)])
    try:
        model = Model.model_validate(data)
    except ValidationError as exc:
        raise ModelError(file, _pydantic_problems(exc, lines)) from None
    findings = check_limits(model) or check_rules(model)  # the rules are bounded only within the limits
    problems = [Problem(path_str(f.loc), f.message, f.fix, lines.line(f.loc)) for f in findings]
    if model.cabling is not None:
        try:
            catalogue_path(path, model.cabling.catalogue)
        except ValueError as exc:
            problems.append(Problem("cabling.catalogue", f"the cable catalogue {exc}",
                                    "keep the catalogue beside the model, e.g. catalogue/nvidia-hdr.yaml", lines.line(("cabling", "catalogue"))))
    if problems:
        raise ModelError(file, problems)
    return model
