"""Reading an input file without trusting it: bounded bytes, regular files, UTF-8, bounded YAML.

Every file Loom reads from a user (models, cable catalogues, plans, `--lfts` dumps, host facts)
goes through `read_text`, so a FIFO cannot block, `/dev/zero` cannot fill memory, a 100 MB file is
refused before it is read, and a Latin-1 or UTF-16 file is named as such instead of failing deep
inside a parser.  YAML goes through `load_yaml`, which composes the document with counters on
depth, nodes and aliases, measures what the document would be once every alias and merge key is
expanded (a "billion laughs" bomb is a few hundred bytes), and only then builds plain Python data
with the YAML 1.2 core schema: `011` is eleven, `yes` is text, `0o11` is octal nine.

Each refusal is a `ModelError` naming the file, the line when there is one, and the fix.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

from .errors import ModelError, Problem

#: Caps on an input file's size (bytes), each overridden by its environment variable: models,
#: catalogues and facts are small; forwarding-table dumps and plans grow with the fabric (the
#: 32,768-GPU fabric's tables are ~100 MB per plane).
MAX_BYTES_ENV = "LOOM_MAX_INPUT_BYTES"
DEFAULT_MAX_BYTES = 4 * 1024 * 1024
MAX_TABLE_BYTES_ENV = "LOOM_MAX_TABLE_BYTES"
DEFAULT_MAX_TABLE_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True)
class YamlLimits:
    """What a model may hold.  The reference models use well under a tenth of each."""

    depth: int = 32  # nesting, counted through aliases and merge keys
    nodes: int = 100_000  # scalars, lists and mappings once every alias is expanded
    aliases: int = 2_000  # `*name` references in the text
    digits: int = 24  # characters of a number: more cannot be a port, count or ASN


LIMITS = YamlLimits()


def max_bytes(tables: bool = False) -> int:
    return cap_from_env(*((MAX_TABLE_BYTES_ENV, DEFAULT_MAX_TABLE_BYTES) if tables else (MAX_BYTES_ENV, DEFAULT_MAX_BYTES)))


def cap_from_env(env: str, default: int) -> int:
    """A size cap: the environment variable's positive integer, else the default."""
    raw = os.environ.get(env, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else default


def available_memory() -> int | None:
    """Bytes of memory this machine can give without swapping (`MemAvailable`), None where
    /proc/meminfo does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


#: Bytes of memory per byte of a table file once parsed into Python objects (lists of small
#: lists or tuples), with room for hostile shapes such as `[[],[],…]`.
PARSE_FACTOR = 25


def room_to_parse(path: str | Path, what: str) -> str | None:
    """Why a table-sized file (plan, LFT dump) cannot be parsed here, None if it can: the memory
    it would take against what this machine has free (a 1 GB file ended in MemoryError)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None  # the bounded read names what is wrong with the path
    free = available_memory()
    if free is None or size * PARSE_FACTOR <= free:
        return None
    return (f"{path}: reading this {size >> 20} MB {what} may take {size * PARSE_FACTOR >> 20} MB of memory and "
            f"{free >> 20} MB are available; free memory, or use a larger machine")


def _refuse(file: str, message: str, fix: str, line: int | None = None) -> ModelError:
    return ModelError(file, [Problem("", message, fix, line)])


def read_bytes(path: str | Path, what: str = "file", tables: bool = False) -> bytes:
    """The bytes of a regular file of at most `max_bytes(tables)`; anything else is refused, unread."""
    file, cap = str(path), max_bytes(tables)
    env = MAX_TABLE_BYTES_ENV if tables else MAX_BYTES_ENV
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _refuse(file, f"cannot read the {what} ({exc.strerror})", "check the path") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device, FIFO or socket)"
            raise _refuse(file, f"the {what} is {kind}", f"give the path of a regular {what}")
        if info.st_size > cap:
            raise _refuse(file, f"the {what} is {info.st_size} bytes, more than the limit of {cap}",
                          f"check it is the right file; raise the limit with {env}=<bytes> if it is")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            # read(n) allocates n bytes up front: ask for what the file holds, then look for more
            # (a file growing, or one of /proc's that say 0) in small steps up to the cap
            parts = [fh.read(min(cap, info.st_size) + 1)] if info.st_size else []
            size = sum(map(len, parts))
            while size <= cap:
                more = fh.read(min(1 << 20, cap + 1 - size))
                if not more:
                    break
                parts.append(more)
                size += len(more)
            data = b"".join(parts)
    except OSError as exc:
        raise _refuse(file, f"cannot read the {what} ({exc.strerror})", "check the path and permissions") from None
    finally:
        os.close(fd)
    if len(data) > cap:
        raise _refuse(file, f"the {what} grew past the limit of {cap} bytes while being read",
                      f"give a file that is not being written to; raise the limit with {env}=<bytes>")
    return data


