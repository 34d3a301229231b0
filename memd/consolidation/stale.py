"""Entries an editor's old save filed a second time: one seq live in two places.

An editor that opened a file before a consolidation changed it, then saved,
writes its old copy back:
- CURRENT.md, after its entries were moved into topics, holds them again
  (``drop_stale_copies``);
- a topic merged into another (its entries moved, the file deleted) comes
  back with those entries, now live in both topics (``drop_topic_copies``).
  The copy kept is the one in the topic memd updated last: the newest
  ``updated`` stamp of the holders (the old file carries its older one),
  or the first in path order when the stamps tie.

Either way an exact copy (the same seqs, the same words) is dropped, and a
copy the person changed loses its signature, so it stays where they wrote
it as their new entry, signed with a seq of its own: no seq is live twice
and no words are lost. Where a holder may not be written, nothing is touched
and ``memd verify`` names the places.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from memd.consolidation.workspace import Workspace
from memd.core.document import Block, Document
from memd.core.entry import Entry
from memd.core.errors import FormatError
from memd.core.timeutil import time_or_none
from memd.vault import acks


@dataclass(frozen=True)
class Settled:
    dropped: dict[str, int]  # topic id -> exact copies removed from it
    unsigned: dict[str, int]  # topic id -> changed copies kept there as new items

    @property
    def total(self) -> int:
        return sum(self.dropped.values()) + sum(self.unsigned.values())

    def describe(self, dry_run: bool = False) -> str:
        places = ", ".join(f"topics/{topic_id}.md" for topic_id in sorted(set(self.dropped) | set(self.unsigned)))
        drop, keep = ("would drop", "would keep") if dry_run else ("dropped", "kept")
        return (
            f"topics held {self.total} entries a second time (an editor saved an old copy, or a line was pasted "
            f"twice: {places}): "
            f"{drop} {sum(self.dropped.values())} identical copies, {keep} {sum(self.unsigned.values())} "
            "changed ones as new entries"
        )


def drop_topic_copies(space: Workspace) -> Settled:
    """Leave each seq that two entries hold (in two topics, or twice in one)
    in one entry: the first of the newest holder's. Call under the vault lock,
    on the snapshot, before seqs are reserved. One pass over the entries of the
    topics involved: an entry may name a range of many seqs."""
    # A topic set aside as unwritable is left alone: the proof then names the
    # places. So is one with more signed seqs than a file is read for: each
    # entry unsigned there would let another, unread so far, count as signed.
    # Each topic is asked once, and only topics beside no unwritable one are
    # read (a topic read becomes part of the run's proof).
    writable = {seq: holders for seq, holders in space.catalog.shared().items() if space.skipped.isdisjoint(holders)}
    holding = {topic_id for holders in writable.values() for topic_id in holders}
    too_big = {topic_id for topic_id in holding if space.doc(topic_id).over_budget}
    shared = {seq: holders for seq, holders in writable.items() if too_big.isdisjoint(holders)}
    if not shared:
        return Settled({}, {})
    keepers: dict[tuple[str, ...], str] = {}
    owners: dict[int, Entry] = {}  # seq -> the entry that keeps it
    involved = sorted({topic_id for holders in shared.values() for topic_id in holders})
    for topic_id in involved:
        for located in space.doc(topic_id).signed():
            assert located.entry.signature is not None
            for seq in located.entry.signature.seq:
                holders = shared.get(seq)
                if holders is None or seq in owners:
                    continue
                key = tuple(holders)
                if key not in keepers:
                    keepers[key] = _newest(space, holders)
                if keepers[key] == topic_id:
                    owners[seq] = located.entry
    dropped: dict[str, int] = {}
    unsigned: dict[str, int] = {}
    for topic_id in involved:
        document = space.doc(topic_id)
        blocks: list[Block] = []
        for block in document.blocks:
            fate = _fate(block, owners)
            if fate == "drop":
                dropped[topic_id] = dropped.get(topic_id, 0) + 1
                continue
            if fate == "unsign" and isinstance(block, Entry):
                block = replace(block, signature=None, sep="")
                unsigned[topic_id] = unsigned.get(topic_id, 0) + 1
            blocks.append(block)
        if topic_id in dropped or topic_id in unsigned:
            space.set(topic_id, replace(document, blocks=tuple(blocks)))
    return Settled(dropped, unsigned)


def _fate(block: Block, owners: dict[int, Entry]) -> str:
    """ "keep", "drop" (an exact copy of the entry that keeps its seqs) or
    "unsign" (a changed copy): only an entry whose every seq another entry
    keeps is not kept as is."""
    if not isinstance(block, Entry) or block.signature is None:
        return "keep"
    kept_by: dict[int, Entry] = {}
    for seq in block.signature.seq:
        owner = owners.get(seq)
        if owner is None or owner is block:
            return "keep"
        kept_by[id(owner)] = owner
    if len(kept_by) == 1:
        [kept] = kept_by.values()
        assert kept.signature is not None
        mine, theirs = block.signature.seq, kept.signature.seq
        if len(mine) == len(theirs) and set(mine) == set(theirs) and kept.full_text == block.full_text:
            return "drop"
    return "unsign"


def _newest(space: Workspace, holders: list[str]) -> str:
    """The holder to keep: the newest ``updated`` stamp; on a tie (two
    consolidations in one second, the editor's copy read between them) the
    first in path order, since dropping an identical copy or unsigning a
    changed one loses no words either way, and refusing would leave the
    vault stuck until a person settled it."""
    stamps = {topic_id: _updated(space.doc(topic_id)) for topic_id in holders}
    known = {topic_id: stamp for topic_id, stamp in stamps.items() if stamp is not None}
    if not known:
        return min(holders)
    newest = max(known.values())
    return min(topic_id for topic_id, stamp in known.items() if stamp == newest)


def _updated(document: Document) -> datetime | None:
    if document.frontmatter is None:
        return None
    try:
        value = document.frontmatter.data.get("updated")
    except (FormatError, AttributeError):  # unreadable, or YAML that is not a mapping
        return None
    if not value:
        return None
    return time_or_none(value.isoformat() if isinstance(value, datetime) else str(value))


def adopted_lines(waiting: Mapping[int, acks.Ack]) -> dict[str, int]:
    """The words of each line memd adopted from the buffer (``source=hand``) and
    still guards (``acks.pending``), with the seq it gave it."""
    return {acks.words_of(ack): seq for seq, ack in waiting.items() if ",source=hand" in ack.entry.partition(">")[0]}


def drop_stale_copies(
    current: Document, topics: dict[str, Document], adopted: Mapping[str, int] | None = None
) -> tuple[Document, int, int]:
    """CURRENT.md without entries an editor's stale save brought back after
    they were moved into a topic, or that it holds twice: a copy identical to the topic's (or the first) entry is
    dropped; a copy the person changed loses its signature, so it is adopted
    as their new entry (no seq is ever live twice, no words are lost). An
    unsigned line memd adopted and filed (``adopted``: its words -> its seq),
    back word for word, is such a copy too, and is dropped.
    Returns (document, dropped, unsigned)."""
    texts: dict[int, str] = {}
    for document in topics.values():
        for entry in document.signed_entries():
            for seq in entry.signature.seq if entry.signature else ():
                texts[seq] = entry.full_text
    blocks: list[Block] = []
    dropped = unsigned = 0
    earlier: dict[int, str] = {}  # seq -> the text of the buffer entry that holds it first
    for block in current.blocks:
        if isinstance(block, Entry) and block.signature is None and adopted:
            kept = adopted.get(block.full_text)
            if kept is not None and texts.get(kept) == block.full_text:
                dropped += 1
                continue
        if isinstance(block, Entry) and block.signature is not None:
            seqs = set(block.signature.seq)
            # An entry in the buffer twice (a read torn by an editor's in-place
            # save, an old copy pasted back) is settled the same way: the first
            # copy stays, an identical one goes, a changed one is a new entry.
            holder = texts if seqs & texts.keys() else earlier if seqs & earlier.keys() else None
            if holder is not None:
                if all(holder.get(seq) == block.full_text for seq in seqs):
                    dropped += 1
                    continue
                block = replace(block, signature=None, sep="")
                unsigned += 1
            else:
                earlier.update(dict.fromkeys(seqs, block.full_text))
        blocks.append(block)
    return replace(current, blocks=tuple(blocks)), dropped, unsigned
