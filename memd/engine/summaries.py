"""Topic summaries: a topic's few key facts, the sentences closest to the
whole, verbatim. Questions and remarks are left out, and what someone did or
has (told in the first person, or naming a person, a number or a time) comes
before general remarks ("Pets bring so much joy").
"""

from __future__ import annotations

import re

from memd.core.summary import SEPARATOR
from memd.engine.base import Section
from memd.engine.text import SENTENCE_BREAK, Vector, Weights, add_into, cosine, split_label, unlabelled, vocabulary
from memd.engine.titles import CAPTION, VOCATIVE, WORDS, capital

_INTERJECTION = re.compile(
    r"^(?:\w+: )?(?:wow|aww|oh|hey|hi|thanks|thank you|that's|that is|congrats|yay|haha|lol)\b", re.I
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|my|me|we|our|us)\b")
_SECOND_PERSON = re.compile(r"\b(?:you|your|you're|you've)\b", re.I)
# "Yeah Maria, I'm hoping to get into local politics": the opener and the name
# it is said to are no part of the fact, and hide what the sentence does ("Yep
# John, let's keep it up" urges).
_OPENER = re.compile(
    r"^(?:(?i:yes|yeah|yep|yup|oh|ah|wow|woah|whoa|hey|hi|hello|aww|sure|totally|ok|okay|haha|lol)\b[\s,!.]*)+"
    r"(?:[A-Z][\w'-]*[,!]\s+)?"
)
# A sentence that opens by pointing back ("It reminds us…", "They brighten up our day")
# lost what it is about when it was lifted out of its turn.
# Urging someone on ("Let's keep chasing our dreams") tells no fact of either of them.
_URGING = re.compile(r"^(?:let's|let us|let’s)\b", re.I)
_POINTS_BACK = re.compile(r"^(?:it|it's|its|they|they're|their|them|this|these|those|he|she|his|her|him)\b", re.I)
# When something happened or will: what tells an event from an opinion.
_WHEN = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|ago|recently|lately|"
    r"(?:last|next|this|every) (?:week|weekend|month|year|summer|winter|spring|fall|night|morning))\b",
    re.I,
)
# A title or an initial before a name ("Dr. Okafor", "St. Ives", "J. Smith") ends no sentence;
# a name of three letters or more does ("with Sam. The vet said...").
_ABBREVIATION = re.compile(r"(?:^|\s)(?:[A-Z][a-z]?|Mrs|Prof)\.$")
SUMMARY_FACTS = 2  # sentences in a summary
SUMMARY_CHARS = 110  # the most characters of each


def summary(sections: list[Section]) -> str:
    """The few sentences closest to the whole topic, verbatim (cut between words)."""
    items = [item for section in sections for item in section.items]
    if not items:
        return ", ".join(s.title for s in sections if s.title)[:200]
    pieces: list[tuple[int, str]] = []  # (entry, sentence)
    for n, item in enumerate(items):
        label, said = split_label(item.text)
        body = CAPTION.sub("", said)
        for sentence in _sentences(body):
            sentence = " ".join(sentence.split())
            sentence = _OPENER.sub("", sentence, count=1) or sentence
            if sentence and not sentence.endswith("?"):
                pieces.append((n, f"{label.strip()} {sentence}" if label else sentence))
    if not pieces:
        pieces = [(n, " ".join(item.text.split())) for n, item in enumerate(items)]
    words = vocabulary([text for _, text in pieces])
    weights = Weights(words)
    vectors = [weights.vector(w) for w in words]
    centroid: Vector = {}
    for vec in vectors:
        add_into(centroid, vec)
    # A fact has a few words of content; a remark ("Thanks, Mel!") has almost
    # none, and a reaction to what someone else said is about them.
    ranked = sorted(range(len(pieces)), key=lambda i: (-_fact_score(pieces[i][1], vectors[i], words[i], centroid), i))
    chosen: list[int] = []
    used: set[int] = set()
    for i in ranked:
        if pieces[i][0] in used or len(set(words[i])) < 2:
            continue
        chosen.append(i)
        used.add(pieces[i][0])
        if len(chosen) == SUMMARY_FACTS:
            break
    if not chosen:
        chosen = ranked[:1]
    return SEPARATOR.join(_cut(pieces[i][1]) for i in sorted(chosen))


def _fact_score(text: str, vector: Vector, words: list[str], centroid: Vector) -> float:
    score = cosine(vector, centroid) * min(len(set(words)), 6)
    body = unlabelled(text)
    # Reactions and encouragement are said to someone ("Nice work, Maria!",
    # "Way to go, Nate!"): they tell little about the topic's subject.
    if _INTERJECTION.match(text) or VOCATIVE.search(body):
        score *= 0.3
    if _SECOND_PERSON.search(text) and not _FIRST_PERSON.search(text):
        score *= 0.3
    if body.rstrip().endswith("!"):
        score *= 0.6
    if _POINTS_BACK.match(body.lstrip()) or _URGING.match(body.lstrip()):
        score *= 0.3
    # What someone did or has is told in the first person or names its thing
    # ("I started playing guitar five years ago", "Bailey is our new cat"); a
    # sentence with neither is a general remark ("Pets bring so much joy").
    raw = WORDS.findall(body)
    specific = sum(1 for k, word in enumerate(raw) if word.isdigit() or (k > 0 and capital(word)))
    specific += 1 if _WHEN.search(body) else 0
    if not _FIRST_PERSON.search(body) and not specific:
        score *= 0.4
    # About the other person's part ("your words motivate me"): a reaction, not a fact of the topic.
    elif _SECOND_PERSON.search(body):
        score *= 0.6
    return score * (1.0 + 0.25 * min(specific, 2))


def _cut(text: str) -> str:
    if len(text) <= SUMMARY_CHARS:
        return text
    return text[: SUMMARY_CHARS - 1].rsplit(" ", 1)[0].rstrip(" ,;:") + "…"


def _sentences(text: str) -> list[str]:
    """The sentences of ``text``; a break after a short capitalised abbreviation
    is none ("Physio is Dr. Okafor" stays whole: a summary quoting "Okafor;
    appointment on 2 December" lost who the appointment is with)."""
    found: list[str] = []
    for piece in SENTENCE_BREAK.split(text):
        if found and _ABBREVIATION.search(found[-1]) and piece[:1].isupper():
            found[-1] = f"{found[-1]} {piece}"
        else:
            found.append(piece)
    return found
