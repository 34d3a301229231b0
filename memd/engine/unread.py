"""Notes the model cannot read (made-up words, another language): grouped by the
words they share, a subject only where they share a noun, as the language
pipeline tags it.

The embedding model cannot tell what such a note means, so its words decide
(``clustering.py``, each word weighed by its rarity); but only a noun or a name
makes a subject. "Remember tenbuka 0" and "Remember muost 1" share the verb
alone and are no subject together, however many notes say "Remember";
"Remember tenbuka 7" joins the first in a topic titled "Tenbuka". A word every
note of a batch says ("number" in "..., number 9509") tells none of them apart
and names nothing. A note that shares no noun waits in the month's notes
(``subjects.py``) until one does.
"""

from __future__ import annotations

import re
from collections import Counter

from memd.engine import clustering, language, subjects
from memd.engine.base import Block, Item, Route, TopicInfo
from memd.engine.text import terms


def shared_noun(items: list[Item], ignore: frozenset[str] = frozenset()) -> str | None:
    """The word the ``items`` all say that the pipeline reads as a noun or a name, as
    the first writes it: "tenbuka" for "Remember tenbuka 0" and "Remember tenbuka 7";
    None for "Remember tenbuka 0" and "Remember muost 1"; "東京" for
    "東京の寿司屋が好き" and "東京で寿司を食べた". Without the pipeline: the first
    word they share, as before any noun was read."""
    if not items:
        return None
    common = set.intersection(*(set(terms(item.text)) for item in items)) - ignore
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


def group(items: list[Item]) -> list[Block]:
    """The ``items`` as blocks, grouped by the words they share (``clustering.py``, each
    word weighed by its rarity, so "Remember" said by every note joins none of them),
    then by noun: the notes of a group that say the noun most of them say are a block
    titled by it ("Drika"), the rest of the group again, until no noun is said by
    two; a note left is on its own (alike only in a verb or filler, "Remember"), titled
    later, where it goes."""
    ignore = everywhere(items)
    out: list[Block] = []
    for block in clustering.group(items):
        left = list(block.items)
        while (found := _most_said_noun(left, ignore)) is not None:
            noun, members = found
            out.append(Block(noun[:1].upper() + noun[1:], members))
            left = [item for item in left if item not in members]
        out.extend(Block(item.text[:60], (item,)) for item in left)
    return out


def _most_said_noun(items: list[Item], ignore: frozenset[str]) -> tuple[str, tuple[Item, ...]] | None:
    """The noun most of ``items`` say (at least ``subjects.LEAST`` of them), as they write
    it, and the items that say it; None when no noun is said by that many."""
    if len(items) < subjects.LEAST:
        return None
    readings = language.read([item.text for item in items])
    said = [
        [term for term in dict.fromkeys(terms(item.text)) if term not in ignore and any(term in n for n in r.nouns)]
        for item, r in zip(items, readings, strict=True)
    ]
    counts = Counter(term for found in said for term in found)
    # Of equal counts, the one said first.
    term, count = counts.most_common(1)[0] if counts else ("", 0)
    if count < subjects.LEAST:
        return None
    saying = tuple(item for item, found in zip(items, said, strict=True) if term in found)
    return shared_noun(list(saying), ignore) or term, saying


def everywhere(items: list[Item]) -> frozenset[str]:
    """The words every one of ``items`` says ("number" in "..., number 9509"): they tell
    none of them apart. None for a few notes, which may well share their subject alone."""
    if len(items) <= subjects.LEAST:
        return frozenset()
    return frozenset(set.intersection(*(set(terms(item.text)) for item in items)))


def to_notes(blocks: list[Block], b: int, new_titles: dict[str, str]) -> Route:
    """Block ``b`` to the month's notes of its first note (its title noted in ``new_titles``)."""
    first = blocks[b].items[0]
    title = subjects.notes_title(first.moment, first.signature.time or "")
    new_titles[str(first.seqs)] = title
    return Route(b, None, title)


def routes(
    blocks: list[Block], planned: dict[int, Route], topics: list[TopicInfo], new_titles: dict[str, str]
) -> dict[int, Route]:
    """Where the ``planned`` blocks (of ``group``) go: a block of notes that
    share a noun opens a topic titled by it ("Tenbuka"), or joins the topic its words
    fit if that topic says the noun too; a note of its own goes to the month's notes
    unless a topic fits it by a noun it says. A fit by a word like "remember" is none."""
    out = dict(planned)
    texts = {topic.id: topic.text for topic in topics}
    ignore = everywhere([item for b in planned for item in blocks[b].items])
    for b, route in planned.items():
        items = list(blocks[b].items)
        # The month's notes saying the noun too are no subject's topic: the notes open theirs.
        held = Item(items[0].signature, texts.get(route.topic or "", ""))
        if route.topic is not None and not subjects.is_notes_topic(route.topic) and shared_noun([*items, held], ignore):
            continue
        # A block another way made (a model's) is a subject only where its notes say a noun together too.
        if len(items) < subjects.LEAST or _most_said_noun(items, ignore) is None:
            out[b] = to_notes(blocks, b, new_titles)
            continue
        # Notes alike in their words are a subject, titled as ``group`` titled them.
        out[b] = Route(b, None, blocks[b].title)
        new_titles[str(items[0].seqs)] = blocks[b].title
    return out
