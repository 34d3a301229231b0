"""Each text indexed once: the places in source copies that entries name.

An imported turn or paragraph lives twice in a vault: verbatim in its source
copy under ``sources/`` and as the entries made from it, whose ``src`` names
the place (``sources/2026/11/chat.md#^t12`` for a turn, ``#L9`` for a
note's paragraph or list item). Search finds such a place through its
entries (signed, citable, filed by subject) and not a second time through
the copy: the index holds a source copy's lines only where no entry names
them. The copy itself is never changed, and ``memd grep`` and ``memd read``
see every line of it; turns that made no entry (small talk) stay searchable
in the copy. The store keeps each file's named places in its manifest, so a
source is indexed again when the entries naming it change.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memd.core.layout import classify

if TYPE_CHECKING:
    from memd.core.document import LocatedEntry
    from memd.index.records import Record


def cited(records: Iterable[Record]) -> list[str]:
    """The places in source copies that ``records`` (a file's) name in ``src``:
    ``sources/2026/11/chat.md#^t12``, ``sources/notes/a.md#L9``."""
    found = {
        ref.strip()
        for record in records
        if record.kind == "entry" and record.src
        for ref in record.src.split(";")
        if ref.strip().startswith("sources/") and "#" in ref
    }
    return sorted(found)


def held_by_source(places: Iterable[str]) -> dict[str, frozenset[str]]:
    """``cited`` places grouped by source copy: path -> its anchors."""
    out: dict[str, set[str]] = {}
    for place in places:
        path, _, anchor = place.partition("#")
        out.setdefault(path, set()).add(anchor)
    return {path: frozenset(anchors) for path, anchors in out.items()}


def held_in(files: Mapping[str, Sequence[Any]]) -> dict[str, frozenset[str]]:
    """Each source copy's anchors that the other files' entries name, from the
    index manifest's rows (``[mtime, size, digest, records, places]``)."""
    return held_by_source(
        place for rel, row in files.items() if classify(rel) != "source" for place in (row[4] if len(row) > 4 else ())
    )


# A turn's block id ends its item (`` ^t12``); older copies open it with an anchor.
_TURN_ID = re.compile(r'\^t(\d+)\s*$|<a id="t(\d+)"></a>', re.MULTILINE)
# Where a note's paragraph ends: a heading or a list item (or a blank line).
_BREAK = re.compile(r"^\s{0,3}(?:#|[-*+]\s|\d{1,9}[.)]\s)")


def covered_lines(text: str, located: Sequence[LocatedEntry], held: frozenset[str]) -> set[int]:
    """Lines of a source copy that a held anchor names: a turn (its block id,
    on any of its lines), a list item or a paragraph starting at ``L<n>`` (up
    to the next blank line, heading or list item)."""
    lines = text.split("\n")
    covered: set[int] = set()
    starts: set[int] = set()
    for item in located:
        body = "\n".join(lines[item.line - 1 : item.end_line])
        ids = {f"^t{a or b}" for a, b in _TURN_ID.findall(body) if a or b}
        starts.add(item.line)
        if f"L{item.line}" in held or ids & held:
            covered.update(range(item.line, item.end_line + 1))
    for anchor in held:
        if not anchor.startswith("L") or not anchor[1:].isdigit():
            continue
        first = int(anchor[1:])
        if first in starts or not 1 <= first <= len(lines):
            continue
        line = first
        while line <= len(lines) and lines[line - 1].strip() and (line == first or not _BREAK.match(lines[line - 1])):
            covered.add(line)
            line += 1
    return covered
