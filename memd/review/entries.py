"""Entries as review sees them: where an entry sat, with which seqs and words."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from memd.core.document import parse_document
from memd.core.signature import Signature
from memd.review.spans import Runs, overlaps, runs


@dataclass(frozen=True)
class Sighting:
    """One signed entry in one version of one file (line 0: an entry known only
    from a commit message, never committed in a file)."""

    path: str
    line: int
    end_line: int
    headings: tuple[str, ...]
    signature: Signature
    text: str

    @property
    def seq(self) -> str:
        return str(self.signature.seq)

    @cached_property
    def runs(self) -> Runs:
        return runs(self.signature.seq)

    @property
    def section(self) -> str:
        return " > ".join(self.headings)

    @property
    def time(self) -> str | None:
        return self.signature.time

    @property
    def source(self) -> str | None:
        return self.signature.source

    @property
    def supersedes(self) -> str | None:
        return self.signature.get("supersedes")

    def cite(self, commit: str | None = None) -> str:
        where = f"{self.path}:{self.line}" if self.line == self.end_line else f"{self.path}:{self.line}-{self.end_line}"
        return f"{where}@{commit[:7]}" if commit else where

    def to_json(self, commit: str | None = None) -> dict[str, object]:
        return {
            "cite": self.cite(commit) if self.line else None,  # line 0: only ever in the uncommitted buffer
            "path": self.path,
            "line": self.line,
            "end_line": self.end_line,
            "section": self.section,
            "seq": self.seq,
            "time": self.time,
            "source": self.source,
            "signature": self.signature.render(),
            "text": self.text,
        }


def sightings(path: str, text: str, tracked: Runs | None = None) -> list[Sighting]:
    """Signed entries of one file version (only those holding a tracked seq)."""
    found = []
    for located in parse_document(text).signed():
        signature = located.entry.signature
        assert signature is not None
        if tracked is not None and not overlaps(runs(signature.seq), tracked):
            continue
        found.append(
            Sighting(path, located.line, located.end_line, located.headings, signature, located.entry.full_text)
        )
    return found


def unsigned(text: str) -> set[str]:
    """Words of the unsigned (hand-written) list items of one file version."""
    return {e.entry.full_text for e in parse_document(text).entries() if e.entry.signature is None}
