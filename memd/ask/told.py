"""Who a transcript line is about: what its speaker says of themselves, and
what they say to or ask the listener (``ask.coverage.covers`` reads the part
about the person a question names).
"""

from __future__ import annotations

import re

from memd.index.sentences import BREAK, speaker

# Said to the listener: about them, not the speaker ("Congrats on the
# internship!", "Did you make it?").
_SECOND_PERSON = re.compile(r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|ya|u)\b", re.I)


# Said of the speaker too: "I wanted to tell you about my school event" is about the speaker.
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'll|i'd|im|my|me|myself)\b", re.I)


def told(text: str) -> tuple[str, str]:
    """A transcript line's body cut in two: what the speaker says of
    themselves or the world, and what they say to or ask the listener (a
    sentence that says "you", or a question). "Jon: Congrats, Gina! Where is
    the internship?" tells nothing about Jon's internship. A sentence told to
    the listener in the first person is in both: "Just wanted to tell you I
    took a poetry class" is the speaker's news."""
    name = speaker(text)
    body = text[len(name) + 2 :] if name else text
    own: list[str] = []
    said_to: list[str] = []
    for part in BREAK.split(body):
        addressed = bool(_SECOND_PERSON.search(part)) or part.rstrip().endswith("?")
        (said_to if addressed else own).append(part)
        if addressed and not part.rstrip().endswith("?") and _FIRST_PERSON.search(part):
            own.append(part)
    return " ".join(own), " ".join(said_to)
