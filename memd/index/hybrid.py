"""Hybrid retrieval's backend: the lexical backend plus similarity in meaning.

``IndexStore.backend()`` hands ``retrieve`` a ``HybridBackend`` when the
vault's embedding model is installed: every lexical call goes to the lexical
backend, and ``similar(query)`` embeds the query (remembered per process) and
ranks the stored vectors by their product with it (``memd.index.live_rows``).
A candidate's similarity may also count its closest sentence's
(``Similarity.of_records``), read for the candidates only, not for every record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from memd.index.base import Backend, Filters, Hit
from memd.index.records import Record


class Similarity:
    """How close records are to one query in meaning, computed for the records asked about."""

    def __init__(self, vectors: Any, query: Any) -> None:
        self.vectors = vectors
        self.query = query

    def top(self, limit: int) -> list[tuple[str, float]]:
        """(record id, similarity), best first."""
        from memd.index.embedding import one_blas_thread

        if limit <= 0 or not len(self.vectors):
            return []
        with one_blas_thread():
            rows, scores = self.vectors.nearest(self.query, limit)
        return [(self.vectors.rids[row], score) for row, score in zip(rows.tolist(), scores.tolist(), strict=True)]

    def of_records(self, rids: Sequence[str], sentence_share: float = 0.0) -> list[float | None]:
        """Each record's similarity (None without a vector), plus ``sentence_share``
        of the lead its closest sentence has over the record as a whole: a
        sentence that answers the query is diluted by the rest of the record in
        the record's own vector."""
        import numpy as np

        from memd.index.embedding import one_blas_thread

        rows = [self.vectors.row(rid) for rid in rids]
        known = np.array([row for row in rows if row is not None], dtype=np.int64)
        with one_blas_thread():
            whole = self.vectors.scores_of(known, self.query)
            best = self.vectors.best_parts(known, self.query) if sentence_share and len(known) else None
        if best is not None:
            lead = np.where(np.isnan(best), 0.0, np.maximum(0.0, best - whole))
            whole = whole + sentence_share * lead
        values = iter(whole.tolist())
        return [None if row is None else next(values) for row in rows]


class HybridBackend:
    """The lexical backend plus ``similar``: records nearest to a query in meaning."""

    def __init__(self, lexical: Backend, vectors: Any, embedder: Any) -> None:
        self.lexical = lexical
        self.vectors = vectors
        self.embedder = embedder
        self.analysis = lexical.analysis

    def similar(self, query: str) -> Similarity:
        """How close every record is to ``query`` in meaning."""
        return self.similar_to(self.query_vector(query))

    def query_vector(self, query: str) -> Any:
        """The query's unit vector (remembered per process: see ``embed_query``)."""
        from memd.index.embedding import embed_query

        return embed_query(self.embedder, query)

    def similar_to(self, vector: Any) -> Similarity:
        """How close records are to ``vector``, computed as they are asked for.

        On one BLAS thread: at 10k records a second thread made the product over
        all vectors ten times dearer on a busy 2-core machine (waking it costs
        more than the product), and at 100k it saved little (it is memory-bound)."""
        return Similarity(self.vectors, vector)

    def replace_files(self, removed: Iterable[str], records: Sequence[Record]) -> None:
        self.lexical.replace_files(removed, records)

    def search(self, terms: Sequence[tuple[str, float]], limit: int, filters: Filters) -> list[Hit]:
        return self.lexical.search(terms, limit, filters)

    def get(self, rids: Iterable[str]) -> dict[str, Record]:
        return self.lexical.get(rids)

    def by_seq(self, seqs: Iterable[int]) -> list[Record]:
        return self.lexical.by_seq(seqs)

    def idf(self, term: str) -> float:
        return self.lexical.idf(term)

    def doc_freq(self, term: str) -> int:
        return self.lexical.doc_freq(term)

    def analyse(self, text: str) -> list[str]:
        return self.lexical.analyse(text)

    def count(self) -> int:
        return self.lexical.count()

    def close(self) -> None:
        self.lexical.close()
