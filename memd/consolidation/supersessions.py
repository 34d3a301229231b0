"""How a superseded fact stays readable: the superseding entry's signature
names what it replaced (``supersedes=12``), and each replaced entry's line, as
it read, goes into the consolidation's commit message."""

from __future__ import annotations

import contextlib

from memd.core.document import make_entry
from memd.core.errors import FormatError
from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet
from memd.engine.base import Item, Section, Supersession


def mark_supersessions(
    sections: tuple[Section, ...], sources: list[Item], records: list[Supersession]
) -> list[Section]:
    """A superseding entry's signature names what it replaced (``supersedes=12``),
    so a reader of the topic sees the fact changed; the mark survives later folds."""
    marks: dict[int, set[int]] = {}
    for item in sources:
        value = item.signature.get("supersedes")
        if value:
            with contextlib.suppress(FormatError):
                # Bounded like a seq: a hand-typed ``1-999999999999`` is ignored
                # (``memd lint`` names it), never expanded.
                marks.setdefault(item.seqs.first, set()).update(SeqSet.parse(value, MAX_SEQS_PER_ENTRY))
    marked = []
    for section in sections:
        items = []
        for item in section.items:
            seqs = set(item.seqs)
            old = {s for first, values in marks.items() if first in seqs for s in values}
            old |= {s for record in records if set(record.new) <= seqs for s in record.old}
            value = str(SeqSet.of(old)) if old else None
            if value is not None and item.signature.get("supersedes") != value:
                item = Item(item.signature.replace(supersedes=value), item.text)
            items.append(item)
        marked.append(Section(section.title, tuple(items)))
    return marked


def replaced_entries(records: tuple[Supersession, ...], sources: list[Item]) -> dict[str, str]:
    """Superseded entries as they read (entry lines), keyed by their seq value."""
    found = {}
    for record in records:
        parts = [item for item in sources if set(item.seqs) <= set(record.old)]
        if not parts:
            continue
        newest = max(parts, key=lambda item: item.seqs.last)  # a folded entry reads as its newest part
        entry = make_entry(newest.signature.replace(seq=str(record.old)), newest.text)
        found[str(record.old)] = "\n".join(entry.lines())
    return found
