"""Putting back acknowledged entries that an editor's stale save wiped out.

An editor that loaded CURRENT.md before memd appended to it, then saved,
writes its old copy over the appends. memd told the caller those entries
were saved, so it puts them back (with their original signatures) before it
commits or consolidates anything. A stale save can only drop entries newer
than everything it kept, so only such a tail is put back; an entry a person
deleted from the middle, or a CURRENT.md deleted as a whole, is the person's
removal and is recorded as such when their edit is committed.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import acks
from ..atomic import append_bytes, read_text
from ..document import parse_document
from ..signature import SeqSet
from ..state import seqs_in_files
from ..vault import Vault


@dataclass(frozen=True)
class Vanished:
    restored: tuple[int, ...]  # put back at the end of CURRENT.md
    removed: tuple[int, ...]  # deleted by a person (recorded with their commit)

    @property
    def removed_span(self) -> str | None:
        return str(SeqSet.of(self.removed)) if self.removed else None


def vanished(vault: Vault) -> list[acks.Ack]:
    """Acknowledged, uncommitted entries that are in no file any more."""
    waiting = acks.pending(vault)
    if not waiting:
        return []
    live = seqs_in_files(vault.entry_files())
    return [ack for seq, ack in sorted(waiting.items()) if seq not in live]


def restore(vault: Vault) -> Vanished:
    """Put back the tail an editor wiped; report the rest as a person's removal.
    Call under the vault lock."""
    gone = vanished(vault)
    if not gone:
        return Vanished((), ())
    if not vault.current.exists():
        return Vanished((), tuple(a.seq for a in gone))
    document = parse_document(read_text(vault.current, "CURRENT.md"))
    newest = max((s for e in document.signed() if e.entry.signature for s in e.entry.signature.seq), default=0)
    tail = [a for a in gone if a.seq > newest]
    text = vault.current.read_bytes()
    lead = b"" if not text or text.endswith(b"\n") else b"\n"
    if tail:
        append_bytes(vault.current, lead + "".join(a.entry for a in tail).encode("utf-8"))
    return Vanished(tuple(a.seq for a in tail), tuple(a.seq for a in gone if a.seq <= newest))
