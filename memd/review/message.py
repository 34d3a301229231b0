"""What memd's commit messages say, parsed back.

A consolidation's message lists one line per placed entry
(``12+41 -> topics/x.md # Section``), each supersession
(``seq 44 supersedes seq 12: reason``, followed by the replaced entry's lines
indented four spaces), splits (``split x -> a, b``), merges
(``merged y into x``) and trailers (``Memd-Seq: 1-6``). An undo's message
carries ``Memd-Undo: <sha>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memd.core.document import parse_document
from memd.core.entry import Entry
from memd.core.errors import FormatError
from memd.core.signature import SeqSet
from memd.review.spans import Runs, runs

_MOVE = re.compile(r"^(?P<seqs>[0-9][0-9+\-]*) -> (?P<path>\S+\.md)(?: # (?P<section>.*))?$")
_SUPERSEDES = re.compile(r"^seq (?P<new>[0-9][0-9+\-]*) supersedes seq (?P<old>[0-9][0-9+\-]*)(?::\s*(?P<reason>.*))?$")
_SPLIT = re.compile(r"^split (?P<topic>\S+) -> (?P<parts>.+)$")
_MERGED = re.compile(r"^merged (?P<absorbed>\S+) into (?P<survivor>\S+)$")
_TRAILER = re.compile(r"^(Memd-[A-Za-z-]+):\s*(.*)$")


@dataclass(frozen=True)
class Placement:
    seqs: SeqSet
    path: str
    section: str


@dataclass(frozen=True)
class Replacement:
    """``new`` superseded ``old``; ``entry`` is the old entry as it read, when recorded."""

    new: SeqSet
    old: SeqSet
    reason: str
    entry: Entry | None


@dataclass(frozen=True)
class Message:
    placements: tuple[Placement, ...] = ()
    replacements: tuple[Replacement, ...] = ()
    splits: tuple[tuple[str, tuple[str, ...]], ...] = ()
    merges: tuple[tuple[str, str], ...] = ()  # (absorbed, survivor)
    trailers: tuple[tuple[str, str], ...] = ()

    def trailer(self, key: str) -> str | None:
        return next((value for k, value in self.trailers if k == key), None)

    @property
    def buffer(self) -> Runs:
        """The seqs a consolidation took in from the buffer (its ``Memd-Seq``)."""
        value = self.trailer("Memd-Seq")
        try:
            return runs(SeqSet.parse(value)) if value else ()
        except FormatError:
            return ()


def parse_message(message: str) -> Message:
    """Parse a memd commit message; lines it does not know are ignored."""
    placements: list[Placement] = []
    replacements: list[Replacement] = []
    splits: list[tuple[str, tuple[str, ...]]] = []
    merges: list[tuple[str, str]] = []
    trailers: list[tuple[str, str]] = []
    lines = message.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        try:
            if match := _MOVE.match(line):
                placements.append(Placement(SeqSet.parse(match["seqs"]), match["path"], match["section"] or ""))
            elif match := _SUPERSEDES.match(line):
                block = []
                while i < len(lines) and lines[i].startswith("    "):
                    block.append(lines[i][4:])
                    i += 1
                entry = _entry("\n".join(block))
                replacements.append(
                    Replacement(SeqSet.parse(match["new"]), SeqSet.parse(match["old"]), match["reason"] or "", entry)
                )
            elif match := _SPLIT.match(line):
                splits.append((match["topic"], tuple(p.strip() for p in match["parts"].split(","))))
            elif match := _MERGED.match(line):
                merges.append((match["absorbed"], match["survivor"]))
            elif match := _TRAILER.match(line):
                trailers.append((match.group(1), match.group(2).strip()))
        except FormatError:
            continue  # a line that only looks like memd's: not evidence of anything
    return Message(tuple(placements), tuple(replacements), tuple(splits), tuple(merges), tuple(trailers))


def _entry(text: str) -> Entry | None:
    if not text.strip():
        return None
    entries = parse_document(text + "\n").signed()
    return entries[0].entry if entries else None
