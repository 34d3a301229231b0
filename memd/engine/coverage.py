"""Offline routing: which topic covers a block's words best, BM25-style.

Each of the block's words counts by its rarity, saturating with its
frequency in the topic and discounted for topics longer than average: a big
topic knows many words without being about all of them. A fit is the share
of the block's word weight a topic covers (the other offline decisions are
cosines of tf-idf vectors). With a ``Background`` the scores over a
shortlist equal those over every topic (shortlist.py relies on it), and
each route carries the runner-up's fit so gating.py can tell a clear
decision from a close one.
"""

from __future__ import annotations

from collections import Counter

from memd.engine.base import Background, Block, Route, Scored, TopicInfo
from memd.engine.text import Weights, terms, vocabulary

ROUTE_THRESHOLD = 0.08  # the least fit that joins a block to an existing topic
CANDIDATES = 8  # topics a scored route names as the closest ones


def scored_routes(blocks: list[Block], topics: list[TopicInfo], background: Background | None = None) -> list[Scored]:
    """Each block's route with its fit and the runner-up's. With
    ``background``, ``topics`` is a shortlist holding every topic among the
    best CANDIDATES for some block (``shortlist.route_shortlist``) and the
    result is the same as with every topic."""
    texts = ["\n".join(item.text for item in block.items) for block in blocks]
    texts += [f"{topic.summary}\n{topic.text}" for topic in topics]
    if background is None:
        everything = vocabulary(texts)
        weights = Weights(everything)
    else:
        everything = [terms(text, background.ignore) for text in texts]
        frequencies = Counter(background.frequencies)
        for found in everything[: len(blocks)]:
            frequencies.update(set(found))
        weights = Weights.of(frequencies, len(blocks) + background.topics)
    block_words = [set(w) for w in everything[: len(blocks)]]
    topic_counts = [Counter(w) for w in everything[len(blocks) :]]
    if background is None:
        average = sum(sum(c.values()) for c in topic_counts) / len(topic_counts) if topic_counts else 1.0
    else:
        average = background.length / background.topics if background.topics else 1.0
    others = sorted(background.ids, reverse=True) if background is not None else []
    sizes = [sum(c.values()) for c in topic_counts]
    holders: dict[str, list[int]] = {}  # which topics hold a term: the others fit 0
    for n, counts in enumerate(topic_counts):
        for term in counts:
            holders.setdefault(term, []).append(n)
    planned: list[tuple[str, Counter[str]]] = []  # new topics opened by this plan
    routes = []
    for i, words in enumerate(block_words):
        weighted = [(t, weights.idf(t)) for t in words]
        shared: dict[int, list[tuple[float, int]]] = {}  # per topic, its words of the block, in the block's order
        for term, idf in weighted:
            for n in holders.get(term, ()):
                shared.setdefault(n, []).append((idf, topic_counts[n][term]))
        scores = [0.0] * len(topics)
        total = sum(idf for _, idf in weighted)
        if total:
            for n, held in shared.items():
                scores[n] = _covered(held, total, sizes[n], average)
        fits = sorted(zip(scores, [t.id for t in topics], strict=True), reverse=True)
        if background is not None:
            fits = _with_the_rest(fits, others)
        best = fits[0] if fits else (0.0, "")
        second = fits[1][0] if len(fits) > 1 else 0.0
        fresh = max(
            ((_fit_weighted(weighted, counts, sum(counts.values()), average), title) for title, counts in planned),
            default=(0.0, ""),
        )
        if best[0] >= ROUTE_THRESHOLD and best[0] >= fresh[0]:
            route = Route(i, best[1])
        elif fresh[0] >= ROUTE_THRESHOLD:
            route = Route(i, None, fresh[1])
        else:
            planned.append((blocks[i].title, Counter(everything[i])))
            route = Route(i, None, blocks[i].title)
        routes.append(Scored(route, best[0], second, tuple(t for _, t in fits[:CANDIDATES])))
    return routes


def _with_the_rest(fits: list[tuple[float, str]], others: list[str]) -> list[tuple[float, str]]:
    """A shortlist's fits (best first) as the head of every topic's ranking:
    a topic off the shortlist fits 0, and ties fall in reverse id order."""
    ranked = [fit for fit in fits if fit[0] > 0]
    if len(ranked) >= CANDIDATES:
        return ranked
    listed = {topic_id for _, topic_id in ranked}
    for topic_id in others:
        if len(ranked) >= CANDIDATES:
            break
        if topic_id not in listed:
            ranked.append((0.0, topic_id))
    return ranked


def _fit_weighted(weighted: list[tuple[str, float]], counts: Counter[str], size: int, average: float) -> float:
    """Share of the block's idf mass (its words with their idf) a topic covers,
    each word saturating with its count in the topic (k1 = 1.2) and discounted
    by topic length (``size`` terms; b = 0.75)."""
    total = sum(idf for _, idf in weighted)
    if not total:
        return 0.0
    return _covered([(idf, c) for t, idf in weighted if (c := counts.get(t, 0))], total, size, average)


def _covered(found: list[tuple[float, int]], total: float, size: int, average: float) -> float:
    """``_fit_weighted`` from the words a topic holds (idf, count), in the block's order."""
    length = size / (average or 1.0)
    norm = 1.2 * (0.25 + 0.75 * length)
    return sum(idf * c * 2.2 / (c + norm) for idf, c in found) / (2.2 * total)
