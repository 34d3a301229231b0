"""The index seam: what callers may ask of a search engine.

Callers (tools, ask, eval) only see ``Backend``, ``Filters`` and ``Hit``, so
Whoosh can be swapped for SQLite FTS5 or tantivy without touching them. A
backend stores records keyed by file path; keeping it in step with the files
is the job of ``memd.index.store``, not of the backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memd.index.records import Record


@dataclass(frozen=True)
class Filters:
    """Restrict a search. Times are inclusive; ``None`` means unbounded."""

    since: datetime | None = None
    until: datetime | None = None
    source: str | None = None
    kind: str | None = None  # "entry" | "partition"
    doc: str | None = None


@dataclass(frozen=True)
class Hit:
    record: Record
    score: float


class Backend(Protocol):
    # The name of the analysis ``analyse`` applies: backends that share it turn
    # any text into the same terms, so what is remembered of one holds for all.
    analysis: str

    def replace_files(self, removed: Iterable[str], records: Sequence[Record]) -> None:
        """Drop every record of the ``removed`` paths, then add ``records``, atomically."""

    def search(self, terms: Sequence[tuple[str, float]], limit: int, filters: Filters) -> list[Hit]:
        """Rank records by BM25 over analysed ``terms`` (term, boost)."""

    def get(self, rids: Iterable[str]) -> dict[str, Record]:
        """Records by id (missing ids are left out)."""

    def by_seq(self, seqs: Iterable[int]) -> list[Record]:
        """Entry records holding any of these seqs."""

    def idf(self, term: str) -> float:
        """Inverse document frequency of an analysed term in entry text."""

    def doc_freq(self, term: str) -> int:
        """How many records hold an analysed term in their text."""

    def analyse(self, text: str) -> list[str]:
        """The terms the engine would index for ``text`` (stemmed, no stopwords)."""

    def count(self) -> int:
        """How many records are stored."""

    def close(self) -> None: ...
