"""How big a regular expression becomes once compiled, told without compiling it.

A counted repeat is copied out when a pattern is compiled: ``a{1000000}`` asks
for a million copies (about 280 MB), ``(a{1000}){1000}`` for as many, and a
larger count exhausts memory. ``grep`` refuses such a pattern in one line
before it reaches the regex engine. The count is an upper bound (branches of
an alternation are added, not compared), read in one pass over the pattern.
"""

from __future__ import annotations

import re

from memd.core.errors import FormatError

# About 28 MB once compiled (280 bytes a unit, measured), far past any pattern a search needs.
MAX_UNITS = 100_000

_REPEAT = re.compile(r"\{(\d*)(?:,(\d*))?\}")


def check_repeats(pattern: str, limit: int = MAX_UNITS) -> None:
    """Raise ``FormatError`` when ``pattern`` would compile to more than ``limit``
    copies of its parts (counted repeats multiply, nested ones compound)."""
    units, _ = _sequence(pattern, 0, limit)
    if units > limit:
        shown = pattern if len(pattern) <= 60 else pattern[:57] + "..."
        raise FormatError(
            f"pattern {shown!r} repeats too much (over {limit:,} copies once compiled); use a smaller count"
        )


def _sequence(pattern: str, i: int, limit: int) -> tuple[int, int]:
    """Units of the pattern from ``i`` to the end of its group; returns (units, index after it)."""
    total = 0
    while i < len(pattern) and pattern[i] != ")":
        char = pattern[i]
        if char == "(":
            units, i = _sequence(pattern, i + 1, limit)
            i += 1  # the closing parenthesis
        elif char == "[":
            units, i = 1, _class_end(pattern, i)
        elif char == "\\":
            units, i = 1, i + 2
        else:
            units, i = 1, i + 1
        repeat = _REPEAT.match(pattern, i)
        if repeat and (repeat.group(1) or repeat.group(2)):
            low, high = repeat.group(1), repeat.group(2)
            # ``{m,}`` copies m times; ``{m,n}`` n times. Digits are capped before int() reads them.
            count = max(_number(low), _number(high) if high else 0)
            units *= max(count, 1)
            i = repeat.end()
        total = min(total + units, limit + 1)  # past the limit the exact figure no longer matters
    return total, i


def _number(digits: str) -> int:
    return int(digits[:12]) if digits else 0


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class that starts at ``i``."""
    j = i + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1  # a ']' first in a class is a literal
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1
