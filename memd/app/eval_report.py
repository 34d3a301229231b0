"""What ``memd eval locomo`` reports (``evaluate.py`` runs it): the scores of
each retrieval setting, how often the offline answer refuses, and the offline
answers per category."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WORD_BUDGET = 300
DEFAULT = "default"  # the retrieval `memd search` runs
LEXICAL = "lexical"  # words only, measured beside it so the semantic lift shows


@dataclass(frozen=True)
class Scores:
    """What one retrieval setting achieved over the questions asked."""

    recall: float
    coverage: float  # share of the gold answers' content words in the text taken
    by_category: dict[str, dict[str, float | int]]
    words: float  # mean words of result text taken per question
    latency_ms: dict[str, float]  # p50 and p95 of one retrieve call
    by_conversation: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {
            "recall": round(self.recall, 4),
            "coverage": round(self.coverage, 4),
            "by_category": self.by_category,
            "words": round(self.words, 1),
            "latency_ms": self.latency_ms,
            "by_conversation": self.by_conversation,
        }


@dataclass(frozen=True)
class Abstention:
    """How often the offline ``memd ask`` says nothing in memory answers: on
    unanswerable questions (category 5) it should, on answerable ones not."""

    unanswerable: float
    answerable: float
    unanswerable_questions: int
    answerable_questions: int

    def to_json(self) -> dict[str, Any]:
        return {
            "unanswerable": round(self.unanswerable, 4),
            "answerable": round(self.answerable, 4),
            "unanswerable_questions": self.unanswerable_questions,
            "answerable_questions": self.answerable_questions,
        }


@dataclass
class Answers:
    """Offline answers of one category: contains the expected answer, holds half its words, refused."""

    contains: list[float] = field(default_factory=list)
    half: list[float] = field(default_factory=list)
    refused: list[float] = field(default_factory=list)

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "questions": len(self.refused),
            "contains_answer": mean(self.contains) if self.contains else None,  # None: no expected answers
            "half_words": mean(self.half) if self.half else None,
            "refused": mean(self.refused),
        }


@dataclass(frozen=True)
class Report:
    scores: dict[str, Scores]  # by setting name; DEFAULT is what `memd search` uses
    retrieval: str  # "hybrid (<model>)" or "lexical (<why>)"
    questions: int
    entries: int
    topics: int
    seconds: float
    consolidated: bool
    conversations: list[dict[str, Any]] = field(default_factory=list)
    index_backend: str = ""  # the search backend the retrieval ran on (memd/index/backends.py)
    abstention: Abstention | None = None
    # Distinct topics per evidence turn over multi-hop questions (see ``concentration``);
    # None when no question had two evidence turns in topics.
    evidence_concentration: float | None = None
    # The offline answers per category ("5-unanswerable" too): see ``Answers``.
    answers: dict[str, dict[str, float | int | None]] | None = None

    @property
    def main(self) -> Scores:
        return self.scores[DEFAULT]

    @property
    def recall(self) -> float:
        return self.main.recall

    @property
    def by_category(self) -> dict[str, dict[str, float | int]]:
        return self.main.by_category

    def to_json(self) -> dict[str, Any]:
        data = self.main.to_json()
        data.update(
            {
                "retrieval": self.retrieval,
                "index_backend": self.index_backend,
                "questions": self.questions,
                "entries": self.entries,
                "topics": self.topics,
                "seconds": round(self.seconds, 2),
                "consolidated": self.consolidated,
                "evidence_concentration": rounded(self.evidence_concentration),
                "word_budget": WORD_BUDGET,
                "conversations": self.conversations,
                "settings": {name: scores.to_json() for name, scores in self.scores.items() if name != DEFAULT},
                "abstention": self.abstention.to_json() if self.abstention else None,
                "answers": self.answers,
            }
        )
        return data


def mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
