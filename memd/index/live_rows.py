"""A vector store's live rows as a search reads them: similarity to a query,
for every row, for the best few, or for given rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from memd.index import coarse
from memd.index.gather import View
from memd.index.segment import Segment


class LiveRows:
    """Searching over ``_views`` (each a segment, its live rows or None for all of
    them, and the number of its first live row), which the store keeps in step."""

    _views: list[View]
    _starts: np.ndarray
    _row: dict[str, int] | None
    rids: list[str]
    _searches = 0  # in this process: a store searched often gets a first pass (``nearest``)
    _coarse: coarse.Coarse | None = None

    def __len__(self) -> int:
        return len(self.rids)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every live record to ``query`` (a unit vector), by row."""
        query = query.astype(np.float32, copy=False)
        out = [segment.matrix @ query for segment, _, _ in self._views]
        return self._live(out)

    def prepare(self) -> None:
        """Make ready now what ``nearest`` sets up for a process that keeps searching
        (at 100,000 records about 0.3 s of CPU), instead of in its third search."""
        self._searches = max(self._searches, coarse.WARM_SEARCHES)
        if self._large_for(coarse.POOL):
            segments, first_pass = self._first_pass()
            first_pass.project(segments)

    def carry_over(self, before: LiveRows) -> None:
        """Keep what ``before`` (this store as read earlier) set up for searching:
        a long-lived process reads the store again whenever another process
        writes it, and the segments both share need no new projection."""
        self._searches = max(self._searches, before._searches)
        self._coarse = self._coarse or before._coarse

    def nearest(self, query: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """The ``limit`` live rows most similar to ``query``, best first, and their
        similarities: by the whole product, or in a process that keeps searching a
        large store, among the rows its first pass ranks best (``memd.index.coarse``)."""
        self._searches += 1
        pool = max(coarse.POOL, 4 * limit)
        if not self._large_for(pool) or self._searches <= coarse.WARM_SEARCHES:
            scores = self.scores(query)
            rows = coarse.top_rows(scores, limit)
            return rows, scores[rows]
        segments, first_pass = self._first_pass()
        first = self._live(first_pass.scores(segments, query))
        chosen = np.sort(np.argpartition(-first, pool - 1)[:pool])
        exact = self.scores_of(chosen, query)
        best = coarse.top_rows(exact, limit)
        return chosen[best], exact[best]

    def _large_for(self, pool: int) -> bool:
        """Whether a first pass choosing ``pool`` rows pays here (the whole product costs little below)."""
        return len(self) >= max(coarse.MIN_ROWS, 2 * pool)

    def _first_pass(self) -> tuple[list[Segment], coarse.Coarse]:
        """The live segments and the first pass over them (its axes fitted once, from them)."""
        segments = [segment for segment, _, _ in self._views]
        if self._coarse is None:
            self._coarse = coarse.Coarse.fit(segments)
        return segments, self._coarse

    def scores_of(self, rows: Any, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of the records at ``rows`` to ``query``, in that order."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.zeros(len(rows), dtype=np.float32)
        for mine, segment, local in self._located(rows):
            out[mine] = segment.matrix[local] @ query.astype(np.float32, copy=False)
        return out

    def best_parts(self, rows: Any, query: np.ndarray) -> np.ndarray:
        """For each record row, its closest sentence's similarity to ``query``
        (NaN for a record of one sentence): one product over those sentences only."""
        rows = np.asarray(rows, dtype=np.int64)
        best = np.full(len(rows), np.nan, dtype=np.float32)
        for mine, segment, local in self._located(rows):
            best[mine] = segment.best_parts(local, query)
        return best

    def _live(self, per_view: list[np.ndarray]) -> np.ndarray:
        """One value per live row, from one array per view over all its segment's rows."""
        views = zip(per_view, self._views, strict=True)
        out = [values if live is None else values[live] for values, (_, live, _) in views]
        return np.concatenate(out) if out else np.zeros(0, dtype=np.float32)

    def _located(self, rows: np.ndarray) -> Iterator[tuple[np.ndarray, Segment, np.ndarray]]:
        """Live ``rows`` by segment: (which of ``rows``, the segment, their rows in it)."""
        if not len(rows):
            return
        which = np.searchsorted(self._starts, rows, side="right") - 1
        # The segments present, in order: np.unique would import numpy.ma (and compile
        # tokenize's patterns for its signatures), 40 ms of a one-search process.
        for index in np.flatnonzero(np.bincount(which)):
            segment, live, start = self._views[int(index)]
            mine = which == index
            local = rows[mine] - start
            yield mine, segment, local if live is None else live[local]

    def row(self, rid: str) -> int | None:
        if self._row is None:
            self._row = {rid: row for row, rid in enumerate(self.rids)}
        return self._row.get(rid)
