"""Ranking many vectors in two passes, for a process that searches them again and again.

A query's product with every stored vector is bound by memory, not by
arithmetic: each record's 1.5 KB is read once a query, 12-13 ms of CPU at
100,000 records on a 2-core machine. A process that keeps searching (the
daemon, the MCP server, an evaluation) also keeps each vector's coordinates
along the ``DIMS`` directions in which the stored vectors vary most (the
principal axes of an even sample of them; 40% of the bytes), ranks
every record by those first, and computes the exact similarity of the best
``POOL`` only. Every similarity a caller sees is the exact one: the first
pass only chooses which records get one. Measured on 100,000 real vectors
(``bench/bench_coarse.py``): the README gives how often the exact top 100
is found whole and what a query costs.

Below ``MIN_ROWS`` records, and for a process's first ``WARM_SEARCHES``
searches (a one-off ``memd search`` would pay the axes and the projection,
about 0.3 s of CPU at 100,000, to save milliseconds), the exact product ranks alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memd.index.segment import Segment

DIMS = 160  # of 384: the axes kept hold about 93% of real vectors' energy (measured)
POOL = 2000  # records scored exactly per query (at least 4 x the records asked for)
MIN_ROWS = 20_000  # below this the whole product costs under 3 ms
WARM_SEARCHES = 2
SAMPLE = 8192  # vectors the axes are found from


def principal_axes(sample: np.ndarray, dims: int) -> np.ndarray:
    """``(dim, dims)`` orthonormal columns spanning the directions of most energy
    in ``sample``'s rows. Not centred: what must survive the projection is each
    vector's product with a query, and the mean is part of every product."""
    moment = sample.astype(np.float64).T @ sample.astype(np.float64)
    _, vectors = np.linalg.eigh(moment)  # eigenvalues ascending
    return np.ascontiguousarray(vectors[:, ::-1][:, :dims], dtype=np.float32)


class Coarse:
    """The axes of one store and each segment's vectors projected onto them.

    A projection is kept by the segment's file (its path and the stamp it was
    read with), so a process that reads the store again after another one added
    a segment (the daemon after a hand edit) projects only the new segment; a
    segment never saved is known by its matrix alone."""

    def __init__(self, axes: np.ndarray) -> None:
        self.axes = axes
        # By the file's path and stamp, or by the matrix's identity (the matrix kept, so
        # that its id is not another's).
        self._projected: dict[Any, tuple[np.ndarray | None, np.ndarray]] = {}

    @property
    def nbytes(self) -> int:
        """Memory the projections hold (``DIMS`` floats a vector)."""
        return sum(projected.nbytes for _, projected in self._projected.values())

    @classmethod
    def fit(cls, segments: Sequence[Segment]) -> Coarse:
        """Axes from an even sample of the rows of a store's ``segments``."""
        total = sum(len(segment.matrix) for segment in segments)
        step = max(1, total // SAMPLE)
        sample = np.concatenate([np.asarray(segment.matrix[::step], dtype=np.float32) for segment in segments])
        return cls(principal_axes(sample, min(DIMS, sample.shape[1])))

    def project(self, segments: Sequence[Segment]) -> list[np.ndarray]:
        """Each segment's vectors along the axes: kept ones taken, the rest projected now
        (the daemon does this while idle); retired segments' projections are let go."""
        kept: dict[Any, tuple[np.ndarray | None, np.ndarray]] = {}
        out: list[np.ndarray] = []
        for segment in segments:
            saved = segment.stamp is not None
            key = (str(segment.path), segment.stamp) if saved else id(segment.matrix)
            source, projected = self._projected.get(key, (None, None))
            same = saved or source is segment.matrix
            if projected is None or len(projected) != len(segment.matrix) or not same:
                projected = np.asarray(segment.matrix, dtype=np.float32) @ self.axes
            kept[key] = (None if saved else segment.matrix, projected)
            out.append(projected)
        self._projected = kept
        return out

    def scores(self, segments: Sequence[Segment], query: np.ndarray) -> list[np.ndarray]:
        """Each segment's rows' approximate similarity to ``query``, one array per segment."""
        reduced = query.astype(np.float32, copy=False) @ self.axes
        return [projected @ reduced for projected in self.project(segments)]


def top_rows(scores: np.ndarray, limit: int) -> np.ndarray:
    """Positions of the ``limit`` highest ``scores``, highest first; equal scores
    (the same text stored twice) in position order, whichever pass chose them."""
    count = len(scores)
    take = min(limit, count)
    if take <= 0:
        return np.zeros(0, dtype=np.int64)
    rows = np.sort(np.argpartition(-scores, take - 1)[:take]) if take < count else np.arange(count)
    return rows[np.argsort(-scores[rows], kind="stable")]
