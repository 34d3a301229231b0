"""Frontmatter YAML: strict loading (no duplicate keys) and stable dumping.

PyYAML is used directly rather than python-frontmatter: that library strips the
body (losing line numbers), hides frontmatter behind a BOM and crashes on keys
named ``content``/``handler``; memd only needs the YAML part.

Frontmatter is text anyone can edit, so loading it is bounded: aliases
(``*name``) are refused (a few lines of them expand to billions of nodes, and
Obsidian cannot read them anyway), nesting deeper than ``MAX_DEPTH`` is
refused before it can exhaust the stack, keys must be plain scalars, and a
timestamp that is not a real date (``created: 2026-99-99``) stays the text it
is. Every failure is a ``FrontmatterError`` with a line number.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import yaml

from memd.core.errors import FormatError


class FrontmatterError(FormatError):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line  # 1-based within the YAML text


# Deeper than any frontmatter a person or memd writes; far below the stack limit.
MAX_DEPTH = 64
# Frontmatter past this size is not a note's metadata (memd's own update_log
# stays far below it); refusing it keeps every read of the file fast.
MAX_BYTES = 2 * 1024 * 1024


class _StrictLoader(yaml.SafeLoader):
    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise FrontmatterError(
                f"YAML aliases (*{event.anchor}) are not allowed in frontmatter; write the value out",
                event.start_mark.line + 1,
            )
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise FrontmatterError(f"frontmatter is nested more than {MAX_DEPTH} levels deep", mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            raise FrontmatterError(
                "a frontmatter key must be plain text, not a list or mapping", key_node.start_mark.line + 1
            )
        key = loader.construct_object(key_node)
        if key in seen:
            raise FrontmatterError(f"duplicate key {key!r}", key_node.start_mark.line + 1)
        seen.add(key)
    return loader.construct_mapping(node)


def _timestamp_or_text(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    # ``2026-99-99`` matches YAML's timestamp pattern but is no date: keep the
    # text (lint says so) rather than fail every command that reads the file.
    try:
        return loader.construct_yaml_timestamp(node)
    except (ValueError, OverflowError):
        return str(node.value)


def _bounded_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    # 0xfff... with 5,000 digits loads (only decimal text has Python's digit
    # limit) but then cannot be written out again, as YAML or as JSON.
    value: int = loader.construct_yaml_int(node)
    if value.bit_length() > _MAX_INT_BITS:
        raise FrontmatterError("a number in the frontmatter has more than 100 digits", node.start_mark.line + 1)
    return value


_MAX_INT_BITS = 333  # about 100 decimal digits
_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _bounded_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_or_text)


def load_frontmatter(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    if len(raw) > MAX_BYTES:
        raise FrontmatterError(f"frontmatter is larger than {MAX_BYTES // (1024 * 1024)} MB", 1)
    try:
        data = yaml.load(raw, Loader=_StrictLoader)
    except FrontmatterError:
        raise
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise FrontmatterError(f"invalid YAML frontmatter: {problem}", line) from None
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as err:
        # int("9" * 5000), unhashable keys inside a set, and the like.
        raise FrontmatterError(f"invalid YAML frontmatter: {_short(err)}", 1) from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise FrontmatterError("frontmatter must be a mapping of key: value", 1)
    return data


def _short(err: BaseException) -> str:
    text = str(err).splitlines()[0] if str(err) else type(err).__name__
    return text if len(text) <= 120 else text[:117] + "..."


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        # Obsidian cannot read anchors, and a shared datetime object (created
        # == updated) would otherwise become "&id001 ... *id001".
        return True


def _quoted_str(dumper: _Dumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')


def _timestamp(dumper: _Dumper, value: datetime) -> yaml.ScalarNode:
    text = value.isoformat().replace("+00:00", "Z")
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", text)


def _mapping(dumper: _Dumper, data: dict[Any, Any]) -> yaml.MappingNode:
    # Keys stay plain (``id:``, not ``"id":``) where YAML allows; values are quoted.
    pairs = []
    for key, value in data.items():
        key_node = yaml.SafeDumper.represent_str(dumper, key) if isinstance(key, str) else dumper.represent_data(key)
        pairs.append((key_node, dumper.represent_data(value)))
    return yaml.MappingNode("tag:yaml.org,2002:map", pairs, flow_style=False)


_Dumper.add_representer(str, _quoted_str)
_Dumper.add_representer(dict, _mapping)
_Dumper.add_representer(datetime, _timestamp)
_Dumper.add_representer(date, lambda d, v: d.represent_scalar("tag:yaml.org,2002:timestamp", v.isoformat()))


def dump_frontmatter(data: dict[str, Any]) -> str:
    """YAML with quoted strings, keys in the given order, one item per line."""
    if not data:
        return ""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=10_000)


def jsonable(value: Any) -> Any:
    """Frontmatter values as JSON-safe data (dates become ISO strings)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value
