"""The two-pass ranking of a large vector store (``memd.index.coarse``) against the whole product.

Not a test: run by hand and copy the figures into the README.

    python bench/bench_coarse.py --vectors /tmp/real100k.npy          # embeds them first if the file is missing
    python bench/bench_coarse.py --vectors F.npy --questions ../shared/data/locomo-dev.json

The vectors are real sentence vectors: the turns of the LoCoMo file's
conversations and chat-like texts (bench_vectors.py's), embedded by memd's
model, 100,000 by default (about 10 minutes of CPU the first time; saved to
``--vectors``). The queries are the LoCoMo file's questions, embedded. One
store, two ways, alternating query by query so both see the same load: the
whole product and top 100 (what a one-off search does), and the first pass
with the exact scores of its pool. Prints CPU per query (median, p95), the
one-time cost of the axes and the projection, and how much of the exact top
100 (and top 10) the two-pass ranking returns.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_vectors import chat_texts
from percentiles import percentile

from memd.index import coarse
from memd.index.embedding import embed_many, load_embedder, one_blas_thread_from_now
from memd.index.live_rows import LiveRows
from memd.index.segment import Segment
from memd.ingest.locomo import load_locomo

LIMIT = 100  # what search asks for (retrieve's semantic_candidates)


def locomo(path: Path) -> tuple[list[str], list[str]]:
    """(turns as "Speaker: text", questions, unanswerable ones included) of a LoCoMo file."""
    conversations = load_locomo(path)
    turns = [f"{turn.speaker}: {turn.text}" for talk in conversations for turn in talk.turns]
    asked = [q.question for talk in conversations for q in (*talk.questions, *talk.unanswerable)]
    return turns, asked


class Store(LiveRows):
    def __init__(self, matrix: np.ndarray) -> None:
        segment = Segment(Path("bench.npz"), "minilm-l6", matrix.shape[1])
        segment.matrix, segment.rids = matrix, [str(row) for row in range(len(matrix))]
        self._views, self.rids = [(segment, None, 0)], segment.rids
        self._starts, self._row = np.zeros(1, dtype=np.int64), None


def cpu_ms(work: Callable[[], object]) -> float:
    started = time.process_time()
    work()
    return (time.process_time() - started) * 1000


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=Path, required=True, help=".npy of unit vectors (made if missing)")
    parser.add_argument("--count", type=int, default=100_000, help="vectors to embed when the file is missing")
    parser.add_argument("--questions", type=Path, default=Path("../shared/data/locomo-dev.json"))
    args = parser.parse_args(argv)
    turns, questions = locomo(args.questions)
    embedder = load_embedder("minilm-l6")
    if not args.vectors.exists():
        texts = turns + list(itertools.islice(chat_texts(random.Random(3)), max(0, args.count - len(turns))))
        print(f"embedding {len(texts):,} texts ...", flush=True)
        np.save(args.vectors, embed_many(embedder, texts[: args.count]))
    matrix = np.load(args.vectors, mmap_mode="r")
    queries = embed_many(embedder, questions)
    one_blas_thread_from_now()
    whole, two = Store(matrix), Store(matrix)
    two._searches = coarse.WARM_SEARCHES  # as in a process that has searched before
    setup = cpu_ms(lambda: two.nearest(queries[0], LIMIT))
    exact_ms: list[float] = []
    two_ms: list[float] = []
    top100: list[float] = []
    top10: list[float] = []
    for query in queries:
        started = time.process_time()
        exact = whole.nearest(query, LIMIT)[0].tolist()
        exact_ms.append((time.process_time() - started) * 1000)
        whole._searches = 0  # keep it on the whole product
        started = time.process_time()
        got = two.nearest(query, LIMIT)[0].tolist()
        two_ms.append((time.process_time() - started) * 1000)
        top100.append(len(set(exact) & set(got)) / LIMIT)
        top10.append(len(set(exact[:10]) & set(got[:10])) / 10)
    kept = two._coarse.nbytes if two._coarse else 0
    print(
        f"{len(matrix):,} vectors, {len(queries):,} queries; first pass {coarse.DIMS} dimensions, "
        f"pool {coarse.POOL}, top {LIMIT}"
    )
    for label, values in [(f"whole product + top {LIMIT}", exact_ms), ("two passes", two_ms)]:
        print(f"  {label:24} CPU ms p50 {statistics.median(values):.2f}, p95 {percentile(values, 0.95):.2f}")
    print(f"  set-up once (axes, projection): {setup:.0f} ms CPU, {kept / 1e6:.0f} MB kept")
    print(
        f"  exact top {LIMIT} found: mean {statistics.mean(top100):.4f}, min {min(top100):.2f}, "
        f"whole in {sum(v == 1.0 for v in top100)} of {len(top100)}; top 10: mean {statistics.mean(top10):.4f}, "
        f"whole in {sum(v == 1.0 for v in top10)}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
