"""Offline grouping by the cosine of tf-idf vectors: the buffer's entries into
blocks, a big section into parts, small topics into merge pairs, a new entry
into the section of a topic it shares most words with.

Each is the same judgement (which texts are about one subject) made from the
texts' words alone with fixed thresholds, so the same input always gives the
same groups. Time matters only to the buffer, where consecutive entries of
one sitting usually continue one subject.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memd.engine.base import Background, Block, Item, Section, TopicInfo
from memd.engine.people import owner
from memd.engine.text import Vector, Weights, add_into, cosine, normalised, speakers, terms, vocabulary
from memd.engine.titles import title

GROUP_THRESHOLD = 0.16  # the least cosine that joins an entry to a running group
CONTINUITY_BONUS = 0.12  # consecutive entries usually continue one subject
MERGE_THRESHOLD = 0.15  # the least cosine that makes two small topics one
PLACE_THRESHOLD = 0.12  # the least cosine that places a new entry in an existing section
MIN_GROUP = 3
FRAGMENT_MIN = 0.05  # a fragment joins a group only if they share something
LOW_CONTENT = 3  # fewer distinct content terms than this: a remark, not a memory
SITTING = timedelta(hours=2)


def group(items: list[Item]) -> list[Block]:
    """The buffer's entries as blocks of one subject each, in order of their first entry."""
    if not items:
        return []
    words = vocabulary([item.text for item in items])
    weights = Weights(words)
    vectors = [weights.vector(w) for w in words]
    groups: list[list[int]] = []
    centroids: list[Vector] = []
    owner: list[int] = []
    times = [item.moment for item in items]
    for i, vec in enumerate(vectors):
        best, best_score = -1, GROUP_THRESHOLD
        # The previous entry's group gets a bonus only within one sitting:
        # after a break, the next entry joins a group on its own merits.
        follows = i > 0 and _same_sitting(times[i - 1], times[i])
        for g, centroid in enumerate(centroids):
            bonus = CONTINUITY_BONUS if follows and owner[-1] == g else 0.0
            score = cosine(vec, normalised(centroid)) + bonus
            if score >= best_score:
                best, best_score = g, score
        if best < 0:
            groups.append([])
            centroids.append({})
            best = len(groups) - 1
        groups[best].append(i)
        add_into(centroids[best], vec)
        owner.append(best)
    # Fold fragments into the most similar real group so one stray
    # remark does not become a topic of its own.
    big = [g for g, members in enumerate(groups) if len(members) >= MIN_GROUP]
    if big:
        for g, members in enumerate(groups):
            if len(members) >= MIN_GROUP:
                continue
            score, target = max((cosine(normalised(centroids[g]), normalised(centroids[b])), b) for b in big)
            if score < FRAGMENT_MIN and all(len(set(words[i])) < LOW_CONTENT for i in members):
                # A remark with almost no content ("Bye, Mel!") belongs
                # with the conversation around it.
                neighbours = [owner[i + d] for i in members for d in (-1, 1) if 0 <= i + d < len(owner)]
                target = next((n for n in neighbours if n in big), target)
                score = FRAGMENT_MIN
            if score >= FRAGMENT_MIN:
                groups[target].extend(members)
                groups[g] = []
    blocks = []
    people = speakers(item.text for item in items)  # names a block's things, never one of the people talking
    for members in sorted((sorted(m) for m in groups if m), key=lambda m: m[0]):
        chosen = [items[i] for i in members]
        blocks.append(Block(title(chosen, people), tuple(chosen)))
    return blocks


def split(section: Section, parts: int) -> list[Section]:
    items = list(section.items)
    if parts < 2 or len(items) < 2:
        return [section]
    words = vocabulary([item.text for item in items])
    weights = Weights(words)
    vectors = [weights.vector(w) for w in words]
    # Seeds spread out by farthest-point selection, then a few rounds of
    # k-means on the unit vectors; deterministic for the same input.
    seeds = [0]
    while len(seeds) < min(parts, len(items)):
        seeds.append(min(range(len(items)), key=lambda i: max(cosine(vectors[i], vectors[s]) for s in seeds)))
    centres = [dict(vectors[s]) for s in seeds]
    assignment = [0] * len(items)
    for _ in range(6):
        assignment = [max(range(len(centres)), key=lambda c: cosine(v, centres[c])) for v in vectors]
        for c in range(len(centres)):
            total: Vector = {}
            for v, a in zip(vectors, assignment, strict=True):
                if a == c:
                    add_into(total, v)
            centres[c] = normalised(total) if total else centres[c]
    clusters = [[items[i] for i in range(len(items)) if assignment[i] == c] for c in range(len(centres))]
    clusters = [c for c in clusters if c]
    if len(clusters) < 2:  # no lexical structure: fall back to time order
        half = len(items) // 2
        clusters = [items[:half], items[half:]]
    people = speakers(item.text for item in items)
    return [Section(title(c, people), tuple(c)) for c in clusters]


def merge_groups(topics: list[TopicInfo], limit_tokens: int, background: Background | None = None) -> list[list[str]]:
    small = [t for t in topics if t.tokens < limit_tokens]
    if len(small) < 2:
        return []
    texts = [f"{t.summary}\n{t.text}" for t in small]
    if background is None:
        words = vocabulary(texts)
        weights = Weights(words)
    else:
        words = [terms(text, background.ignore) for text in texts]
        weights = Weights.of(background.frequencies, background.topics)
    vectors = [weights.vector(w) for w in words]
    focus = [background is None or t.id in background.focus for t in small]
    pairs = sorted(
        (
            (cosine(vectors[i], vectors[j]), i, j)
            for i in range(len(small))
            for j in range(i + 1, len(small))
            if focus[i] or focus[j]
        ),
        reverse=True,
    )
    used: set[int] = set()
    groups = []
    owners: dict[int, str | None] = {}  # read only for the pairs close enough to merge

    def whose(n: int) -> str | None:
        if n not in owners:
            owners[n] = owner(small[n].text)
        return owners[n]

    for score, i, j in pairs:
        if score < MERGE_THRESHOLD:
            break
        if i in used or j in used or small[i].tokens + small[j].tokens >= limit_tokens * 2:
            continue
        if whose(i) != whose(j):
            continue  # a person's topic stays theirs however alike another's words are (people.py)
        used.update((i, j))
        keep, absorb = (i, j) if small[i].tokens >= small[j].tokens else (j, i)
        groups.append([small[keep].id, small[absorb].id])
    return groups


def _same_sitting(a: datetime | None, b: datetime | None) -> bool:
    """Unknown times count as one sitting (no evidence of a break)."""
    return a is None or b is None or abs(b - a) <= SITTING


def by_words(sections: list[Section], lists: list[list[Item]], items: list[Item]) -> list[int | None]:
    """For each item, the section whose words (title and entries) it shares
    most, by tf-idf cosine, when at least PLACE_THRESHOLD; else None."""
    texts = ["\n".join([sec.title, *(i.text for i in members)]) for sec, members in zip(sections, lists, strict=True)]
    everything = vocabulary(texts + [item.text for item in items])
    weights = Weights(everything)
    centroids = [weights.vector(w) for w in everything[: len(texts)]]
    targets: list[int | None] = []
    for item_words in everything[len(texts) :]:
        vec = weights.vector(item_words)
        score, target = max(((cosine(vec, c), s) for s, c in enumerate(centroids)), default=(0.0, -1))
        targets.append(target if score >= PLACE_THRESHOLD else None)
    return targets
