"""Extraction by a model: which statements of a text last, in the text's words.

A short text (a chat turn, a one-line note) keeps all its statements without
asking (chatter aside, see rules.is_filler); a longer one goes to the model,
whose reply must copy statements from it: every entry passes the fidelity
check against its own text, repeats nothing, and names an input id.
"""

from __future__ import annotations

from typing import Any

from memd.core.tokens import count_tokens
from memd.engine.base import Extracted
from memd.engine.fidelity import Sources, sentences, unsupported
from memd.engine.output import BadOutput
from memd.engine.prompts import normal
from memd.engine.steps import listed, text_of

EXTRACT_TOKENS = 60  # a shorter text keeps all its statements without asking the model


def unsettled_text(text: str, found: list[Extracted]) -> bool:
    """The offline reading found several statements in a long text: which last is a judgement."""
    return len(found) > 1 and count_tokens(text) >= EXTRACT_TOKENS


def valid_extraction(data: dict[str, Any], ids: dict[int, str]) -> list[list[Extracted]]:
    found: dict[int, list[Extracted]] = {number: [] for number in ids}
    for entry in listed(data, "entries"):
        if not isinstance(entry, dict):
            raise BadOutput("each entry must be an object with text")
        number = entry.get("id", 1 if len(ids) == 1 else None)
        if number not in ids:
            raise BadOutput(f"entry id {number!r} is not one of the input ids")
        text = text_of(entry.get("text"), "entry text")
        parts = [normal(s) for s in sentences(text)]
        if len(set(parts)) < len(parts):
            raise BadOutput(f"entry {text[:60]!r} repeats a sentence")
        problem = unsupported(text, Sources([ids[number]]))
        if problem:
            raise BadOutput(f"text {number}: {problem}; copy statements from the text, add nothing")
        if any(normal(e.text) == normal(text) for e in found[number]):
            raise BadOutput(f"entry {text[:60]!r} is listed twice")
        found[number].append(Extracted(text))
    return [found[number] for number in ids]
