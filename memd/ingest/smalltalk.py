"""Which turns of an ingested conversation are small talk: greetings, thanks
and reactions with no fact in them. They stay, verbatim and searchable, in the
conversation's copy under ``sources/``; they are not filed as entries (an entry
never created, so nothing is dropped later). What a person types with
``memd add`` is never judged by this: it is always kept.

A sentence bears a fact when it tells something of the speaker (it says
"I", "we", "my"... and is no question: "We won!"), or when it has at least
``FACT_TERMS`` content words (``engine.text.terms``: function words and the
chatter of conversation left out, and so the names of the people it is said
to: "Thanks, Mel!"); a question needs one more, since most ask rather than
tell ("How did it make you feel?"). A turn is small talk when none of its
sentences bears a fact, and it shares no photo.
"""

from __future__ import annotations

import re

from memd.engine.text import terms

FACT_TERMS = 2
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
# Said to someone, not about them: "Thanks, Mel!", "Wow, Caroline, ...", "Hey Jon!".
_ADDRESSED = re.compile(
    r"(?:^|[,.!?]\s*|\b(?:hey|hi|hello|thanks|thank you|wow|yes|yeah|oh|aww|bye)\s+)([A-Z][\w'-]*)(?=\s*[,!?.]|$)"
)
_FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'll|I'd|me|my|mine|we|we're|we've|we'll|us|our|ours)\b", re.I)
_CAPTION = re.compile(r"\[(?:shares|shared|sends|sent) [^\]]*\]")


def bears_fact(text: str) -> bool:
    """Whether any sentence of a turn's text tells something (see the module doc).
    A shared photo's caption is a fact ("[shares a photo of a pottery bowl]")."""
    if _CAPTION.search(text):
        return True
    for sentence in _SENTENCE.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        question = sentence.endswith("?")
        if not question and _FIRST_PERSON.search(sentence):
            return True
        addressed = frozenset(m.group(1).lower() for m in _ADDRESSED.finditer(sentence))
        found = set(terms(sentence, addressed))
        if len(found) >= FACT_TERMS + (1 if question else 0):
            return True
    return False


def restates(text: str, before: str) -> bool:
    """Whether ``text`` (an assistant's turn) only says back what the turn
    ``before`` it told: every content word of it is one of ``before``'s
    ("Noted: you take your coffee with oat milk" after "I take my coffee with
    oat milk"). An answer to a question is never an echo (it may confirm or
    deny), nor is a turn that adds a single word of its own."""
    if not before.strip() or before.rstrip().endswith("?"):
        return False
    said = set(terms(before))
    own = set(terms(text))
    return bool(own) and own <= said
