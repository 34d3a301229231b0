"""``memd ask`` with the offline engine: evidence, then an extractive answer.

Evidence comes from the same retrieval ``memd search`` uses plus the most
recent CURRENT entries that share a word with the question (new memories
must be answerable before any consolidation). Entry hits in topics widen to
their heading block, hits in CURRENT to their neighbours; blocks are
de-duplicated and kept within a token budget. The answer quotes the best
supporting entries, newest first, since a newer statement supersedes an older
one on the same subject. With a model, ``memd.ask.agent`` gathers evidence with
the same tools and this answer is its floor (see answering.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memd.core.tokens import count_tokens
from memd.index import IndexStore
from memd.index.records import Record
from memd.index.retrieve import Result, query_terms, retrieve
from memd.vault.vault import Vault

EVIDENCE_TOKENS = 1500
ANSWER_ENTRIES = 3
RECENT_ENTRIES = 5
CANDIDATES = 20
SUPPORT_SHARE = 0.5  # an entry scoring under half the best one does not support the answer


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
        }


def ask(vault: Vault, question: str, budget: int = EVIDENCE_TOKENS, *, store: IndexStore | None = None) -> Answer:
    own = store is None
    store = store or IndexStore(vault)
    try:
        backend = store.backend()
        results = retrieve(backend, question, CANDIDATES)
        words = {term for term, _ in query_terms(backend, question)}
        recent = _recent(backend, words)
        evidence = _gather(backend, [*results, *recent], budget)
        matched = [r for r in results if r.record.kind == "entry"] or [r for r in recent if r.record.kind == "entry"]
        support = _support([Evidence(r.record, r.score, r.via) for r in matched])
        answers = _speaks_to(backend, words, support)
    finally:
        if own:
            store.close()
    if not evidence:
        return Answer(question, False, f"Nothing relevant found in memory for: {question.strip()}", (), ())
    if not answers:
        text = "No memory answers this directly; the closest memories are cited below."
        return Answer(question, False, text, (), tuple(evidence))
    return Answer(question, True, _render(support, evidence), tuple(support), tuple(evidence))


def _speaks_to(backend: Any, words: set[str], support: list[Evidence]) -> bool:
    """Whether the evidence answers the question at all: some supporting entry
    holds at least half of the question's words. An entry that shares only a
    name the whole vault mentions ("what is Dana's favourite colour?") does not."""
    if not words:
        return False
    return any(2 * len(words & set(backend.analyse(item.record.text))) >= len(words) for item in support)


def _recent(backend: Any, words: set[str]) -> list[Result]:
    """The last CURRENT entries that share an analysed word with the question."""
    from memd.index.base import Filters

    if not words:
        return []
    hits = backend.search([(w, 1.0) for w in words], 200, Filters(doc="CURRENT", kind="entry"))
    hits.sort(key=lambda hit: hit.record.line, reverse=True)
    return [Result(hit.record, hit.score, "recent") for hit in hits[:RECENT_ENTRIES]]


def _gather(backend: Any, results: list[Result], budget: int) -> list[Evidence]:
    """Widen, de-duplicate and budget the evidence, best first."""
    chosen: list[Evidence] = []
    covered: set[tuple[str, int]] = set()  # (path, line) of every line already cited
    spent = 0
    for result in results:
        record = _widen(backend, result.record)
        if spent + count_tokens(record.text) > budget:
            record = result.record  # the whole block does not fit: keep just the entry
        span = {(record.path, n) for n in range(record.line, record.end_line + 1)}
        cost = count_tokens(record.text)
        if span <= covered or (chosen and spent + cost > budget):
            continue
        covered |= span
        spent += cost
        chosen.append(Evidence(record, result.score, "block" if record is not result.record else result.via))
    return chosen


def _widen(backend: Any, record: Record) -> Record:
    """An entry in a topic widens to its heading block (the partition record)."""
    if record.kind != "entry" or record.block is None:
        return record
    return backend.get([record.block]).get(record.block, record)


def _support(entries: list[Evidence]) -> list[Evidence]:
    """The few best entries, weak ones left out, newest first."""
    ranked = sorted(entries, key=lambda e: -e.score)
    floor = SUPPORT_SHARE * ranked[0].score if ranked else 0.0
    best = [e for e in ranked if e.score >= floor][:ANSWER_ENTRIES]
    return sorted(best, key=lambda e: e.record.time or "", reverse=True)


def _render(support: list[Evidence], evidence: list[Evidence]) -> str:
    if not support:
        return "The closest memories are cited below."
    lines = []
    for item in support:
        when = f" ({item.record.time[:10]})" if item.record.time else ""
        lines.append(f"{' '.join(item.record.text.split())}{when} [{item.record.cite}]")
    return "\n".join(lines)
