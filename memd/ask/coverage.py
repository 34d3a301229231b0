"""Whether the entries found answer a question at all: the offline answer's
abstention. It weighs how much of the question's content they hold, and, when
the question names people who speak in the vault, how much of it is said about
them (``told``), so a question about the wrong person is refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memd.ask.told import told
from memd.index.records import Record
from memd.index.retrieve import query_terms
from memd.index.signals import speaker_of

# Abstention, measured with `memd eval locomo` on the dev slice's unanswerable
# questions against its answerable ones (see the README): the first entries
# whose coverage of the question is compared, and the share of the best
# coverage that what is said about the person asked about must reach (both
# halves of the slice meet the targets anywhere from 0.625 to 0.75; this is
# the end with fewer answerable questions refused).
COVER_ENTRIES = 6
NAMED_SHARE = 0.625
# The phrasings that tell what someone or something is called, and the words of asking it.
ALIAS_SAID = re.compile(
    r"\b(?:go(?:es)? by|went by|real name|full name|nickname[ds]?|called|known as|short for|named|name is"
    r"|name's|alias)\b",
    re.I,
)
ALIAS_WORDS = "real full actual proper given birth first last nick maiden name called nickname alias known short"
_WORD = re.compile(r"[A-Za-z][\w'-]*")


def names(question: str) -> set[str]:
    """The names a question holds: its capitalised words after the first."""
    return {token.split("'")[0] for token in _WORD.findall(question)[1:] if token[0].isupper()}


def covers(backend: Any, question: str, entries: Sequence[Record], alias: bool = False) -> bool:
    """Whether the entries found answer the question at all, by how much of its
    content they hold (each word weighted by its rarity, so "blood" counts for
    more than "like"). Two ways they fail:

    - none of them holds any of the question's content words (the names it
      asks about aside): "What is Dana's blood type?" over entries that only
      share "Dana";
    - the question names people who speak in the vault, and what is said about
      them among the first entries covers its content clearly less than the
      best entry does: "What did Caroline realize after her charity race?"
      when the race was Melanie's. What is said about a person is what they
      say of themselves, and what others say to them: "Caroline: Did you run
      the race?" is about Melanie, not Caroline (``told.told``). A question
      that names everyone who speaks among them is judged by coverage alone.

    ``alias``: the question asks what someone is called; an entry telling
    what someone goes by ("Bartholomew goes by Bart") holds the asking words
    ("real name", "called") in other words."""
    named = {name.lower() for name in names(question)}
    named_terms = set(backend.analyse(" ".join(named))) if named else set()
    content = [term for term, _ in query_terms(backend, question) if term not in named_terms]
    if not content:
        return bool(entries)  # only names (and question words): any entry about them is an answer
    weights = {term: max(backend.idf(term), 1e-6) for term in content}
    total = sum(weights.values())

    naming = set(backend.analyse(ALIAS_WORDS)) if alias else set()

    def coverage(text: str) -> float:
        held = set(backend.analyse(text)) if text else set()
        if naming and ALIAS_SAID.search(text):
            held |= naming
        return sum(weight for term, weight in weights.items() if term in held) / total

    first = entries[:COVER_ENTRIES]
    best = max((coverage(entry.text) for entry in first), default=0.0)
    if not best and not any(coverage(entry.text) for entry in entries[COVER_ENTRIES:]):
        return False
    speakers = [speaker_of(entry) for entry in first]
    speaking = {s.lower().split()[0] for s in speakers if s is not None}
    if not speaking & named:
        return True  # the question names no one who speaks here: coverage alone decides
    if len(speaking) > 1 and speaking <= named:
        # It names everyone who speaks here ("What book did Caroline recommend to Melanie?"):
        # whatever one says to another is about someone it names, so coverage alone decides.
        return True
    about_named = 0.0
    for entry, said_by in zip(first, speakers, strict=True):
        if said_by is None:
            about_named = max(about_named, coverage(entry.text))
            continue
        own, said_to = told(entry.text)
        about_named = max(about_named, coverage(own if said_by.lower().split()[0] in named else said_to))
    return about_named >= NAMED_SHARE * best
