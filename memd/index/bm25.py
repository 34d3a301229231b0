"""BM25 as Whoosh scores it, reached through tantivy's fixed BM25.

tantivy fixes b = 0.75 and uses another idf: each query term's boost carries
the ratio of the two idfs, and each field is padded with filler words so the
effective b is Whoosh's 0.4 (see ``tantivy_schema``).
"""

from __future__ import annotations

import math

from memd.index.fields import BM25_B

TANTIVY_B = 0.75  # fixed inside tantivy; BM25_K1 (1.2) is tantivy's k1 too
PAD_RATIO = (TANTIVY_B - BM25_B) / BM25_B  # 0.875 for b = 0.4


# Deleted records still count in a term's doc_freq until segments merge: docs is at least that.
def whoosh_idf(doc_freq: int, docs: int) -> float:
    return math.log(max(docs, doc_freq) / (doc_freq + 1)) + 1.0


def tantivy_idf(doc_freq: int, docs: int) -> float:
    return math.log(1.0 + (max(docs, doc_freq) - doc_freq + 0.5) / (doc_freq + 0.5))


def effective_b(pad: int, mean: float) -> float:
    """The b tantivy's BM25 amounts to when a field of mean length ``mean`` is padded by ``pad`` words."""
    return TANTIVY_B / (1.0 + pad / mean) if mean > 0 else BM25_B


def best_pad(mean: float) -> int:
    """The whole number of filler words that brings b nearest BM25_B."""
    ideal = PAD_RATIO * mean
    return min({math.floor(ideal), math.ceil(ideal)}, key=lambda pad: abs(effective_b(pad, mean) - BM25_B))
