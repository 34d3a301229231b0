"""Ranking a large vector store in two passes: the exact similarities of the rows a cheaper pass chose."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memd.index import coarse
from memd.index.live_rows import LiveRows
from memd.index.segment import Segment, text_key

DIM = 384


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def like_sentences(rng: np.random.Generator, count: int) -> np.ndarray:
    """Unit vectors whose energy falls off over many directions, as sentence vectors' does."""
    spectrum = 1.0 / np.arange(1, 201) ** 0.8
    basis = np.linalg.qr(rng.standard_normal((DIM, 200)))[0].T
    return unit((rng.standard_normal((count, 200)) * spectrum) @ basis + 0.02 * rng.standard_normal((count, DIM)))


def segment(number: int, matrix: np.ndarray, folder: Path | None = None) -> Segment:
    """A segment of ``matrix``'s rows; saved in ``folder`` and read back, as a store reads one, if given."""
    made = Segment((folder or Path()) / f"{number}.npz", "test", DIM)
    made.matrix = matrix
    made.rids = [f"s{number}#{row}" for row in range(len(matrix))]
    if folder is None:
        return made
    made._keys = [text_key(rid) for rid in made.rids]
    made.save()
    return Segment.load(made.path, "test", DIM)


class Store(LiveRows):
    """Segments of vectors, some rows retired, as a vault's vector index holds them."""

    def __init__(self, parts: list[tuple[np.ndarray | Segment, np.ndarray | None]]) -> None:
        self._views, self.rids = [], []
        for number, (matrix, live) in enumerate(parts):
            held = matrix if isinstance(matrix, Segment) else segment(number, matrix)
            self._views.append((held, live, len(self.rids)))
            self.rids.extend(held.rids if live is None else [held.rids[row] for row in live])
        self._starts = np.array([start for _, _, start in self._views], dtype=np.int64)
        self._row = None


@pytest.fixture
def small_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coarse, "MIN_ROWS", 1000)
    monkeypatch.setattr(coarse, "POOL", 300)


def test_the_axes_are_orthonormal_and_keep_products_within_their_span() -> None:
    rng = np.random.default_rng(1)
    within = unit(rng.standard_normal((500, 40)) @ rng.standard_normal((40, DIM)))
    axes = coarse.principal_axes(within, 40)
    assert axes.shape == (DIM, 40)
    assert np.allclose(axes.T @ axes, np.eye(40), atol=1e-4)
    query = within[7]
    assert np.allclose((within @ axes) @ (query @ axes), within @ query, atol=1e-4)


def test_a_store_searched_often_returns_the_exact_best_rows_of_a_first_pass(small_thresholds: None) -> None:
    rng = np.random.default_rng(2)
    vectors = like_sentences(rng, 6000)
    retired = np.setdiff1d(np.arange(3000), np.arange(0, 3000, 3))  # a third of the older segment is live
    store = Store([(vectors[:3000], np.arange(0, 3000, 3)), (vectors[3000:], None)])
    live = np.concatenate([vectors[:3000][np.arange(0, 3000, 3)], vectors[3000:]])
    found = []
    for n in range(40):
        query = unit(vectors[rng.integers(6000)][None, :] + 0.5 * like_sentences(rng, 1))[0]
        rows, scores = store.nearest(query, 20)
        assert (store._coarse is not None) == (n >= coarse.WARM_SEARCHES)  # one-off searches: the whole product
        exact = live @ query
        assert np.allclose(scores, exact[rows], atol=1e-5)  # every similarity returned is the exact one
        assert (np.diff(scores) <= 1e-6).all()
        assert not {f"s0#{row}" for row in retired} & {store.rids[row] for row in rows}
        best = np.argsort(-exact)[:20]
        found.append(len(set(rows.tolist()) & set(best.tolist())) / 20)
    assert np.mean(found[coarse.WARM_SEARCHES :]) >= 0.97


def test_scores_of_given_rows_match_the_whole_product(small_thresholds: None) -> None:
    rng = np.random.default_rng(3)
    vectors = like_sentences(rng, 2000)
    store = Store([(vectors[:1200], np.arange(1, 1200, 2)), (vectors[1200:], None)])
    query = like_sentences(rng, 1)[0]
    rows = rng.permutation(len(store))[:300]
    assert np.allclose(store.scores_of(rows, query), store.scores(query)[rows], atol=1e-5)
    assert store.scores_of(np.zeros(0, dtype=np.int64), query).shape == (0,)


def test_equal_similarities_come_in_row_order() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1, 0.5], dtype=np.float32)
    assert coarse.top_rows(scores, 4).tolist() == [1, 3, 0, 2]
    assert coarse.top_rows(scores, 10).tolist() == [1, 3, 0, 2, 5, 4]


def test_a_store_made_ready_ahead_ranks_by_the_first_pass_from_its_first_search(small_thresholds: None) -> None:
    rng = np.random.default_rng(4)
    vectors = like_sentences(rng, 3000)
    store = Store([(vectors, None)])
    store.prepare()  # what the daemon does while idle
    assert store._coarse is not None and store._coarse.nbytes == 3000 * coarse.DIMS * 4
    fitted = store._coarse
    rows, scores = store.nearest(vectors[10], 5)
    assert store._coarse is fitted and rows[0] == 10 and np.isclose(scores[0], 1.0, atol=1e-5)


def test_a_store_read_again_projects_only_the_segments_it_had_not_met(small_thresholds: None, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    vectors = like_sentences(rng, 3000)
    base = segment(0, vectors[:2500], tmp_path)
    store = Store([(base, None)])
    store.prepare()
    assert store._coarse is not None
    projected = store._coarse._projected[(str(base.path), base.stamp)][1]
    # Another process added a segment: the store is read again, from the files.
    again = Store([(Segment.load(base.path, "test", DIM), None), (segment(1, vectors[2500:], tmp_path), None)])
    again.carry_over(store)
    rows, scores = again.nearest(vectors[2700], 5)
    assert again.rids[rows[0]] == "s1#200" and np.isclose(scores[0], 1.0, atol=1e-5)
    assert again._coarse is store._coarse
    assert again._coarse._projected[(str(base.path), base.stamp)][1] is projected  # not projected again
    assert again._coarse.nbytes == 3000 * coarse.DIMS * 4
    rewritten = segment(0, vectors[:2500][::-1].copy(), tmp_path)  # the same path, another file (compaction)
    third = Store([(rewritten, None)])
    third.carry_over(again)
    third.nearest(vectors[0], 5)
    assert third._coarse is not None
    assert third._coarse._projected[(str(rewritten.path), rewritten.stamp)][1] is not projected
