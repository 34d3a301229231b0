"""How a signature is written: ``<key=value,…>``, each value escaped.

Escape rule for values: the characters that would end or split a signature are
percent-encoded: ``,`` -> ``%2C``, ``=`` -> ``%3D``, ``>`` -> ``%3E``, newline ->
``%0A``, carriage return -> ``%0D``. A ``%`` is written as ``%25`` only where it
is followed by one of those codes (or ``25``), so an ordinary ``50%`` stays as
typed. Decoding turns exactly these uppercase codes back, in one pass. The pair
is a bijection, so any value survives a write/read round trip unchanged.

No dataclass here (nor ``dataclasses``): the process that prints what the daemon
found writes each hit's signature with this alone (``memd.cli.output``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_CODES = {"25": "%", "2C": ",", "3D": "=", "3E": ">", "0A": "\n", "0D": "\r"}
_DECODE = re.compile("%(" + "|".join(_CODES) + ")")
_PERCENT_BEFORE_CODE = re.compile("%(?=" + "|".join(_CODES) + ")")
_ENCODE = {v: f"%{k}" for k, v in _CODES.items() if v != "%"}
_TRANSLATE = str.maketrans(_ENCODE)
_NEEDS_ENCODING = re.compile(r"[,=>\n\r%]")


def encode_value(value: str) -> str:
    if not _NEEDS_ENCODING.search(value):
        return value
    return _PERCENT_BEFORE_CODE.sub("%25", value).translate(_TRANSLATE)


def decode_value(value: str) -> str:
    return _DECODE.sub(lambda m: _CODES[m.group(1)], value)


def written(fields: Iterable[tuple[str, str]]) -> str:
    """``<key=value,…>`` for ``fields`` as they are (checking them is ``Signature``'s work)."""
    return "<" + ",".join(f"{key}={encode_value(value)}" for key, value in fields) + ">"
