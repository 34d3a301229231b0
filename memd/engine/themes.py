"""Grouping by what entries are about: their subject (whom they are about) and
their meaning (sentence vectors, ``memd.index.meaning``), with the words they share.

Used by the offline engine when the embedding model is there; ``clustering.py``
and ``coverage.py`` judge by words alone otherwise.

- **Subject.** A transcript turn ("Melanie: I signed up for a pottery
  class") is about the person saying it: what people tell in a conversation is
  mostly their own life. Turns of different speakers never share a block, and
  a block joins only a topic whose turns are mostly its speaker's. Entries
  without a speaker label have no subject and go by meaning and names alone.
- **Names.** People and named things in the text ("Priya", "Atlas") pull
  entries that name the same ones together, so facts about one person or one
  project gather even when the rest of their words differ.
- **Meaning and words.** An entry's features are its sentence vector, its
  tf-idf vector and its names, each of unit length and weighted, so the dot
  product of two entries is a weighted sum of three cosines; a group's
  similarity to another is the mean over their pairs (average linkage), found
  from the groups' summed features.

Deterministic: the same entries give the same groups (the model is too).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from memd.engine.base import Block, Item, Route, Section, TopicInfo
from memd.engine.text import STOPWORDS, Vector, Weights, cosine, speaker, speakers, terms, unlabelled, vocabulary

MEANING_WEIGHT = 0.6
WORDS_WEIGHT = 0.25
NAMES_WEIGHT = 0.15
GROUP_LINK = 0.30  # the least mean similarity that makes two groups of the buffer one
NOTES_LINK = 0.20  # ... of the month's notes (subjects.py), read together across runs
STANDS_OUT = 0.15  # ... and how much more alike than the month's notes on average
ROUTE_LINK = 0.25  # the least cosine of meaning that sends a block to an existing topic
FEW = 3  # blocks of fewer entries never open a topic when their subject has one
SECTION_LINK = 0.8  # the least cosine of meaning that puts a block into an existing section
SUBJECT_SHARE = 0.5  # a topic is someone's when at least this share of its labelled turns are theirs
TOPIC_LINES = 40  # entries of a topic read for its meaning (its latest ones: what it is about now)

_NAME = re.compile(r"(?<![\w'])([A-Z][a-z]+(?:[ -][A-Z][a-z]+)*)")
_SENTENCE_END = frozenset('.!?:;"')


def names(text: str) -> frozenset[str]:
    """Capitalised words and runs of them that are not the first word of a
    sentence, nor a function word: people, places, projects."""
    body = unlabelled(text)
    found = set()
    for match in _NAME.finditer(body):
        word = match.group(1)
        if _opens_sentence(body, match.start()) or word.lower() in STOPWORDS or word == "I":
            continue
        found.add(word.lower())
    return frozenset(found)


def _opens_sentence(body: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence: first in the text, first
    on its line, or after . ! ? : ; or a quote and white space. Judged from the
    characters just before it (looking back over the whole text for each
    capitalised word made a long topic quadratic: 3 s for 140 KB)."""
    if start == 0 or body[start - 1] == "\n":
        return True
    back = start
    while back > 0 and body[back - 1].isspace():
        back -= 1
    return 0 < back < start and body[back - 1] in _SENTENCE_END


def features(items: list[Item], vectors: Any) -> Any:
    """Each entry's weighted features (a row of unit-length parts), see the module doc."""
    import numpy as np

    texts = [item.text for item in items]
    words = vocabulary(texts)
    weights = Weights(words)
    lexical = [weights.vector(w) for w in words]
    vocab = {t: i for i, t in enumerate(sorted({t for vec in lexical for t in vec}))}
    named = [names(text) for text in texts]
    name_index = {n: i for i, n in enumerate(sorted({n for found in named for n in found}))}
    lex = np.zeros((len(items), len(vocab)), dtype=np.float32)
    for row, vec in enumerate(lexical):
        for term, value in vec.items():
            lex[row, vocab[term]] = value
    nam = np.zeros((len(items), len(name_index)), dtype=np.float32)
    for row, found in enumerate(named):
        for name in found:
            nam[row, name_index[name]] = 1.0 / np.sqrt(len(found))
    return np.hstack(
        [
            np.sqrt(MEANING_WEIGHT) * np.asarray(vectors, dtype=np.float32),
            np.sqrt(WORDS_WEIGHT) * lex,
            np.sqrt(NAMES_WEIGHT) * nam,
        ]
    )


