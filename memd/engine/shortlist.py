"""Shortlists: the few topics routing or merging can be about, found through
a ``TopicIndex`` instead of by reading every topic.

The offline engine scores a block against a topic by a BM25-style fit, and
two small topics by the cosine of their tf-idf vectors, with word weights
taken over every topic. A shortlist holds every topic that can matter (the
best ``CANDIDATES`` fits of each block; every small topic whose cosine with
a changed one can reach ``MERGE_THRESHOLD``), and ``Background`` carries the
vault-wide counts, so the engine's answer over the shortlist is the answer it
would give over every topic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from memd.engine.base import Background, Block, TopicIndex
from memd.engine.clustering import MERGE_THRESHOLD
from memd.engine.coverage import CANDIDATES
from memd.engine.people import speaker_of
from memd.engine.text import Weights, slugify, speakers, terms

_TIES = 1e-9  # fits this close to the last one kept may be ties summed in another order
# How close a small topic must come to a changed one to be a merge candidate:
# the offline engine merges from MERGE_THRESHOLD, a model is shown pairs from
# half that (payloads.with_partner).
NEAR = MERGE_THRESHOLD / 2


def route_shortlist(blocks: list[Block], index: TopicIndex) -> tuple[list[str], Background]:
    """The topics among the best ``CANDIDATES`` fits of any block, and the background to score them with."""
    texts = ["\n".join(item.text for item in block.items) for block in blocks]
    ignore = speakers(texts) | index.speakers()
    block_terms = [terms(text, ignore) for text in texts]
    wanted = {term for words in block_terms for term in words}
    frequencies = index.frequencies(wanted, ignore)
    count, length = index.totals(ignore)
    background = Background(count, length, frequencies, ignore, tuple(index.ids()))
    if not count or not blocks:
        return [], background
    everywhere = Counter(frequencies)
    for words in block_terms:
        everywhere.update(set(words))
    weights = Weights.of(everywhere, len(blocks) + count)
    queries: list[Mapping[str, float]] = []
    for words in block_terms:
        unique = set(words)
        total = sum(weights.idf(t) for t in unique)  # the fit's denominator (coverage._fit_weighted)
        shared = [t for t in unique if t in frequencies and weights.idf(t) > 0]
        queries.append({t: weights.idf(t) / (2.2 * total) for t in shared} if total else {})
    chosen: dict[str, None] = {}
    for found in index.ranked(queries, length / count, ignore, CANDIDATES, _TIES):
        chosen.update((topic_id, None) for _, topic_id in found)
    # A transcript's turns go to their speaker's topic (people.py), however few words they share with it.
    for block in blocks:
        if speaker_of(block) is not None:
            chosen.update((topic_id, None) for topic_id in index.spoken_in(speakers(i.text for i in block.items)))
    # A note goes to the topic titled with a name it says (subjects.py), however few words they
    # share: "Garden: the apple tree needs pruning" reads "Garden:" as a label, not a word.
    ids = set(index.ids())
    for block in blocks:
        if speaker_of(block) is None:
            chosen.update((topic_id, None) for topic_id in _titled_by_names(block, ids))
    return list(chosen), background


def _titled_by_names(block: Block, ids: set[str]) -> list[str]:
    """The topics of ``ids`` whose file name is a capitalised word, or run of them, of ``block``."""
    found: dict[str, None] = {}
    for item in block.items:
        for run in _RUN.findall(item.text):
            words = run.split()
            for candidate in (run, *words) if len(words) > 1 else (run,):
                topic_id = slugify(candidate)
                if topic_id in ids:
                    found[topic_id] = None
    return list(found)


_RUN = re.compile(r"(?<![\w'])[A-Z][\w-]*(?:[ ]+[A-Z][\w-]*)*")


def merge_shortlist(
    index: TopicIndex, focus: list[str], limit: int, *, wide: bool = False
) -> tuple[list[str], Background]:
    """The small topics of ``focus`` and every small topic that may be close
    enough to one of them to merge, in the index's order, with the background
    (word counts over every small topic) to compare them with. ``wide``: as
    close as a model is shown (``NEAR``), not only as the offline rules merge."""
    ignore = index.speakers(below=limit)
    count, length = index.totals(ignore, below=limit)
    changed = [info for info in index.infos(focus) if info.tokens < limit]
    if not changed:
        return [], Background(count, length, {}, ignore)
    focus_terms = [terms(f"{info.summary}\n{info.text}", ignore) for info in changed]
    frequencies = index.frequencies({t for words in focus_terms for t in words}, ignore, below=limit)
    weights = Weights.of(frequencies, count)
    focus_ids = {info.id for info in changed}
    found = set(focus_ids)
    for words in focus_terms:
        vector = weights.vector(words)
        floor = NEAR if wide else MERGE_THRESHOLD
        found |= index.near(vector, {t: weights.idf(t) for t in vector}, ignore, limit, floor)
    # Every term of every shortlisted topic: the vectors' lengths depend on them all.
    more = {t for info in index.infos(found - focus_ids) for t in terms(f"{info.summary}\n{info.text}", ignore)}
    frequencies.update(index.frequencies(more - frequencies.keys(), ignore, below=limit))
    ordered = [topic_id for topic_id in index.ids() if topic_id in found]
    return ordered, Background(count, length, frequencies, ignore, focus=frozenset(focus_ids))
