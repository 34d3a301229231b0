"""A parsed input made safe to store: secrets redacted, text that UTF-8 can hold,
control characters spelled out (``\\x00``: a NUL would make the copy a binary file).

The source copy and the entries of an import are made from what this
returns, so a key in a turn, a speaker's name, a conversation title or a
thread id never reaches the vault, the index or git (the file name is
redacted on its own, where the pipeline picks the copy's path). It lives
apart from the pipeline because it is the one place that decides what of an
input's content is kept verbatim and what is replaced.
"""

from __future__ import annotations

from dataclasses import replace

from memd.core.atomic import escape_controls, storable
from memd.core.redact import redact, redact_value
from memd.ingest.formats import Parsed, Turn


def scrub(parsed: Parsed) -> tuple[Parsed, list[str]]:
    """``parsed`` with its secrets replaced, and the kinds of secrets found."""
    kinds: list[str] = []
    if parsed.note is not None:
        result = redact(_clean(parsed.note))
        return replace(parsed, note=result.text), [f.kind for f in result.findings]
    turns = []
    for turn in map(_valid_turn, parsed.turns):
        text, speaker = redact(turn.text), redact(turn.speaker)
        group = redact(turn.group) if turn.group else None
        kinds += [f.kind for f in (*text.findings, *speaker.findings, *(group.findings if group else ()))]
        turns.append(
            replace(
                turn,
                text=text.text,
                speaker=speaker.text,
                group=group.text if group else None,
                # A thread named after a conversation's title must not carry a key in it either.
                thread=redact_value(turn.thread) if turn.thread else None,
                ref=redact_value(turn.ref) if turn.ref else None,
            )
        )
    title = redact(_clean(parsed.title)) if parsed.title else None
    kinds += [f.kind for f in title.findings] if title else []
    return replace(parsed, turns=tuple(turns), title=title.text if title else None), kinds


def _valid_turn(turn: Turn) -> Turn:
    return replace(
        turn,
        text=_clean(turn.text),
        speaker=_clean(turn.speaker),
        group=_clean(turn.group) if turn.group else None,
        thread=_clean(turn.thread) if turn.thread else None,
        # A turn's id becomes part of its entries' src=, and a signature holds no spaces.
        ref="-".join(_clean(turn.ref).split()) or None if turn.ref else None,
    )


def _clean(text: str) -> str:
    return escape_controls(storable(text))