def clusters(rows: Any, link: float) -> list[list[int]]:
    """Average-linkage agglomerative clustering of feature rows: the two
    groups of highest mean pairwise similarity join while that is >= ``link``
    (of equal pairs, the first in row-major order of the similarity matrix)."""
    import numpy as np

    n = len(rows)
    if n == 0:
        return []
    members: list[list[int]] = [[i] for i in range(n)]
    vectors = np.array(rows, dtype=np.float64)
    # The sum of the pairwise similarities between two groups' members: a join
    # adds two rows of it, where reading the joined group's features again cost
    # n times their length (the mean similarity divides it by both sizes).
    dots = vectors @ vectors.T
    del vectors
    np.fill_diagonal(dots, -np.inf)
    sizes = np.ones(n)
    alive = np.ones(n, dtype=bool)
    # Each row's best partner is kept, so a join looks at n rows, not at the
    # n-by-n matrix: thousands of entries cluster in O(n^2), not O(n^3).
    best = np.argmax(dots, axis=1)
    top = dots[np.arange(n), best]
    while alive.sum() > 1:
        a = int(np.argmax(top))
        b = int(best[a])
        if top[a] < link:
            break
        a, b = min(a, b), max(a, b)
        members[a] += members[b]
        members[b] = []
        sizes[a] += sizes[b]
        alive[b] = False
        joined = dots[a] + dots[b]  # -inf where either was: a, b and the groups gone
        dots[b, :] = -np.inf
        dots[:, b] = -np.inf
        dots[a, :] = joined
        dots[:, a] = joined
        row = joined / (sizes * sizes[a])
        # Rows whose best partner was a or b look again. For the others a's new value is a mean of
        # two no higher than their best, so it can only tie or pass it by rounding: compared all the same.
        stale = alive & ((best == a) | (best == b))
        gains = alive & ~stale & ((row > top) | ((row == top) & (a < best)))
        best[gains], top[gains] = a, row[gains]
        for i in np.flatnonzero(stale):
            mean = dots[i] / (sizes * sizes[i])
            best[i] = np.argmax(mean)
            top[i] = mean[best[i]]
        best[a], top[a] = int(np.argmax(row)), row.max()
        top[b] = -np.inf
    return [sorted(m) for m in members if m]


def group(
    items: list[Item], vectors: Any, title: Any, link: float = GROUP_LINK, *, above_mean: float | None = None
) -> list[Block]:
    """The buffer's entries as blocks, each of one subject and one theme, in
    order of their first entry. ``title`` names a block's items; ``link``: the
    least mean similarity of two groups joined; ``above_mean``: join only groups
    at least this much more alike than the items are on average (notes cut from
    one template, "Remember <word> <n>", are all alike: none of them is a theme)."""
    import numpy as np

    rows = features(items, vectors)
    if above_mean is not None and len(items) > 1:
        dots = rows @ rows.T
        mean = (float(dots.sum()) - float(np.trace(dots))) / (len(items) * (len(items) - 1))
        link = max(link, mean + above_mean)
    by_subject: dict[str | None, list[int]] = {}
    for i, item in enumerate(items):
        by_subject.setdefault(speaker(item.text), []).append(i)
    found: list[list[int]] = []
    for members in by_subject.values():
        found.extend([members[j] for j in cluster] for cluster in clusters(rows[members], link))
    people = speakers(item.text for item in items)
    return [Block(title([items[i] for i in m], people), tuple(items[i] for i in m)) for m in sorted(found, key=min)]


def topic_subject(text: str, share: float = SUBJECT_SHARE) -> str | None:
    """Whose a topic is: the speaker of at least ``share`` of its labelled lines."""
    said = Counter(s for line in text.splitlines() if (s := speaker(line)))
    if not said:
        return None
    name, count = said.most_common(1)[0]
    return name if count >= share * sum(said.values()) else None


