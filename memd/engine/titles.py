"""Names a person would write: the offline titles of blocks and sections
(topic summaries are ``summaries.py``).

A title names the things the entries talk about most: the heaviest recurring
nouns, as people wrote them ("Pottery and painting"; two they mostly say
together are one thing, "Atlas cut-over"); whom they are about (the speaker
of a transcript's turns) is the topic's tag. A word counts as a noun where
people put one: after an article, a possessive or a number ("a pottery
class", "my kids"), or named ("Atlas").
Words that say nothing about the subject never name it: function words and
chatter (``text.STOPWORDS``), the words of photo captions ("shares a photo
of…") and reactions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from typing import Any

from memd.core.redact import MARK
from memd.engine.base import Item
from memd.engine.text import (
    STOPWORDS,
    Vector,
    Weights,
    add_into,
    speaker,
    speakers,
    terms,
    unlabelled,
)

# Words of photo captions and reactions, and words too vague to name
# anything ("day", "things"): in a title they say how something was said,
# never what it is about.
UNTITLED = frozenset(
    """
    photo photos pic pics picture pictures image images snap snapshot selfie shares shared share sharing
    caption screenshot video agree appreciate appreciated thank love loved awesome inspiring inspired
    proud congrats congratulations wish wishes hear heard glad enjoy enjoyed enjoying seem seems seemed
    cheers dear yay aww ooh ah two three four five six seven eight nine ten
    special tough hard big little small huge real whole true sweet kind
    day days time times life moment moments thing things stuff lot bit way loving
    someone something anything everything nothing everyone anyone ones next later right long
    """.split()
) | frozenset(
    # When, not what: "October and Mum" is about Mum, "Vegetarian and weekends" about eating.
    """
    january february march april june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays
    saturdays sundays weekend weekends week weeks weekday weekdays month months year years morning mornings
    afternoon afternoons evening evenings night nights tonight today tomorrow yesterday
    """.split()
)
_DETERMINER = frozenset(
    "a an the my your his her our their its this that these those some any another each every first new old".split()
)
# Said to someone, not about them: "Thanks, Mel!", "Wow, Caroline, ...".
VOCATIVE = re.compile(
    r"(?:^|[,.!?]\s*|\b(?:hey|hi|thanks|thank you|wow|yes|yeah|oh|aww)\s+)([A-Z][\w'-]*)(?=\s*[,!?.])"
)
WORDS = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")  # "cut-over" is one word
CAPTION = re.compile(r"\s*\[(?:shares|shared|sends|sent) (?:a |an )?[^\]]*\]")
_CLAUSE = re.compile(r"[.,;:!?()\u2014\u2013\"]|\s-\s")
_TIME_WORDS = frozenset(
    "sometime someday soon again together today tonight tomorrow yesterday lately already anymore".split()
)
# Pasts of irregular verbs, but for those that are as often a thing ("saw", "felt") or a side ("left").
IRREGULAR_PAST = frozenset(
    """
    ate bought brought caught taught thought fought sought went came gave took made told said got drank drove
    flew grew knew drew threw wore tore swam sang rang sat stood understood slept met sent spent built sold
    paid began broke chose forgot froze hid rode rose shook spoke stole woke wrote fell held kept lent lost
    meant won found heard ran dug fed led bit hung lay lit sank spun struck stuck swept swore
    """.split()
)
TITLE_WORDS = 64  # the most words a title of notes weighs by meaning
TITLE_TEXTS = 64  # the most notes whose mean they are weighed against


def title(items: list[Item], people: frozenset[str] = frozenset(), meaning: Any = None) -> str:
    """``Noun and noun``: the things the items talk about most ("Pottery and
    painting", "Atlas cut-over"); whom they are about when no noun stands
    out. ``people``: names (lowercase) of everyone speaking around these items,
    which never name a topic's things.

    The subject ("Melanie") is left out of the title on purpose: every section
    of one person's topics would carry it, and search reads titles (recall on
    the dev slice is higher without it: docs/benchmarks.md). It is a tag
    instead (``related.py``).

    ``meaning`` (the embedding model, ``memd.index.meaning``): notes, entries
    with no speaker, are named by the words closest in meaning to all of them
    (``salient``)."""
    if not items:
        return "Notes"
    found = salient(items, 2, people, meaning if meaning is not None and _notes(items, meaning) else None)
    if found:
        text = _compound(found, [item.text for item in items]) or " and ".join(found)
        return text[0].upper() + text[1:]
    who = _subject(items)
    if who:
        return who
    # Text in a script without spaces (Chinese, Japanese) has no keyword
    # of three letters: its own first words name it better than "Notes".
    first = " ".join(items[0].text.split()[:5])[:24]
    return first if any(c.isalpha() and not c.isascii() for c in first) else "Notes"


def _compound(found: list[str], texts: list[str]) -> str | None:
    """Two nouns the texts mostly say together, as one thing ("living room", "role
    model"), where "Room and living" would read as two. The same words, so a
    title that search reads matches as it did. Said together means inside one
    clause, and the second word a thing: not a verb's form ("hard work *paying*
    off", "a blast *making*") or a word of time ("the trails *sometime*")."""
    if len(found) != 2:
        return None
    lowered = [word.lower() for word in found]
    # Said in found's order (0) or the other way round (1).
    phrases = [f" {lowered[0]} {lowered[1]} ", f" {lowered[1]} {lowered[0]} "]
    together = [0, 0]
    both = 0
    for text in texts:
        clauses = _clauses(text)
        if not all(any(f" {word} " in clause for clause in clauses) for word in lowered):
            continue
        both += 1
        for k, phrase in enumerate(phrases):
            together[k] += any(phrase in clause for clause in clauses)
    k = 0 if together[0] >= together[1] else 1
    head = lowered[1 - k]
    if together[k] * 2 <= both or head.endswith(("ing", "ed")) or head in _TIME_WORDS:
        return None
    return f"{found[k]} {found[1 - k]}"


@lru_cache(maxsize=2048)  # as _words_of: a big section is named again and again as it is halved
def _clauses(text: str) -> tuple[str, ...]:
    """The clauses of ``text``, each its lowercase words between spaces (" the living room ")."""
    return tuple(
        " " + " ".join(word.lower().removesuffix("'s") for word in WORDS.findall(clause)) + " "
        for clause in _CLAUSE.split(_said(text))
    )


def _said(text: str) -> str:
    """What a turn says: its text without the speaker's label or a photo's caption."""
    return CAPTION.sub("", unlabelled(text))


def _notes(items: list[Item], meaning: Any) -> bool:
    """Whether the items are notes the model reads: no speaker's turn, in its language."""
    return not any(speaker(item.text) for item in items) and all(meaning.reads(item.text) for item in items)


def salient(items: list[Item], count: int, people: frozenset[str] = frozenset(), meaning: Any = None) -> list[str]:
    """The heaviest recurring nouns of the items, as people wrote them.

    With ``meaning``: the recurring words closest in meaning to the items as a
    whole. Notes are terse ("Left knee hurts after runs longer than 15 km"):
    few of their nouns follow an article, and the word that names them
    recurs in most of them ("Atlas" in every note on its launch), where word
    weights taken over the items count it for nothing."""
    texts = [item.text for item in items]
    ignore = set(speakers(texts)) | people
    words = [terms(text, frozenset(ignore)) for text in texts]
    weights = Weights(words)
    weight: Vector = {}
    for w in words:
        add_into(weight, weights.vector(w))
    spread: Counter[str] = Counter()
    nouns: dict[str, float] = {}
    surface: dict[str, Counter[str]] = {}
    addressed = {m.group(1).lower() for text in texts for m in VOCATIVE.finditer(unlabelled(text))}
    ignore |= addressed
    names: dict[str, Counter[str]] = {}  # term -> the names of two or three words it is part of
    for text in texts:
        seen = set()
        for lowered, written, word_terms, noun, name in _words_of(text):
            if lowered in ignore:
                continue
            for term in word_terms:
                surface.setdefault(term, Counter())[written] += 1
                seen.add(term)
                nouns[term] = nouns.get(term, 0.0) + noun
                if name is not None:
                    names.setdefault(term, Counter())[name] += 1
        spread.update(seen)
    floor = 2 if len(items) >= 2 else 1  # of two items, what both say
    # By meaning every recurring word is a candidate, the commonest too (see above).
    pool = surface if meaning is not None else weight
    candidates = [t for t in pool if t in surface and len(t) > 2 and not t.isdigit() and spread[t] >= floor]
    # Nouns name things (a superlative or an adverb does not); other words only when there are none.
    candidates = [t for t in candidates if not surface[t].most_common(1)[0][0].endswith(("est", "ly"))] or candidates
    if meaning is None and any(nouns.get(t, 0.0) >= 1 for t in candidates):
        candidates = [t for t in candidates if nouns.get(t, 0.0) >= 1]
    if not candidates:
        candidates = [t for t in weight if t in surface and len(t) > 2 and not t.isdigit()]
    if meaning is not None and candidates:
        ranked = _closest(candidates, surface, spread, meaning, texts)
    else:
        ranked = sorted(candidates, key=lambda t: (-(weight[t] * spread[t] * (1 + nouns.get(t, 0.0))), t))
    found: list[str] = []
    taken: set[str] = set()
    for t in ranked:
        written = surface[t].most_common(1)[0][0]
        if meaning is not None:
            # A note's first word is lowercased ("Ellie's wedding is on 6 June"):
            # a word written with a capital anywhere else is a name ("Called Ellie").
            written = next((w for w, _ in surface[t].most_common() if w[0].isupper()), written)
        # "Matt Patterson" is one name, not "Matt and Patterson": a word written
        # mostly as part of one name stands for the whole of it.
        name, times = names[t].most_common(1)[0] if t in names else (written, 0)
        if times * 2 > sum(surface[t].values()):
            written = name
        parts = set(written.lower().split())
        if parts & taken:
            continue
        found.append(written)
        taken |= parts
        if len(found) == count:
            break
    return found


def _closest(
    candidates: list[str], surface: dict[str, Counter[str]], spread: Counter[str], meaning: Any, texts: list[str]
) -> list[str]:
    """``candidates`` by how close each word's meaning is to the texts' mean
    vector, counted more the more of the texts say it. The words most texts
    say are weighed against the mean of texts spread evenly over them, a few
    dozen of each: a section of thousands of notes is named without
    embedding every one of its notes and words."""
    import numpy as np

    words = {t: surface[t].most_common(1)[0][0] for t in candidates}
    # A verb's past ("planted", "ordered") tells what was done, not what about.
    weighed = [t for t in candidates if not _past(words[t])] or candidates
    weighed = sorted(weighed, key=lambda t: (-spread[t], t))[:TITLE_WORDS]
    sample = texts[:: max(1, len(texts) // TITLE_TEXTS)][:TITLE_TEXTS]
    centre = meaning.vectors(sample).sum(axis=0)
    centre = centre / (np.linalg.norm(centre) or 1.0)
    scores = meaning.vectors([words[t] for t in weighed]) @ centre
    fit = {t: float(score) * math.log(1 + spread[t]) for t, score in zip(weighed, scores, strict=True)}
    return sorted(weighed, key=lambda t: (-fit[t], t))


def _past(word: str) -> bool:
    """A word that reads as a verb's past: "planted", "Ordered" (opening a note), "bought";
    not "bed" or "speed"."""
    word = word.lower()
    return word in IRREGULAR_PAST or (len(word) > 4 and word.endswith("ed") and not word.endswith("eed"))


# (the word lowercased, as a title writes it, its terms, how surely it is a noun, the name it is part of)
_Word = tuple[str, str, list[str], float, str | None]


@lru_cache(maxsize=2048)  # about 3 KB a chat turn: 6 MB at most, kept by a long-lived daemon
def _words_of(text: str) -> tuple[_Word, ...]:
    """What a title takes from each word of a text, whoever is speaking around
    it: an entry is named with every group it is part of (a big section is
    halved again and again), and is read once while it stays among the last
    few thousand texts named."""
    found: list[_Word] = []
    raw, starts = _tokens(MARK.sub(" ", _said(text)))  # a secret's mark names nothing
    runs = _name_runs(raw, starts)
    for k, token in enumerate(raw):
        lowered = token.lower().removesuffix("'s")  # "fam's" is about the fam
        if lowered in UNTITLED:
            continue
        # A name keeps its capitals ("EpiPen", "Lisbon"); other words are lowercase. A capital
        # with a possessive names someone even opening a note ("Leo's nativity play").
        named = k in runs or _named(raw, k) or (token[0].isupper() and token.endswith("'s"))
        written = token.removesuffix("'s") if named else lowered
        found.append((lowered, written, terms(lowered), 1.0 if k in runs else _nounness(raw, k), runs.get(k)))
    return tuple(found)


def _named(raw: list[str], k: int) -> bool:
    """Whether ``raw[k]`` reads as a name: capitalised, and not the text's first
    word. A capital opening a later sentence counts too: such a word is often
    the sentence's subject ("Pottery is a huge part of my life"), and search
    reads titles (reading it as a plain word lowered recall: docs/benchmarks.md)."""
    return raw[k][0].isupper() and k > 0


def _tokens(text: str) -> tuple[list[str], frozenset[int]]:
    """The words of ``text``, and the positions of those that open a sentence."""
    words: list[str] = []
    starts: set[int] = set()
    end = 0
    for match in WORDS.finditer(text):
        # Only what lies between two words can end a sentence (a word ends in a letter or digit).
        between = text[end : match.start()].rstrip(" \t\"'“‘([*_")
        if (not between and not words) or between.endswith((".", "!", "?", "…", ":", "\n")):
            starts.add(len(words))
        words.append(match.group(0))
        end = match.end()
    return words, frozenset(starts)


def _name_runs(raw: list[str], starts: frozenset[int]) -> dict[int, str]:
    """Names of two or three capitalised words ("Matt Patterson", "Sara
    Bareilles"), by the position of each of their words; inside a sentence
    only, where a capital says "name" ("Visited Lisbon" opening one is no name)."""
    runs: dict[int, str] = {}
    k = 0
    while k < len(raw):
        end = k + 1
        if k not in starts and capital(raw[k]):
            while end < min(len(raw), k + 3) and end not in starts and capital(raw[end]):
                end += 1
        if end - k >= 2:
            name = " ".join(word.removesuffix("'s") for word in raw[k:end])
            runs.update({i: name for i in range(k, end)})
        k = end
    return runs


def capital(word: str) -> bool:
    """A capitalised word that may be part of a name (not "I", "Thanks" or an acronym)."""
    return word[0].isupper() and word != "I" and not word.isupper() and word.lower() not in STOPWORDS


def _nounness(raw: list[str], k: int) -> float:
    """How surely ``raw[k]`` is a noun: a name inside a sentence (1), the last
    word of a phrase an article, possessive or number begins ("a pottery
    *class*", 1), a word inside one ("a *pottery* class", 0.5), else 0."""
    if _named(raw, k):
        return 1.0
    # Only the three words before can open its phrase: looking further back made
    # a long entry's title cost the square of its length (minutes at 25,000 words).
    nearest = max(0, k - 3)
    start = k - 1
    while start >= nearest and raw[start].lower() not in _DETERMINER and raw[start].lower() not in STOPWORDS:
        start -= 1
    if start < nearest or not (raw[start].lower() in _DETERMINER or raw[start].isdigit()):
        return 0.0
    following = raw[k + 1].lower() if k + 1 < len(raw) else ""
    ends = not following or following in STOPWORDS or following in _DETERMINER
    return 1.0 if ends else 0.5


def _subject(items: list[Item]) -> str | None:
    """Whom the items are about: the speaker of most of them, else a name
    (a capitalised word inside a sentence) most of them mention."""
    said = Counter(name for item in items if (name := speaker(item.text)))
    if said:
        name, count = said.most_common(1)[0]
        return name if count * 2 > len(items) else None
    named: Counter[str] = Counter()
    for item in items:
        raw = WORDS.findall(item.text)
        named.update(
            {
                token
                for k, token in enumerate(raw)
                if k > 0 and token[0].isupper() and token.lower() not in STOPWORDS and token != "I"
            }
        )
    if not named:
        return None
    name, count = named.most_common(1)[0]
    return name if count * 2 > len(items) and len(items) >= 2 else None
