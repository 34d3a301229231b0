"""How a superseded fact stays readable: the superseding entry's signature
names what it replaced (``supersedes=12``), and each replaced entry's line, as
it read, goes into the consolidation's commit message.

A mark can also arrive with the entry: ``Memory.update`` (MCP
``memory_update``) appends a new entry to the buffer whose signature says
which seq it replaces and why (``supersedes=12,reason=...``). Consolidation
then takes the replaced entry out, wherever it is (the buffer or a topic),
and records the supersession like one the engine found (``take_marked``).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from memd.core.entry import Entry, make_entry
from memd.core.errors import FormatError
from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet, Signature
from memd.engine.base import Item, Section, Supersession

if TYPE_CHECKING:
    from memd.consolidation.workspace import Workspace

# A signature holds no spaces (README, "Entries"): a reason's spaces are written
# %20, and a "%" as %25 only where it comes before 20 or 25, so "50%" stays.
_REASON_ESCAPE = re.compile(r" |%(?=20|25)")
_REASON_DECODE = re.compile("%(20|25)")

# The reason recorded for a mark the entry carried into the buffer (``memd add --meta
# supersedes=N``), as against one this consolidation found: ``memd undo`` keeps the first.
ENTRY_SAYS = "the entry says it supersedes seq"


def encode_reason(reason: str) -> str:
    """A reason as a ``reason=`` value: one line, no spaces (``moved%20in%20May``)."""
    return _REASON_ESCAPE.sub(lambda m: "%20" if m.group(0) == " " else "%25", " ".join(reason.split()))


def reason_of(signature: Signature) -> str | None:
    """The reason an entry's signature gives for its ``supersedes=`` mark."""
    value = signature.get("reason")
    if not value:
        return None
    return " ".join(_REASON_DECODE.sub(lambda m: " " if m.group(1) == "20" else "%", value).split()) or None


@dataclass(frozen=True)
class Marked:
    """What ``take_marked`` did to one batch."""

    kept: list[Item]  # the batch without the entries a mark replaced
    records: list[Supersession]
    replaced: dict[str, str]  # the replaced entries' lines, for the commit message
    homes: dict[int, str]  # a marking entry's first seq -> the topic that held what it replaced

    def home(self, items: tuple[Item, ...]) -> str | None:
        """Where a block holding a marking entry belongs: with the fact it replaces."""
        held = [part for item in items for part in item.seqs.parts]
        return next((topic for seq, topic in self.homes.items() if any(a <= seq <= b for a, b in held)), None)


def take_marked(space: Workspace, batch: list[Item]) -> Marked:
    """Honour the ``supersedes=`` marks that buffer entries arrived with.

    Each entry a mark names (by any of its seqs) is taken out, from this batch
    or from the topic holding it (read through ``space``, so the no-loss proof
    sees it), and recorded as superseded by the marking entry, which then goes
    to that topic. A mark naming nothing live (already superseded, forgotten,
    or in a file memd does not rewrite) changes nothing."""
    kept = list(batch)
    records: list[Supersession] = []
    taken: list[Item] = []
    homes: dict[int, str] = {}
    for item in batch:
        value = item.signature.get("supersedes")
        if not value or not any(k is item for k in kept):
            continue  # no mark, or this entry was itself replaced by an earlier one
        try:
            wanted = set(SeqSet.parse(value, MAX_SEQS_PER_ENTRY)) - set(item.seqs)
        except FormatError:
            continue  # a mark mistyped by hand stays as written; lint shows the entry
        if not wanted:
            continue
        replaced = [k for k in kept if k is not item and set(k.seqs) & wanted]
        kept = [k for k in kept if not any(k is r for r in replaced)]
        for earlier in replaced:  # an update of an update goes where the first one was going
            if earlier.seqs.first in homes:
                homes.setdefault(item.seqs.first, homes[earlier.seqs.first])
        for topic_id, entries in _take_from_topics(space, wanted):
            homes.setdefault(item.seqs.first, topic_id)
            replaced += entries
        reason = reason_of(item.signature) or f"{ENTRY_SAYS} {value}"
        records += [Supersession(item.seqs, old.seqs, reason) for old in replaced]
        taken += replaced
    return Marked(kept, records, replaced_entries(tuple(records), taken), homes)


def _take_from_topics(space: Workspace, seqs: set[int]) -> list[tuple[str, list[Item]]]:
    """Entries holding any of ``seqs``, taken out of the topics this run may write."""
    # The catalog knows the topics as the snapshot found them; entries this run
    # has already filed sit in the topics it touched.
    candidates = {t for t in space.touched if t in space.docs and space.exists(t)} | set(space.holding(seqs))
    taken: list[tuple[str, list[Item]]] = []
    for topic_id in sorted(candidates - space.skipped):
        document = space.doc(topic_id)
        hits = [e.entry for e in document.signed() if e.entry.signature and set(e.entry.signature.seq) & seqs]
        if not hits:
            continue
        gone = {id(entry) for entry in hits}
        blocks = tuple(b for b in document.blocks if not (isinstance(b, Entry) and id(b) in gone))
        space.set(topic_id, replace(document, blocks=blocks))
        taken.append((topic_id, [Item(entry.signature, entry.full_text) for entry in hits if entry.signature]))
    return taken


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
