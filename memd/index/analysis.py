"""Whoosh's analysis, in plain Python: the words a backend indexes for a text.

The tantivy backend indexes these words (split on spaces), so its terms,
stems and stopwords are exactly the Whoosh backend's.
"""

from __future__ import annotations

import re
from functools import lru_cache

# The name backends give this analysis (``Backend.analysis``): both index its words.
ANALYSIS = "whoosh-stemming"
_TOKEN = re.compile(r"\w+(?:\.\w+)*")  # whoosh_backend._analyzer's expression


# Whoosh's ``STOP_WORDS``, word for word (tests/test_index_tantivy.py compares them): importing
# ``whoosh.analysis`` for them loads every analyzer it has, a third of a search's imports.
STOP_WORDS = frozenset(
    "a an and are as at be by can for from have if in is it may not of on or tbd that the this to us we when "
    "will with yet you your".split()
)


@lru_cache(maxsize=100_000)
def _stem(word: str) -> str:
    from whoosh.lang.porter import stem

    return str(stem(word))


def analyse(text: str) -> list[str]:
    """Whoosh's ``StemmingAnalyzer`` (tokenise, lowercase, drop stopwords and
    one-letter words, Porter-stem), without its per-token objects."""
    stops = STOP_WORDS
    out: list[str] = []
    for token in _TOKEN.findall(text):
        word = token.lower()
        if len(word) >= 2 and word not in stops:
            out.append(_stem(word))
    return out
