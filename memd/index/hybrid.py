"""Hybrid retrieval's backend: the lexical backend plus similarity in meaning.

``IndexStore.backend()`` hands ``retrieve`` a ``HybridBackend`` when the
vault's embedding model is installed: every lexical call goes to the lexical
backend, and ``similar(query)`` embeds the query (remembered per process) and
takes its product with every stored vector (``memd.index.vectors``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .base import Backend, Filters, Hit
from .records import Record


class Similarity:
    """Cosine similarities of one query to all records with a vector."""

    def __init__(self, vectors: Any, scores: Any) -> None:
        self.vectors = vectors
        self.scores = scores

    def top(self, limit: int) -> list[tuple[str, float]]:
        """(record id, similarity), best first."""
        import numpy as np

        count = len(self.scores)
        if limit <= 0 or count == 0:
            return []
        take = min(limit, count)
        rows = np.argpartition(-self.scores, take - 1)[:take] if take < count else np.arange(count)
        rows = rows[np.argsort(-self.scores[rows], kind="stable")]
        return [(self.vectors.rids[row], float(self.scores[row])) for row in rows]

    def of(self, rid: str) -> float | None:
        row = self.vectors.row(rid)
        return None if row is None else float(self.scores[row])


class HybridBackend:
    """The lexical backend plus ``similar``: records nearest to a query in meaning."""

    def __init__(self, lexical: Backend, vectors: Any, embedder: Any) -> None:
        self.lexical = lexical
        self.vectors = vectors
        self.embedder = embedder

    def similar(self, query: str) -> Similarity:
        """How close every record is to ``query`` in meaning."""
        return self.similar_to(self.query_vector(query))

    def query_vector(self, query: str) -> Any:
        """The query's unit vector (remembered per process: see ``embed_query``)."""
        from .embedding import embed_query

        return embed_query(self.embedder, query)

    def similar_to(self, vector: Any) -> Similarity:
        """How close every record is to ``vector``: one product over all stored vectors.

        On one BLAS thread: at 10k records a second thread made it ten times
        dearer on a busy 2-core machine (waking it costs more than the product),
        and at 100k it saved little (the product is memory-bound)."""
        from .embedding import one_blas_thread

        with one_blas_thread():
            return Similarity(self.vectors, self.vectors.scores(vector))

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

    def analyse(self, text: str) -> list[str]:
        return self.lexical.analyse(text)

    def count(self) -> int:
        return self.lexical.count()

    def close(self) -> None:
        self.lexical.close()
