"""Putting back acknowledged entries that vanished without anyone meaning it.

An editor that opened a file before memd wrote to it, then saved, writes its
old copy over memd's appends (CURRENT.md) or over what a consolidation filed
(a topic). memd told the caller those entries were saved, so before it
commits or consolidates anything it puts back, at the end of CURRENT.md and
with their original signatures, every entry it acknowledged in the last
``acks.RETENTION`` that is in no file now, unless a person removed it on
purpose: with ``memd forget``, in a commit they made themselves, or by
deleting the whole file. Such a removal is recorded (``Memd-Removed``) when
memd commits the person's edit, so ``memd verify`` accounts for it.

Older entries are not acknowledged any more, but a stale save of a topic is
still told from a deletion (``stale_saves``): memd appends a line to a topic's
``update_log`` each time it files into it, so a saved topic whose log lacks
lines the committed one has was saved from an older version, and the entries
it lacks that memd filed after that version go back to CURRENT.md, to be filed
again. Entries the older version held and the save lacks are the person's
deletion.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memd.core.atomic import append_bytes, read_bytes, read_text
from memd.core.document import Document
from memd.core.errors import MemdError
from memd.core.signature import SeqSet
from memd.vault import acks
from memd.vault.journal import HandEditConflict
from memd.vault.state import seqs_in_files
from memd.vault.vault import Vault


@dataclass(frozen=True)
class Vanished:
    restored: tuple[int, ...]  # put back at the end of CURRENT.md
    removed: tuple[int, ...]  # removed on purpose by a person (recorded with their commit)

    @property
    def removed_span(self) -> str | None:
        return str(SeqSet.of(self.removed)) if self.removed else None


def vanished(
    vault: Vault, waiting: dict[int, acks.Ack], held: Callable[[set[int]], set[int]] | None = None
) -> list[acks.Ack]:
    """Of the recent acknowledgements ``waiting`` (``acks.pending``), the entries
    that are in no file and not recorded as superseded. ``held`` answers which
    of some seqs topics hold (a caller that keeps that knowledge spares
    reading every topic)."""
    if not waiting:
        return []
    if vault.current.exists() or vault.current.is_symlink():
        # A buffer memd cannot read (a folder, a pipe, a link) has not lost its
        # entries: say so in one line rather than append them again.
        read_text(vault.current, "CURRENT.md")
    if any(_unopenable(path) for path in vault.topic_files()):
        # The entries of a file memd cannot read (its permissions) are there all the
        # same: put back now, they would be filed twice once it can be read again.
        # The acknowledgements wait; the next run with every file readable decides.
        return []
    topics = held(set(waiting)) if held is not None else seqs_in_files(vault.topic_files())
    live = seqs_in_files([vault.current]) | topics
    gone = [waiting[seq] for seq in sorted(waiting.keys() - live)]
    if gone and held is not None:
        # Derived state may have caught a topic half-saved by an editor: nothing
        # is put back that the topic files themselves still hold.
        live |= seqs_in_files(vault.topic_files())
        gone = [ack for ack in gone if ack.seq not in live]
    if not gone:
        return []
    from memd.consolidation.verify import superseded_in

    superseded = superseded_in(vault.read(p) for p in vault.topic_files() if _readable(vault, p))
    return [ack for ack in gone if ack.seq not in superseded]


def _unopenable(path: Path) -> bool:
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except FileNotFoundError:
        return False  # gone since it was listed: its entries are gone with it
    except OSError:
        return True
    return False


def _readable(vault: Vault, path: object) -> bool:
    from memd.core.errors import MemdError

    try:
        vault.read(path)  # type: ignore[arg-type]
    except MemdError:
        return False
    return True


def on_purpose(vault: Vault, gone: list[acks.Ack]) -> set[int]:
    """Which vanished seqs a person removed deliberately."""
    from memd.git.log import blocked, changed_paths, removed_by_person, removed_in_own_commits, seqs_at_head

    seqs = {ack.seq for ack in gone}
    if blocked(vault) is not None:
        return seqs if not vault.current.exists() else set()
    deleted = [rel for rel in changed_paths(vault) if not (vault.root / rel).exists()]
    deliberate = seqs_at_head(vault, deleted) & seqs
    if not vault.current.exists():
        deliberate |= seqs - seqs_at_head(vault, ["topics"])  # the buffer itself was deleted
    deliberate |= removed_by_person(vault) & seqs
    rest = seqs - deliberate
    if rest:
        since = min(ack.at for ack in gone if ack.seq in rest)
        deliberate |= removed_in_own_commits(vault, rest, since)
    return deliberate


def _signature_taken_off(vault: Vault, gone: list[acks.Ack]) -> set[int]:
    """The vanished seqs whose words still stand, in the buffer or a topic, as an item
    without a signature: a person took the signature off (as ``memd sync`` asks when
    two clones gave one seq to two entries), and memd signs the item anew, never puts
    the old one back beside it. (Read only when an acknowledged entry is gone.)"""
    from memd.core.document import parse_document

    unsigned: set[str] = set()
    for path in vault.entry_files():
        try:
            document = parse_document(read_text(path, vault.rel_of(path)))
        except MemdError:
            continue
        unsigned |= {item.entry.full_text.strip() for item in document.entries() if item.entry.signature is None}
    return {ack.seq for ack in gone if acks.words_of(ack).strip() in unsigned} if unsigned else set()


SETTLE = 0.5  # seconds a just-saved CURRENT.md is left alone before entries it lacks count as gone


class Unsettled(HandEditConflict):
    """CURRENT.md lacks acknowledged entries and changed while memd read it,
    or was written moments ago and looks cut short: an
    editor saving in place truncates the file, then writes it, and a read in
    between finds entries "gone" that the save is about to bring back (putting
    them back then would leave each one twice). Read it again once it has
    settled; the vault lock is not held while waiting."""


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _half_written(path: Path) -> bool:
    """Written moments ago and empty, or cut short of a line's end: what a
    read finds between an in-place save's truncation and its last write (a
    whole save, stale or not, ends its last line)."""
    try:
        stat = path.stat()
        if not 0 <= time.time() - stat.st_mtime < SETTLE:
            return False
        if stat.st_size == 0:
            return True
        with path.open("rb") as handle:  # the last byte tells; the buffer may be large
            handle.seek(stat.st_size - 1)
            return handle.read(1) != b"\n"
    except OSError:
        return False


LOOKBACK = 20  # committed versions of a topic searched for the one a stale save started from


def stale_saves(vault: Vault, skip: set[int]) -> list[tuple[int, str]]:
    """(first seq, entry lines) of what stale saves of topics dropped (see the
    module doc): entries none of whose seqs is in ``skip`` or live anywhere."""
    from memd.consolidation.verify import update_log
    from memd.core.errors import MemdError
    from memd.core.layout import classify
    from memd.git.log import blocked, changed_paths
    from memd.git.versions import versions_of

    if blocked(vault) is not None:
        return []
    candidates: list[tuple[set[int], str]] = []
    for rel in changed_paths(vault):
        path = vault.root / rel
        if classify(rel) != "topic" or not path.is_file():
            continue
        try:
            saved = vault.read(path)
        except MemdError:
            continue
        log = update_log(saved)
        if log is None:
            continue
        head = versions_of(vault, rel, 1)
        head_log = update_log(head[0]) if head else None
        if head_log is None or len(head_log) <= len(log) or head_log[: len(log)] != log:
            continue  # not an older version of what memd last wrote
        # Only a stale save reads the older versions, to find the one it started from.
        start = next((v for v in versions_of(vault, rel, LOOKBACK)[1:] if update_log(v) == log), None)
        if start is None:
            continue
        kept = _seqs(saved) | _seqs(start) | skip
        for located in head[0].signed():
            seqs = set(located.entry.signature.seq) if located.entry.signature else set()
            if seqs and not seqs & kept:
                candidates.append((seqs, "\n".join(located.entry.lines()) + "\n"))
    if not candidates:
        return []
    live = seqs_in_files([vault.current, *vault.topic_files()])
    return [(min(seqs), lines) for seqs, lines in candidates if not seqs & live]


def _seqs(document: Document) -> set[int]:
    return {seq for entry in document.signed_entries() if entry.signature for seq in entry.signature.seq}


def restore(vault: Vault, held: Callable[[set[int]], set[int]] | None = None) -> Vanished:
    """Put back what vanished by accident; report what a person removed on
    purpose. Call under the vault lock."""
    before = _stamp(vault.current)
    waiting = acks.pending(vault)
    gone = vanished(vault, waiting, held)
    if gone and (_stamp(vault.current) != before or _half_written(vault.current)):
        raise Unsettled("CURRENT.md was saved a moment ago and lacks entries memd acknowledged; starting over")
    deliberate = (on_purpose(vault, gone) | _signature_taken_off(vault, gone)) if gone else set()
    back = [(ack.seq, ack.entry) for ack in gone if ack.seq not in deliberate]
    # Entries with a recent acknowledgement are the ack log's to put back (above); the
    # rest, older, are what a stale save of a topic can still drop. The two never overlap.
    back += stale_saves(vault, set(waiting))
    if back:
        text = read_bytes(vault.current) if vault.current.exists() else b""
        lead = b"" if not text or text.endswith(b"\n") else b"\n"
        append_bytes(vault.current, lead + "".join(entry for _, entry in back).encode("utf-8"))
    return Vanished(tuple(seq for seq, _ in back), tuple(sorted(deliberate)))