def _encoding_of(data: bytes) -> str:
    for bom, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                      (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if data.startswith(bom):
            return name
    if 0 in data[:4096]:
        return "UTF-16/UTF-32 without a byte-order mark, or binary data"
    return "Latin-1 or another 8-bit encoding"


def decode(file: str, data: bytes, what: str = "file") -> str:
    """UTF-8 text (a UTF-8 byte-order mark is allowed), or a refusal naming the encoding found."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _refuse(file, f"the {what} is not UTF-8 text: it looks like {_encoding_of(data)} "
                      f"(byte 0x{data[exc.start]:02x} at offset {exc.start})",
                      "save it as UTF-8 (e.g. `iconv -t UTF-8`)", line) from None
    if "\x00" in text:
        raise _refuse(file, f"the {what} holds NUL characters: it looks like binary data", f"give a text {what}",
                      text[: text.index("\x00")].count("\n") + 1)
    return text


def read_text(path: str | Path, what: str = "file", tables: bool = False) -> str:
    """A bounded, regular, UTF-8 text file (see the module docstring)."""
    return decode(str(path), read_bytes(path, what, tables), what)


# ------------------------------------------------------------------------------------- YAML

_PLAIN = "loom:plain"  # tag of an untagged plain scalar, resolved by YAML 1.2 rules below
_CORE = "tag:yaml.org,2002:"
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")


class _TooBig(Exception):
    def __init__(self, message: str, fix: str, node: yaml.Node | None = None, mark=None) -> None:
        self.message, self.fix = message, fix
        mark = mark or (node.start_mark if node is not None else None)
        self.line = mark.line + 1 if mark is not None else None


class _PyEvents(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's own scanner and parser, where it was built without libyaml."""

    def __init__(self, text: str) -> None:
        yaml.reader.Reader.__init__(self, text)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


#: the events: libyaml's scanner and parser (C, and iterative: no recursion for a deep document
#: to exhaust) take a third of the pure-Python ones' time, which was most of reading a model.
_Events = yaml.cyaml.CParser if yaml.__with_libyaml__ else _PyEvents


class _BoundedLoader(yaml.composer.Composer, _Events, yaml.resolver.Resolver):
    """PyYAML's composer with counters, on `_Events`; it never constructs (that is `_Builder`'s
    job).  The composer stays Python, ahead of the parser in the MRO, so the counters see every node."""

    def __init__(self, text: str, limits: YamlLimits) -> None:
        _Events.__init__(self, text)
        yaml.composer.Composer.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.limits, self.depth, self.count, self.alias_count = limits, 0, 0, 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.alias_count += 1
            if self.alias_count > self.limits.aliases:
                raise _TooBig(f"more than {self.limits.aliases} aliases (*name)", "write the values out, or use fewer aliases",
                              mark=self.peek_event().start_mark)
        self.count += 1
        self.depth += 1
        if self.count > self.limits.nodes or self.depth > self.limits.depth:
            what = f"nested deeper than {self.limits.depth} levels" if self.depth > self.limits.depth else f"more than {self.limits.nodes} values"
            raise _TooBig(f"the document is {what}", "a model is a few levels of mappings and lists; check the file",
                          mark=self.peek_event().start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0]:
            return _PLAIN
        return super().resolve(kind, value, implicit)


class _Builder:
    """Composed YAML nodes → plain data, after measuring the fully expanded size.

    Aliases share nodes, so a small text can describe a huge tree; `measure` walks the node
    graph once (memoised), refusing cycles, and bounds what every later stage walks."""

    def __init__(self, limits: YamlLimits) -> None:
        self.limits = limits
        self.size: dict[int, int] = {}
        self.height: dict[int, int] = {}
        self.open: set[int] = set()
        self.built: dict[int, object] = {}

    def children(self, node: yaml.Node) -> list[yaml.Node]:
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if isinstance(node, yaml.MappingNode):
            return [n for pair in node.value for n in pair]
        return []

    def measure(self, node: yaml.Node, depth: int = 1) -> int:
        key = id(node)
        if key in self.size:
            if depth + self.height[key] - 1 > self.limits.depth:
                raise _TooBig(f"aliases nest the document deeper than {self.limits.depth} levels", "write the values out", node)
            return self.size[key]
        if key in self.open:
            raise _TooBig("an alias refers to the value that contains it (a cycle)", "refer only to values defined before and outside", node)
        if depth > self.limits.depth:
            raise _TooBig(f"aliases nest the document deeper than {self.limits.depth} levels", "write the values out", node)
        self.open.add(key)
        total, height = 1, 0
        for child in self.children(node):
            total += self.measure(child, depth + 1)
            height = max(height, self.height[id(child)])
            if total > self.limits.nodes:
                raise _TooBig(f"aliases or merge keys expand the document past {self.limits.nodes} values (an alias bomb?)",
                              "write the values out, or use fewer aliases", node)
        self.open.discard(key)
        self.size[key], self.height[key] = total, height + 1
        return total

    def scalar(self, node: yaml.ScalarNode) -> object:
        v, tag = node.value, node.tag
        if tag == _PLAIN:
            if _NULL.match(v):
                return None
            if v in _BOOL:
                return _BOOL[v]
            if _INT.match(v) or _FLOAT.match(v):
                tag = _CORE + ("int" if _INT.match(v) else "float")
            else:
                return v
        if tag == _CORE + "str":
            return v
        if tag == _CORE + "null":
            return None
        if tag == _CORE + "bool" and v in _BOOL:
            return _BOOL[v]
        if len(v) > self.limits.digits and tag in (_CORE + "int", _CORE + "float"):
            raise _TooBig(f"a number of {len(v)} characters", "no field of a model needs a number this large", node)
        if tag == _CORE + "int" and _INT.match(v):
            return int(v[2:], 8) if v.startswith("0o") else int(v, 16) if v.startswith("0x") else int(v)
        if tag == _CORE + "float" and (_FLOAT.match(v) or _INT.match(v)):
            return float(v.lower().replace(".inf", "inf").replace(".nan", "nan"))
        raise _TooBig(f"unsupported tag or value `{tag.replace(_CORE, '!!')}` for {v[:40]!r}",
                      "drop the tag: plain values are read as text, numbers, true/false or null", node)

    def build(self, node: yaml.Node) -> object:
        key = id(node)
        if key in self.built:
            return self.built[key]
        if isinstance(node, yaml.ScalarNode):
            value = self.scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = [self.build(n) for n in node.value]
        else:
            value = self.mapping(node)
        self.built[key] = value
        return value

    def mapping(self, node: yaml.MappingNode) -> dict:
        merged: dict = {}
        own: dict = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag == _PLAIN and key_node.value == "<<":
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for src in sources:
                    if not isinstance(src, yaml.MappingNode):
                        raise _TooBig("a merge key (<<) must name a mapping or a list of mappings", "merge only mappings", src)
                    for k, v in self.build(src).items():
                        merged.setdefault(k, v)
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                raise _TooBig("a key is a list or mapping", "write keys as plain text or numbers", key_node)
            k = self.scalar(key_node)
            if k is None:
                raise _TooBig("a key is empty (null)", "give the key a name", key_node)
            own[k] = self.build(value_node)
        return {**merged, **own}


def parse_yaml(file: str, text: str, limits: YamlLimits = LIMITS) -> tuple[yaml.Node | None, object]:
    """The composed node graph of `text` (for line numbers) and its plain data (dict, list, str,
    int, float, bool, None), within every bound of this module; raises `ModelError`."""
    loader = _BoundedLoader(text, limits)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        builder = _Builder(limits)
        builder.measure(node)
        return node, builder.build(node)
    except _TooBig as exc:
        raise _refuse(file, exc.message, exc.fix, exc.line) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _refuse(file, f"not valid YAML: {what}", "fix the YAML syntax at this line (indentation, ':' after keys, quotes)",
                      mark.line + 1 if mark else None) from None
    finally:
        loader.dispose()


def load_yaml(path: str | Path, what: str = "file") -> object:
    """Read and parse a YAML input file within every bound of this module."""
    return parse_yaml(str(path), read_text(path, what))[1]
