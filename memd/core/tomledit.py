"""Change one ``table.key`` in a TOML text, keeping every other byte.

`memd config set` edits a file people also edit by hand and that carries
explanatory comments, so it rewrites only the value of one assignment (its
trailing comment stays), uncomments a commented-out example of the key in
place, or adds the key at the end of its table. No TOML writer is needed:
values are plain strings and integers, and the caller checks the result by
parsing it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from memd.core.errors import ConfigError

_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.-]+)\s*\]\s*(?:#.*)?$")
_ARRAY_HEADER = re.compile(r"^\s*\[\[")
_ASSIGN = re.compile(r"^(?P<indent>\s*)(?P<hash>#\s*)?(?P<key>[A-Za-z0-9_-]+)(?P<eq>\s*=\s*)(?P<rest>.*)$")


@dataclass(frozen=True)
class Location:
    line: int  # 1-based
    commented: bool


def toml_value(value: str | int) -> str:
    """A TOML literal for a string or integer (JSON string escapes are valid TOML)."""
    if isinstance(value, bool):
        raise ConfigError("booleans are not settings memd has")
    if isinstance(value, int):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def find_key(text: str, table: str, key: str) -> Location | None:
    """Where ``key`` is assigned in ``[table]``; an uncommented line wins over a commented one."""
    found: Location | None = None
    for number, line, current in _lines(text):
        if current != table:
            continue
        match = _ASSIGN.match(line)
        if match is None or match["key"] != key:
            continue
        commented = match["hash"] is not None
        if not commented:
            return Location(number, False)
        if found is None and _split_value(match["rest"]) is not None:
            found = Location(number, True)
    return found


def set_key(text: str, table: str, key: str, value: str | int) -> str:
    """``text`` with ``[table] key = value``."""
    literal = toml_value(value)
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.splitlines(keepends=True)
    where = find_key(text, table, key)
    if where is not None:
        index = where.line - 1
        raw = lines[index]
        ending = raw[len(raw.rstrip("\r\n")) :]
        match = _ASSIGN.match(raw.rstrip("\r\n"))
        assert match is not None
        split = _split_value(match["rest"])
        if split is None:
            raise ConfigError(f"line {where.line}: cannot change {table}.{key} here (edit it by hand)")
        old_value, tail = split
        prefix = f"{match['indent']}{key}{match['eq']}"
        comment = tail.lstrip()
        if comment:
            # Keep a trailing comment in its column, so aligned comments stay aligned.
            column = match.start("rest") + len(old_value) + len(tail) - len(comment)
            comment = " " * max(1, column - len(prefix) - len(literal)) + comment
        lines[index] = f"{prefix}{literal}{comment}{ending}"
        return "".join(lines)
    assignment = f"{key} = {literal}{newline}"
    last = _table_end(text, table)
    if last is None:
        if text and not text.endswith(("\n", "\r")):
            text += newline
        gap = newline if text.strip() else ""
        return f"{text}{gap}[{table}]{newline}{assignment}"
    if not lines[last - 1].endswith(("\n", "\r")):
        lines[last - 1] += newline
    lines.insert(last, assignment)
    return "".join(lines)


def _lines(text: str) -> list[tuple[int, str, str | None]]:
    """(line number, line, table it is in); ``""`` before any header, None in an array of tables."""
    table: str | None = ""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = header.group(1)
        elif _ARRAY_HEADER.match(line):
            table = None
        out.append((number, line, table))
    return out


def _table_end(text: str, table: str) -> int | None:
    """The line after which a new key of ``table`` goes: its last assignment, or its header."""
    last: int | None = None
    for number, line, current in _lines(text):
        if current != table:
            continue
        if last is None or (_ASSIGN.match(line) and not line.lstrip().startswith("#")):
            last = number
    return last


def _split_value(rest: str) -> tuple[str, str] | None:
    """Split ``"a" # note`` into the value and what follows it; None for values we do not rewrite."""
    rest = rest.rstrip()
    if rest.startswith('"""') or rest.startswith("'''") or rest[:1] in ("[", "{"):
        return None
    if rest.startswith('"'):
        end = 1
        while end < len(rest):
            if rest[end] == "\\":
                end += 2
                continue
            if rest[end] == '"':
                return rest[: end + 1], rest[end + 1 :]
            end += 1
        return None
    if rest.startswith("'"):
        end = rest.find("'", 1)
        return (rest[: end + 1], rest[end + 1 :]) if end > 0 else None
    value, hash_, comment = rest.partition("#")
    if not value.strip():
        return None
    stripped = value.rstrip()
    return stripped, value[len(stripped) :] + hash_ + comment