def routes(
    blocks: list[Block],
    topics: list[TopicInfo],
    meaning: Any,
    title: Any = None,
    people: frozenset[str] = frozenset(),
) -> list[Route]:
    """Each block to the existing or newly planned topic of its subject that is
    closest in meaning (its entries' mean vector), when close enough; else to a new topic."""
    import numpy as np

    subjects = [topic_subject(t.text) for t in topics]
    centres = [_centre(meaning, t.text.splitlines()) for t in topics]
    block_words, topic_words = _word_vectors(blocks, topics)
    planned: list[tuple[str, str | None, Any, int]] = []  # title, subject, summed vector, count
    out = []
    for b, block in enumerate(blocks):
        vectors = meaning.vectors([item.text for item in block.items])
        mean = vectors.sum(axis=0)
        centre = mean / (np.linalg.norm(mean) or 1.0)
        own = _block_subject(block)
        # A block of one or two entries is a remark on a subject, not a subject
        # of its own: it joins the closest topic of its subject however far.
        # Notes have no subject (no speaker): however short, they join only a
        # topic close enough, existing or planned, or a lone note about the
        # boiler would land in the first topic this run opened.
        best, best_score = None, ROUTE_LINK if len(block.items) >= FEW or own is None else -1.0
        for topic, who, c, words in zip(topics, subjects, centres, topic_words, strict=True):
            if c is None or (own is not None and who != own):
                continue
            score = float(c @ centre)
            if own is None:
                # A note goes by its words as well as its meaning: to MiniLM "the Atlas
                # dry run is booked for Thursday" is about running (0.42 against 0.27).
                score += cosine(block_words[b], words)
            if score >= best_score:
                best, best_score = topic.id, score
        fresh, fresh_score = -1, best_score
        for p, (_, who, summed, _) in enumerate(planned):
            if own is not None and who != own:
                continue
            score = float(summed @ centre / (np.linalg.norm(summed) or 1.0))
            if score > fresh_score:
                fresh, fresh_score = p, score
        if fresh >= 0:
            name, who, summed, count = planned[fresh]
            planned[fresh] = (name, who, summed + mean, count + len(block.items))
            out.append(Route(b, None, name))
        elif best is not None:
            out.append(Route(b, best))
        else:
            planned.append((block.title, own, mean, len(block.items)))
            out.append(Route(b, None, block.title))
    if title is None:
        return out
    # A new topic is named after everything planned into it, not only the
    # block that opened it (often a few entries).
    members: dict[str, list[Item]] = {}
    for route in out:
        if route.topic is None and route.new_title is not None:
            members.setdefault(route.new_title, []).extend(blocks[route.block].items)
    named = {first: title(items, people) for first, items in members.items()}
    return [Route(r.block, None, named[r.new_title]) if r.topic is None and r.new_title in named else r for r in out]


def _word_vectors(blocks: list[Block], topics: list[TopicInfo]) -> tuple[list[Vector], list[Vector]]:
    """Tf-idf vectors of the blocks of notes (empty for a speaker's) and of the
    topics, with word weights over the topics and the buffer taken as one text:
    a word every note of the buffer shares ("Atlas", twelve notes on its launch)
    still tells the topics apart."""
    notes = [_block_subject(block) is None for block in blocks]
    if not any(notes) or not topics:
        return [{} for _ in blocks], [{} for _ in topics]
    texts = ["\n".join(item.text for item in block.items) for block in blocks]
    ignore = speakers([*texts, *(t.text for t in topics)])
    block_terms = [terms(text, ignore) if note else [] for text, note in zip(texts, notes, strict=True)]
    topic_terms = [terms(f"{t.summary}\n{t.text}", ignore) for t in topics]
    weights = Weights([*topic_terms, sorted({term for found in block_terms for term in found})])
    return [weights.vector(found) for found in block_terms], [weights.vector(found) for found in topic_terms]


