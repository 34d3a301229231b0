"""Results that say something new: maximal marginal relevance over the
words of the records ``retrieve`` ranked, so a result that mostly repeats a
better one moves down, and the distinct words of each record's text, kept in
a cache bounded by its bytes (the same records come up query after query).
"""

from __future__ import annotations

import math
import sys
import threading
from typing import TYPE_CHECKING

from memd.index.base import Backend
from memd.index.bytecache import ByteLRU, budget_bytes, terms_bytes

if TYPE_CHECKING:
    from memd.index.retrieve import Result

# Keyed by values alone (the analysis's name and the text): a key holding the
# backend (its bound ``analyse``) kept every backend ever searched alive, with
# its vectors and record cache, and a long-lived process grew by megabytes a search.
# Each text's distinct words are kept as a tuple: a small set's hash table takes four
# times the memory, and a long-lived reader keeps tens of thousands of them.
# Bounded by their estimated bytes (an eighth of the record caches' budget), least recently used out.
_TERMS: ByteLRU[tuple[str, str], tuple[str, ...]] = ByteLRU(budget_bytes(share=0.125), terms_bytes)
_TERMS_LOCK = threading.Lock()


def distinct_terms(backend: Backend, text: str) -> tuple[str, ...]:
    """The distinct analysed words of a record's text (remembered: the same records come up query after query)."""
    key = (backend.analysis, text)
    with _TERMS_LOCK:
        found = _TERMS.get(key)
    if found is None:
        found = tuple(dict.fromkeys(backend.analyse(text)))
        with _TERMS_LOCK:
            _TERMS.put(key, found)
    return found


def diversify(backend: Backend, results: list[Result], limit: int, weight: float) -> list[Result]:
    """Maximal marginal relevance: a result that mostly repeats the words of a
    better one moves down, so a reader's limited attention (and a word budget)
    covers more of what is relevant rather than the same thing twice.
    (Repetition judged by closeness in meaning instead was measured worse.)"""
    pool = results[: min(len(results), max(2 * limit, 40), 120)]
    if len(pool) < 3:
        return results
    top = max(r.score for r in pool) or 1.0
    words = [distinct_terms(backend, r.record.text) for r in pool]
    relevance = [r.score / top for r in pool]
    # A process that searches by meaning has numpy loaded; a words-only one need not
    # import it (90 ms) for this: both ways give the same order (tests/test_words_only.py).
    pick = mmr_numpy if "numpy" in sys.modules else mmr_python
    order = pick(words, relevance, weight)
    return [pool[i] for i in order] + results[len(pool) :]


def mmr_numpy(words: list[tuple[str, ...]], relevance: list[float], weight: float) -> list[int]:
    """The order MMR picks: each time the candidate with the best relevance less
    ``weight`` times its highest word overlap (Jaccard) with those picked before."""
    import numpy as np

    vocabulary = {term: i for i, term in enumerate({term for terms in words for term in terms})}
    present = np.zeros((len(words), max(1, len(vocabulary))), dtype=np.float32)
    for row, terms in enumerate(words):
        present[row, [vocabulary[term] for term in terms]] = 1.0
    shared = present @ present.T
    sizes = present.sum(axis=1)
    union = sizes[:, None] + sizes[None, :] - shared
    jaccard = np.divide(shared, union, out=np.zeros_like(shared), where=union > 0)
    scores = np.array(relevance)
    overlap = np.zeros(len(words))  # each candidate's highest overlap with a chosen result
    chosen = np.zeros(len(words), dtype=bool)
    order: list[int] = []
    for _ in range(len(words)):
        value = np.where(chosen, -np.inf, scores - weight * overlap)
        best = int(np.argmax(value))  # the first of equals, as in rank order
        chosen[best] = True
        order.append(best)
        overlap = np.maximum(overlap, jaccard[:, best])
    return order


def mmr_python(words: list[tuple[str, ...]], relevance: list[float], weight: float) -> list[int]:
    """``mmr_numpy`` in plain Python, to the bit: each overlap is the float32
    quotient numpy computes (a float64 quotient of two small integers rounded
    to float32 is the float32 quotient), everything else float64 as there."""
    from array import array

    relevance = [float(score) for score in relevance]  # a numpy float32 counts in float64 there
    sets = [set(terms) for terms in words]
    count = len(sets)
    jaccard = [[0.0] * count for _ in range(count)]
    for i in range(count):
        row = jaccard[i]
        for j in range(i, count):
            shared = len(sets[i]) if i == j else len(sets[i] & sets[j])
            union = len(sets[i]) + len(sets[j]) - shared
            if union > 0:
                row[j] = jaccard[j][i] = shared / union
    for row in jaccard:
        row[:] = array("f", row)  # float32, as numpy's
    overlap = [0.0] * count
    chosen = [False] * count
    order: list[int] = []
    for _ in range(count):
        best, top = -1, -math.inf
        for i in range(count):
            value = -math.inf if chosen[i] else relevance[i] - weight * overlap[i]
            if value != value:  # NaN: numpy's argmax takes the first
                best = i
                break
            if best < 0 or value > top:
                best, top = i, value
        chosen[best] = True
        order.append(best)
        column = [row[best] for row in jaccard]
        overlap = [c if c > o or c != c else o for o, c in zip(overlap, column, strict=True)]
    return order
