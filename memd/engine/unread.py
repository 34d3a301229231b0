"""Notes the model cannot read (made-up words, another language): filed by the
nouns they share, as the language pipeline tags them.

The embedding model cannot tell what such a note means, so its words decide;
but only a noun or a name makes a subject. "Remember tenbuka 0" and "Remember
muost 1" share the verb alone and are no subject together, however many notes
say "Remember"; "Remember tenbuka 7" joins the first in a topic titled
"Tenbuka". A note that shares no noun waits in the month's notes
(``subjects.py``) until one does.
"""

from __future__ import annotations

import re
from collections import Counter

from memd.engine import language, subjects
from memd.engine.base import Block, Item, Route, TopicInfo
from memd.engine.text import terms


def shared_noun(items: list[Item]) -> str | None:
    """The word the ``items`` all say that the pipeline reads as a noun or a name, as
    the first writes it: "tenbuka" for "Remember tenbuka 0" and "Remember tenbuka 7";
    None for "Remember tenbuka 0" and "Remember muost 1"; "東京" for
    "東京の寿司屋が好き" and "東京で寿司を食べた". Without the pipeline: the first
    word they share, as before any noun was read."""
    if not items:
        return None
    common = set.intersection(*(set(terms(item.text)) for item in items))
    said = terms(items[0].text)
    if not language.available():
        return next((term for term in said if term in common), None)
    nouns = {noun for reading in language.read([item.text for item in items]) for noun in reading.nouns}
    # A term inside a noun, not only equal to one: a script written without spaces is one token to the pipeline.
    term = next((term for term in said if term in common and any(term in noun for noun in nouns)), None)
    if term is None:
        return None
    first = items[0].text
    written = re.search(re.escape(term), first, re.IGNORECASE)
    if written is None:
        return term
    # As far as every note says it on: "東" is a term, "東京" what they share.
    start, end = written.span()
    texts = [item.text.lower() for item in items]
    while end < len(first) and first[end].isalnum() and all(first[start : end + 1].lower() in t for t in texts):
        end += 1
    return first[start:end]


def by_shared_noun(items: list[Item]) -> list[Block]:
    """The ``items`` as blocks: those that say one noun (the one most of them say)
    together, titled by it, and each other note on its own."""
    readings = language.read([item.text for item in items])
    said = [
        [term for term in dict.fromkeys(terms(item.text)) if any(term in noun for noun in reading.nouns)]
        for item, reading in zip(items, readings, strict=True)
    ]
    counts = Counter(term for found in said for term in found)
    grouped: dict[str, list[Item]] = {}
    alone: list[Block] = []
    for item, found in zip(items, said, strict=True):
        shared = [term for term in found if counts[term] >= subjects.LEAST]
        if not shared:
            alone.append(Block(item.text[:60], (item,)))
            continue
        grouped.setdefault(max(shared, key=lambda term: counts[term]), []).append(item)
    blocks = [Block(shared_noun(members) or members[0].text[:60], tuple(members)) for members in grouped.values()]
    return blocks + alone


def to_notes(blocks: list[Block], b: int, new_titles: dict[str, str]) -> Route:
    """Block ``b`` to the month's notes of its first note (its title noted in ``new_titles``)."""
    first = blocks[b].items[0]
    title = subjects.notes_title(first.moment, first.signature.time or "")
    new_titles[str(first.seqs)] = title
    return Route(b, None, title)


def routes(
    blocks: list[Block], planned: dict[int, Route], topics: list[TopicInfo], new_titles: dict[str, str]
) -> dict[int, Route]:
    """Where the ``planned`` blocks (of ``by_shared_noun``) go: a block of notes that
    share a noun opens a topic titled by it ("Tenbuka"), or joins the topic its words
    fit if that topic says the noun too; a note of its own goes to the month's notes
    unless a topic fits it by a noun it says. A fit by a word like "remember" is none."""
    out = dict(planned)
    texts = {topic.id: topic.text for topic in topics}
    for b, route in planned.items():
        items = list(blocks[b].items)
        # The month's notes saying the noun too are no subject's topic: the notes open theirs.
        held = Item(items[0].signature, texts.get(route.topic or "", ""))
        if route.topic is not None and not subjects.is_notes_topic(route.topic) and shared_noun([*items, held]):
            continue
        noun = shared_noun(items) if len(items) >= subjects.LEAST else None
        if noun is None:
            out[b] = to_notes(blocks, b, new_titles)
            continue
        out[b] = Route(b, None, noun[:1].upper() + noun[1:])
        new_titles[str(items[0].seqs)] = out[b].new_title or ""
    return out