def place(sections: list[list[Item]], items: list[Item], meaning: Any) -> int | None:
    """The section (its items) closest in meaning to ``items``, if one is close
    enough (SECTION_LINK) and of their subject; None: they make a section of their own."""
    import numpy as np

    total = meaning.vectors([item.text for item in items]).sum(axis=0)
    centre = total / (np.linalg.norm(total) or 1.0)
    own = _block_subject(Block("", tuple(items)))
    best, best_score = None, SECTION_LINK
    for s, members in enumerate(sections):
        if not members or _block_subject(Block("", tuple(members))) != own:
            continue
        summed = meaning.vectors([item.text for item in members]).sum(axis=0)
        score = float(summed @ centre / (np.linalg.norm(summed) or 1.0))
        if score >= best_score:
            best, best_score = s, score
    return best


def split(section: Section, parts: int, meaning: Any, title: Any | None) -> list[Section]:
    """A section cut into ``parts`` by meaning and subject (clusters of its
    entries' features, joined until there are ``parts``); ``title`` names each
    piece (None: left empty, for the caller to name)."""
    items = list(section.items)
    if parts < 2 or len(items) < 2:
        return [section]
    rows = features(items, meaning.vectors([item.text for item in items]))
    found = [[i] for i in range(len(items))] if len(items) <= parts else _cut(rows, parts)
    if len(found) < 2:
        half = len(items) // 2
        found = [list(range(half)), list(range(half, len(items)))]
    pieces = [tuple(items[i] for i in m) for m in sorted(found, key=min)]
    return [Section(title(list(piece)) if title else "", piece) for piece in pieces]


def arrange(sections: list[Section], sizes: list[int], target: int, meaning: Any) -> list[int]:
    """Sections in pieces of about ``target`` tokens: two seeds far apart in
    meaning, each piece grown from its seed by the section closest to it,
    taking turns while both have room (sections without entries stay after
    the one before them)."""
    import numpy as np

    centres: list[Any] = [None] * len(sections)
    texts = [item.text for section in sections for item in section.items]
    if texts:
        vectors = meaning.vectors(texts)
        at = 0
        for s, section in enumerate(sections):
            if section.items:
                total = vectors[at : at + len(section.items)].sum(axis=0)
                centres[s] = total / (np.linalg.norm(total) or 1.0)
                at += len(section.items)
    left = [s for s in range(len(sections)) if centres[s] is not None]
    followers: dict[int, list[int]] = {}
    lead = -1
    for s in range(len(sections)):
        if centres[s] is None:
            followers.setdefault(lead, []).append(s)
        else:
            lead = s
    order: list[int] = list(followers.get(-1, []))
    piece: Any = None
    size = 0
    while left:
        if piece is None or size >= target:
            # A new piece starts from the section least like what came before.
            chosen = left[0] if piece is None else min(left, key=lambda s: (float(centres[s] @ piece), s))
            piece, size = np.zeros_like(centres[chosen]), 0
        else:
            chosen = max(left, key=lambda s: (float(centres[s] @ piece), -s))
        left.remove(chosen)
        order.append(chosen)
        order.extend(followers.get(chosen, []))
        piece = piece + centres[chosen]
        size += sizes[chosen]
    return order


def _cut(rows: Any, parts: int) -> list[list[int]]:
    """Agglomerative clustering down to ``parts`` groups, then the smallest
    leftovers joined to their closest group."""
    found = clusters(rows, 0.0)
    while len(found) > parts:
        sums = [rows[m].sum(axis=0) for m in found]
        smallest = min(range(len(found)), key=lambda g: (len(found[g]), found[g][0]))
        scores = [
            (float(sums[smallest] @ sums[g]) / (len(found[smallest]) * len(found[g])), g)
            for g in range(len(found))
            if g != smallest
        ]
        _, target = max(scores)
        found[target] = sorted(found[target] + found[smallest])
        del found[smallest]
    return found


def _block_subject(block: Block) -> str | None:
    said = Counter(speaker(item.text) for item in block.items)
    name, _ = said.most_common(1)[0]
    return name


def _centre(meaning: Any, lines: list[str]) -> Any | None:
    import numpy as np

    # Headings are a word or two; a topic of notes that short is read whole.
    longer = [line for line in lines if len(line.split()) > 2]
    lines = (longer or [line for line in lines if line.strip()])[-TOPIC_LINES:]
    if not lines:
        return None
    total = meaning.vectors(lines).sum(axis=0)
    return total / (np.linalg.norm(total) or 1.0)
