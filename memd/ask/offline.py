"""``memd ask`` with the offline engine: evidence, then an extractive answer.

Evidence comes from the same retrieval ``memd search`` uses plus the most
recent CURRENT entries that share a word with the question (new memories
must be answerable before any consolidation). Entry hits in topics widen to
their heading block, hits in CURRENT to their neighbours; blocks are
de-duplicated and kept within a token budget. The answer quotes the best
supporting entries, newest first, since a newer statement supersedes an older
one on the same subject, dated by the day they speak of (``when=``) where they
name one, else by when they were written. When the evidence does not cover the
question (see ``covers``), the answer says so and names the closest memory
instead of quoting it as an answer. With a model, ``memd.ask.agent`` gathers evidence with
the same tools and this answer is its floor (see answering.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from memd.core.tokens import count_tokens
from memd.index import IndexStore
from memd.index.records import Record
from memd.index.retrieve import Options, Result, query_terms, retrieve
from memd.index.sentences import told
from memd.index.signals import speaker_of
from memd.index.spelling import respell
from memd.vault.vault import Vault

EVIDENCE_TOKENS = 1500
ANSWER_ENTRIES = 3
RECENT_ENTRIES = 5
CANDIDATES = 20
NOTHING = "Nothing in memory answers this"  # how an answer says the vault holds none
SUPPORT_SHARE = 0.5  # an entry scoring under half the best one does not support the answer
# Abstention, measured with `memd eval locomo` on the dev slice's unanswerable
# questions against its answerable ones (see the README): the first entries
# whose coverage of the question is compared, and the share of the best
# coverage that what is said about the person asked about must reach (both
# halves of the slice meet the targets anywhere from 0.625 to 0.75; this is
# the end with fewer answerable questions refused).
COVER_ENTRIES = 6
NAMED_SHARE = 0.625


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


def ask(vault: Vault, question: str, budget: int = EVIDENCE_TOKENS, *, store: IndexStore | None = None) -> Answer:
    own = store is None
    store = store or IndexStore(vault)
    try:
        backend = store.backend()
        # Judged as searched: a misspelt word the vault holds nowhere would count as asked and not found.
        read = respell(question, backend.analyse, backend.doc_freq).query
        results = retrieve(backend, read, CANDIDATES, options=Options(respell=False))  # read once, above
        words = {term for term, _ in query_terms(backend, read)}
        recent = _recent(backend, words)
        evidence = _gather(backend, [*results, *recent], budget)
        matched = [r for r in results if r.record.kind == "entry"] or [r for r in recent if r.record.kind == "entry"]
        support = _support([Evidence(r.record, r.score, r.via) for r in matched])
        answers = covers(backend, read, [r.record for r in matched])
    finally:
        if own:
            store.close()
    if not evidence:
        return Answer(question, False, f"Nothing relevant found in memory for: {question.strip()}", (), ())
    if not answers:
        closest = matched[0].record if matched else evidence[0].record
        text = f"{NOTHING}; closest: {quote(closest)}"
        return Answer(question, False, text, (), tuple(evidence))
    return Answer(question, True, _render(support, evidence), tuple(support), tuple(evidence))


_WORD = re.compile(r"[A-Za-z][\w'-]*")


def covers(backend: Any, question: str, entries: Sequence[Record]) -> bool:
    """Whether the entries found answer the question at all, by how much of its
    content they hold (each word weighted by its rarity, so "blood" counts for
    more than "like"). Two ways they fail:

    - none of them holds any of the question's content words (the names it
      asks about aside): "What is Dana's blood type?" over entries that only
      share "Dana";
    - the question names people who speak in the vault, and what is said about
      them among the first entries covers its content clearly less than the
      best entry does: "What did Caroline realize after her charity race?"
      when the race was Melanie's. What is said about a person is what they
      say of themselves, and what others say to them: "Caroline: Did you run
      the race?" is about Melanie, not Caroline (``sentences.told``)."""
    names = {token.split("'")[0].lower() for token in _WORD.findall(question)[1:] if token[0].isupper()}
    named_terms = set(backend.analyse(" ".join(names))) if names else set()
    content = [term for term, _ in query_terms(backend, question) if term not in named_terms]
    if not content:
        return bool(entries)  # only names (and question words): any entry about them is an answer
    weights = {term: max(backend.idf(term), 1e-6) for term in content}
    total = sum(weights.values())

    def coverage(text: str) -> float:
        held = set(backend.analyse(text)) if text else set()
        return sum(weight for term, weight in weights.items() if term in held) / total

    first = entries[:COVER_ENTRIES]
    best = max((coverage(entry.text) for entry in first), default=0.0)
    if not best and not any(coverage(entry.text) for entry in entries[COVER_ENTRIES:]):
        return False
    speakers = [speaker_of(entry) for entry in first]
    if not any(s is not None and s.lower().split()[0] in names for s in speakers):
        return True  # the question names no one who speaks here: coverage alone decides
    about_named = 0.0
    for entry, said_by in zip(first, speakers, strict=True):
        if said_by is None:
            about_named = max(about_named, coverage(entry.text))
            continue
        own, said_to = told(entry.text)
        about_named = max(about_named, coverage(own if said_by.lower().split()[0] in names else said_to))
    return about_named >= NAMED_SHARE * best


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
    return "\n".join(quote(item.record) for item in support)


def quote(record: Record) -> str:
    """An entry's words, the day it speaks of (``when=``) or else the day it was written, and its citation."""
    day = dict(record.extra).get("when") or (record.time[:10] if record.time else None)
    when = f" ({day})" if day else ""
    return f"{' '.join(record.text.split())}{when} [{record.cite}]"
