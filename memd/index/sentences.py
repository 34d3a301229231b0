"""A record's sentences, for the model to read one at a time.

A sentence vector is the mean of its tokens, so one sentence that answers a
question is diluted by the others around it: "we went camping at the beach.
The kids loved it. I'm off to work now" sits between its three subjects.
The vector index keeps, beside each record's own vector, one vector per
sentence of a record that has several, and a candidate's similarity gains
part of its best sentence's lead (``memd.index.hybrid``).

In a transcript each sentence keeps its speaker ("Ana: ..."), since who said
a thing is part of what it means.
"""

from __future__ import annotations

import re

MIN_WORDS = 3  # shorter pieces ("Wow!", "Thanks, Mel.") say too little to match alone
MAX_PARTS = 16  # sentences read per record: bounds the cost of a long prose block
_SPEAKER = re.compile(r"^([^\W\d][\w'.-]*(?: [^\W\d][\w'.-]*){0,2}): ")
# A sentence ends at . ! ? (with closing quotes or brackets) before a space, or at a line break.
BREAK = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"'”’)\]]))\s+|\s*\n\s*")


def speaker(text: str) -> str | None:
    """Who said a transcript line ("Ana: what she said"), if it has that shape."""
    match = _SPEAKER.match(text)
    return match.group(1) if match else None


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` worth a vector of their own: empty when it has
    fewer than two (its own vector already is its sentence's)."""
    name = speaker(text)
    body = text[len(name) + 2 :] if name else text
    parts = [part.strip() for part in BREAK.split(body)]
    kept = [part for part in parts if len(part.split()) >= MIN_WORDS][:MAX_PARTS]
    if len(kept) < 2:
        return []
    return [f"{name}: {part}" for part in kept] if name else kept
