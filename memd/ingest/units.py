"""What one engine call reads during an import: a unit of a note or a transcript.

A note is cut into its paragraphs and list items (``src`` = the source copy's
line, ``#L12``), outside frontmatter and code blocks; a paragraph longer than
``UNIT_CHARS`` becomes several units. A transcript gives one unit per turn
not yet in the copy (``src`` = the turn's block id, ``#^t12``; for LoCoMo the
dia_id comes first: ``src=D1:3;sources/...#^t3``), carrying its speaker and
time. A turn without a time in a dated chat takes the time of the turn before
it in the same conversation (or, at the start, the next one), never the moment
of the import.

The cutting is apart from the pipeline so it stays a pure function of the
parsed input: the pipeline decides when units are read, this decides what a
unit is and where its entries will point.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memd.ingest.formats import Parsed, Turn
from memd.ingest.sources import SourceCopy

# One unit is one engine call, and no step of an import may wait on one giant call.
UNIT_CHARS = 4000
_FENCE = re.compile(r"^(```|~~~)")
_ITEM = re.compile(r"^\s*+(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_SIGNATURE = re.compile(r"^<seq=[^>\n]*>\s*")


@dataclass(frozen=True)
class Unit:
    text: str
    src: str
    time: str | None = None
    speaker: str | None = None  # transcripts: the entry is "Speaker: statements"


def units_of(parsed: Parsed, rel: str, copy: SourceCopy | None, new_turns: list[tuple[Turn, int]]) -> list[Unit]:
    """The units of an import whose source copy is at ``rel``: a note's from its
    new ``copy``, a transcript's from ``new_turns`` (each with its block number)."""
    if parsed.note is not None:
        assert copy is not None
        offset = copy.note_offset
        return [Unit(text, f"{rel}#L{offset + line}") for line, text in note_units(parsed.note)]
    times = filled_times(parsed.turns)
    units = []
    for turn, number in new_turns:
        anchor = f"{rel}#^t{number}"
        src = f"{turn.ref};{anchor}" if turn.ref else anchor
        units.append(Unit(turn.text, src, times.get(id(turn)), turn.speaker))
    return units


def filled_times(turns: tuple[Turn, ...]) -> dict[int, str | None]:
    """Each turn's time, by ``id``; a turn without one takes the time of the
    turn before it in its conversation, or at the start the first one after."""
    out: dict[int, str | None] = {}
    last: dict[object, str | None] = {}
    waiting: dict[object, list[Turn]] = {}
    for turn in turns:
        thread = (turn.thread, turn.group)
        if turn.time:
            for earlier in waiting.pop(thread, []):
                out[id(earlier)] = turn.time
            last[thread] = turn.time
            out[id(turn)] = turn.time
        elif last.get(thread):
            out[id(turn)] = last[thread]
        else:
            waiting.setdefault(thread, []).append(turn)
            out[id(turn)] = None
    return out


def note_units(note: str) -> list[tuple[int, str]]:
    """(1-based line, text) of each paragraph and list item of a Markdown note,
    outside frontmatter and code blocks; headings are not statements."""
    lines = note.split("\n")
    units: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    fence: str | None = None
    skip_to = -1
    if lines and lines[0].strip() == "---":
        skip_to = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), -1)

    def flush() -> None:
        if current:
            units.append((start, " ".join(current)))
            current.clear()

    size = 0

    for i, raw in enumerate(lines):
        line = raw.strip()
        if i <= skip_to:
            continue
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and line.startswith(fence):
                fence = None
            continue
        if marker:
            flush()
            fence = marker.group(1)
            continue
        if not line or line.startswith("#") or set(line) <= set("-*_=|: "):
            flush()
            continue
        item = _ITEM.match(raw)
        if item:
            flush()
            line = raw[item.end() :].strip()
        line = _SIGNATURE.sub("", line.lstrip("> ").strip())
        if current and size + len(line) > UNIT_CHARS:
            flush()
        if not current:
            start, size = i + 1, 0
        current.append(line)
        size += len(line) + 1
    flush()
    return [(line, text) for line, text in units if text.strip()]
