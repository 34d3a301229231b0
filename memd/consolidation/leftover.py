"""The buffer a consolidation round leaves: the entries it keeps, what was
appended while it ran, and the words of the entries it filed.

A long import is consolidated in rounds of ``PART_ENTRIES`` (run.py), each
reading the buffer the last one left: the items parsed are kept for the
process, so each entry is parsed once however many rounds read it.
"""

from __future__ import annotations

from dataclasses import replace

from memd.core.document import Document, Known, parse_document
from memd.core.entry import Entry
from memd.vault.journal import HandEditConflict


def appended_since(snapshot: str, now: str) -> str:
    """What was appended to CURRENT.md since the snapshot: memd's own appends
    (signed entries) are carried over; anything else means a person is editing."""
    if now == snapshot:
        return ""
    if not now.startswith(snapshot):
        raise HandEditConflict("CURRENT.md was edited while memd was consolidating; starting over")
    tail = now[len(snapshot) :]
    for line in tail.splitlines():
        if line.strip() and not (line.startswith("- <seq=") or line.startswith((" ", "\t"))):
            raise HandEditConflict("CURRENT.md was edited while memd was consolidating; starting over")
    return tail


# The buffer's items parsed in this process: a long import is consolidated in rounds
# of PART_ENTRIES, each reading the buffer the last one left, and parses each entry once.
_BUFFER_ITEMS: Known = {}
_BUFFER_ITEMS_MOST = 200_000


def buffer_items() -> Known:
    if len(_BUFFER_ITEMS) > _BUFFER_ITEMS_MOST:
        _BUFFER_ITEMS.clear()
    return _BUFFER_ITEMS


def entries_of(document: Document, seqs: set[int]) -> dict[int, str]:
    """seq -> the lines of the one-seq entry holding it, of the entries in ``seqs``."""
    found: dict[int, str] = {}
    for block in document.blocks:
        if not isinstance(block, Entry) or block.signature is None:
            continue
        ((first, last), *more) = block.signature.seq.parts
        if first == last and not more and first in seqs:
            found[first] = "\n".join(block.lines()) + "\n"
    return found


def holds_signed(remaining: Document, tail: str) -> bool:
    """Whether the buffer left (``remaining``, then what was appended meanwhile) holds a signed entry."""
    if any(isinstance(block, Entry) and block.signature is not None for block in remaining.blocks):
        return True
    return bool(tail) and bool(parse_document(tail).signed())


def without_entries(document: Document, seqs: set[int]) -> Document:
    blocks = tuple(
        b
        for b in document.blocks
        if not (isinstance(b, Entry) and b.signature is not None and set(b.signature.seq) <= seqs)
    )
    return replace(document, blocks=blocks)
