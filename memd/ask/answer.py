"""What ``memd ask`` gives back: the answer, the evidence it rests on, the values
it replaced and, with a model, the rounds of tool use that gathered it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memd.index.records import Record


@dataclass(frozen=True)
class Evidence:
    record: Record
    score: float
    via: str

    def to_json(self) -> dict[str, Any]:
        r = self.record
        return {
            "cite": r.cite,
            "path": r.path,
            "doc": r.doc,
            "line": r.line,
            "end_line": r.end_line,
            "kind": r.kind,
            "headings": list(r.headings),
            "seq": r.seq,
            "time": r.time,
            "source": r.source,
            "src": r.src,
            "via": self.via,
            "score": round(self.score, 4),
            "text": r.text,
        }


@dataclass(frozen=True)
class Step:
    """One round of a model's tool use while gathering evidence."""

    round: int
    calls: tuple[dict[str, Any], ...]
    done: bool
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"round": self.round, "calls": list(self.calls), "done": self.done, "note": self.note}


Report = Callable[[Step], None]


@dataclass(frozen=True)
class Replaced:
    """A value an answer's newest one replaced: the old entry's seq, words and
    time, and the seq of the entry that replaced it (``app/replaced.py``)."""

    seq: str
    text: str
    time: str | None
    by: str

    def to_json(self) -> dict[str, Any]:
        return {"seq": self.seq, "text": self.text, "time": self.time, "replaced_by": self.by}


@dataclass(frozen=True)
class Answer:
    """``engine`` is who wrote ``answer``; ``fallback`` says why it is the
    offline answer although a model is configured (None when it is not);
    ``warnings`` name the model steps done offline on the way (the JSON form
    lists the fallback among them too)."""

    question: str
    found: bool
    answer: str
    support: tuple[Evidence, ...]
    evidence: tuple[Evidence, ...]
    engine: str = "offline"
    fallback: str | None = None
    steps: tuple[Step, ...] = ()
    warnings: tuple[str, ...] = ()  # model steps done offline on the way, and why
    replaced: tuple[Replaced, ...] = ()  # what the newest values cited replaced, newest first

    def to_json(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "found": self.found,
            "answer": self.answer,
            "engine": self.engine,
            "fallback": self.fallback,
            "warnings": [*self.warnings, *filter(None, [self.fallback])],
            "support": [e.to_json() for e in self.support],
            "evidence": [e.to_json() for e in self.evidence],
            "replaced": [r.to_json() for r in self.replaced],
        }
