"""What a consolidation commit did to its entries' words, read against its parent.

``verify`` compares each consolidation commit with its parent over the files
it changed: an entry it moved or rewrote must still say its words. A
40,000-entry import is twenty such commits, each rewriting a buffer of
thousands of entries, and parsing every version of every file they touched
was most of a ``verify --full``. So each file is cut where its entries start
(one split in C), and only the pieces a version does not share with the one
before are parsed: a piece found as it was in the same file holds the same
entries with the same words. A file with a fence is parsed whole, as are the
parent's files when a changed entry's seq was held there in lines the commit
kept as they were (a copy made elsewhere): there, a line that looks like an
entry may be none, or the words before are not in the pieces it left.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from memd.git.versions import ParsedBlobs

if TYPE_CHECKING:
    from memd.core.document import Document, Known
    from memd.git.changes import Blob

Texts = dict[int, list[str]]  # seq -> the texts of the entries holding it

# A file is cut where its entries start (core/entry.py's ENTRY_START). A piece that is not
# an entry (a heading, prose) rides with the entry before it: it only makes that entry's
# piece differ, and a piece that differs is parsed and compared.
_FENCES = ("```", "~~~")


class CommitWords:
    """Reads each commit against its parent for the walk of ``verify``."""

    def __init__(self, known: Known | None = None) -> None:
        # The whole files, each blob parsed once in the walk (the fallback above); ``known``:
        # entries parsed already (the files now, which the newest commits mostly hold).
        self.whole: ParsedBlobs[Texts] = ParsedBlobs(texts_of, size=texts_bytes, known=known)

    def items(self) -> Known:
        """The items parsed so far, within their bound, for a parse of the same entries
        elsewhere (``acks.words_of``)."""
        return self.whole.items()

    def compare(self, olds: list[Blob | None], news: list[Blob | None], held: set[int]) -> tuple[Texts, Texts]:
        """(before, after) over the files a commit changed (``olds`` and ``news``: each
        one's version in its parent and in it, None where there is none): ``after`` the
        texts of each seq in an entry the commit wrote anew or moved, ``before`` the same
        seqs' texts in the parent (a seq absent there was filed for the first time).
        ``held``: the seqs the parent holds."""
        from memd.core.document import parse_document

        versions = [blob for blob in (*olds, *news) if blob is not None]
        if any(fence in blob.text for blob in versions for fence in _FENCES):
            return self._whole(olds, news)
        added: list[str] = []
        removed: list[str] = []
        for old, new in zip(olds, news, strict=True):
            was = old.pieces if old is not None else {}
            now = new.pieces if new is not None else {}
            added += [piece for piece in now if piece not in was]
            removed += [piece for piece in was if piece not in now]
        # The pieces' items are kept within the same bound as the whole files' (ParsedBlobs.items).
        after = texts_of(parse_document("\n".join(added), self.items())) if added else {}
        gone = texts_of(parse_document("\n".join(removed), self.items())) if removed else {}
        before = {seq: gone[seq] for seq in after if seq in gone}
        if any(seq in held and seq not in before for seq in after):
            whole, _ = self._whole(olds, ())
            before = {seq: whole[seq] for seq in after if seq in whole}
        return before, after

    def _whole(self, olds: Iterable[Blob | None], news: Iterable[Blob | None]) -> tuple[Texts, Texts]:
        """(before, after) of every entry of the files, each blob parsed whole."""
        return (
            joined([self.whole.get(blob.data) or {} for blob in olds if blob is not None]),
            joined([self.whole.get(blob.data) or {} for blob in news if blob is not None]),
        )


def texts_of(document: Document) -> Texts:
    """seq -> the texts of the document's entries holding it (no lines or headings needed)."""
    found: Texts = {}
    for entry in document.signed_entries():
        text = entry.full_text
        for seq in entry.signature.seq:  # type: ignore[union-attr]
            found.setdefault(seq, []).append(text)
    return found


def texts_bytes(texts: Texts) -> int:
    """About the memory ``texts_of``'s map holds: its texts, lists and slots."""
    return sum(60 + sum(sys.getsizeof(text) + 8 for text in said) for said in texts.values())


def joined(maps: list[Texts]) -> Texts:
    """``texts_of`` of several documents from each one's."""
    if len(maps) == 1:
        return maps[0]
    found: Texts = {}
    for texts in maps:
        for seq, said in texts.items():
            found.setdefault(seq, []).extend(said)
    return found
