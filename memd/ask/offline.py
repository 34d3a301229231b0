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
instead of quoting it as an answer.

A question naming a time ("what did I do last May?", resolved against now or
``asked_on``: memd/core/timeexpr.py) is answered from the entries of that time;
"when ...?" is answered with dates as a person writes them; a question about
the present ("my new address") leads with the newest value and marks the
others as earlier ones; lines sharing no content word with the question stay
out of the answer's text (not out of its evidence). With a model, ``memd.ask.agent`` gathers evidence with
the same tools and this answer is its floor (see answering.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date
from typing import Any

from memd.ask.answer import Answer, Evidence
from memd.ask.coverage import ALIAS_SAID, ALIAS_WORDS, covers, names
from memd.ask.dates import quote
from memd.core.asked import Asked, in_span, question_time
from memd.core.timeexpr import Span
from memd.core.timeutil import as_datetime, now, time_or_none
from memd.core.tokens import count_tokens
from memd.index import IndexStore
from memd.index.records import Record, when_spans
from memd.index.retrieve import QUESTION_WORDS, Options, Result, query_terms, retrieve
from memd.index.signals import asks
from memd.index.spelling import respell
from memd.vault.vault import Vault

EVIDENCE_TOKENS = 1500
ANSWER_ENTRIES = 3
# After the best ANSWER_ENTRIES, an answer quotes more (up to ANSWER_MOST) while it stays
# within ANSWER_WORDS words: short entries (chat turns) leave room for the one that answers.
ANSWER_WORDS = 100
ANSWER_MOST = 5
RECENT_ENTRIES = 5
CANDIDATES = 20
NOTHING = "Nothing in memory answers this"  # how an answer says the vault holds none
SUPPORT_SHARE = 0.5  # an entry scoring under half the best one does not support the answer


def ask(
    vault: Vault,
    question: str,
    budget: int = EVIDENCE_TOKENS,
    *,
    store: IndexStore | None = None,
    today: date | None = None,
) -> Answer:
    """The extractive answer; ``today`` is the day a time the question names
    ("last May") is read against (default: now, or the day ``asked_on`` set)."""
    today = today or asked_today()
    own = store is None
    store = store or IndexStore(vault)
    try:
        backend = store.backend()
        # Judged as searched: a misspelt word the vault holds nowhere would count as asked and not found.
        read = respell(question, backend.analyse, backend.doc_freq).query
        asked = question_time(read, today)
        results = retrieve(backend, read, CANDIDATES, options=Options(respell=False))  # read once, above
        words = {term for term, _ in query_terms(backend, read)}
        recent = _recent(backend, words)
        topic = read  # the question without the time it names: what is asked about that time
        timed: list[Result] = []
        alias = bool(_ALIAS_ASKED.search(question))
        if asked is not None:
            topic = _without(read, asked)
            timed = _in_time(backend, topic, asked.span, [*results, *recent])
        about_time = bool(timed) and not _content(backend, topic)  # "what did I do in May?"
        if timed and not about_time and not covers(backend, topic, [r.record for r in timed], alias):
            timed = []  # nothing of that time answers: the question is judged whole, as if it named none
        if not timed:
            topic = read
        if alias:
            results = _aliases_first(backend, read, results)
        matched = [r for r in results if _said(r.record)] or [r for r in recent if _said(r.record)]
        if timed:  # what the question asks about, from the time it names
            matched = timed
        evidence = _gather(backend, [*matched, *results, *recent] if timed else [*results, *recent], budget)
        content = _content(backend, read)
        current = bool(_CURRENT.search(question))
        spoken = bool(_WHEN_ASKED.search(question))
        support = _support(
            [Evidence(r.record, r.score, r.via) for r in matched],
            dated=bool(timed),
            about_time=about_time,
            current=current,
            spoken=spoken,
        )
        # A question about a time alone is answered by any entry of that time.
        answers = about_time or covers(backend, topic, [r.record for r in matched], alias)
    finally:
        if own:
            store.close()
    if not evidence:
        return Answer(question, False, f"Nothing relevant found in memory for: {question.strip()}", (), ())
    if not answers:
        closest = matched[0].record if matched else evidence[0].record
        text = f"{NOTHING}; closest: {quote(closest)}"
        return Answer(question, False, text, (), tuple(evidence))
    if not about_time:  # evidence chosen for the time alone shares no word with the question, by design
        support = _sharing(backend, support, content, alias)
    return Answer(question, True, _render(support, evidence, spoken, current), tuple(support), tuple(evidence))


_asked_on: ContextVar[date | None] = ContextVar("asked_on", default=None)


def asked_today() -> date:
    """The day a question is asked on: the one ``asked_on`` set, else today."""
    return _asked_on.get() or now().date()


@contextmanager
def asked_on(day: date | None) -> Iterator[None]:
    """Questions asked inside read the times they name against ``day`` (an
    ask ``--as-of`` a date asks as on that day), not against now."""
    token = _asked_on.set(day)
    try:
        yield
    finally:
        _asked_on.reset(token)


# Questions about the present value of something that changes: the newest entry answers, older ones are history.
_CURRENT = re.compile(
    r"\b(?:now|new|newest|current|currently|still|latest|these days|nowadays|anymore|any more|today)\b", re.I
)
# Questions asking what someone or something is called, and the phrasings that tell it.
_ALIAS_ASKED = re.compile(
    r"\b(?i:(?:real|full|actual|proper|given|birth|maiden|nick)\s*name|nicknamed?|alias|go(?:es)? by|known as"
    r"|short for)\b|\b[A-Z][a-z]+(?:'s)?\s+(?i:called|named)\b"
)
# "When ...?" and its kin ask for a date: the answer gives it as a person writes it.
_WHEN_ASKED = re.compile(
    r"^\W*(?:when\b|what (?:date|day|year|month|time)\b|which (?:date|day|year|month)\b|how long ago\b)", re.I
)
TIME_CANDIDATES = 200  # entries of the time a question names that are read, at most
TIME_ENTRIES = 5  # quoted for a question about a time alone ("what did I do in May?")


def _said(record: Record) -> bool:
    """A record that answers in its own words: an entry, or lines a person wrote with
    no entry among them (a section of entries is quoted through its entries)."""
    return record.kind == "entry" or not record.seqs


def _content(backend: Any, question: str) -> set[str]:
    """The question's content words, analysed (the names in it included; the words of asking not)."""
    dropped = set(backend.analyse(QUESTION_WORDS))
    return {term for term in backend.analyse(question) if term not in dropped}


def _without(question: str, asked: Asked) -> str:
    """The question with the times it names blanked out."""
    text = question
    for start, end in sorted([(asked.start, asked.end), *asked.others], reverse=True):
        text = f"{text[:start]} {text[end:]}"
    return text


def entry_day(record: Record) -> Span | None:
    """The days an entry speaks of: those its ``when=`` names, else the day it was written."""
    spans = when_spans(record)
    if spans:
        return min(spans)
    moment = time_or_none(record.time)
    return Span(moment.date(), moment.date()) if moment else None


def _in_time(backend: Any, topic: str, span: Span, found: list[Result]) -> list[Result]:
    """The entries of the asked time: first those found for the question, in
    their order, then those a search of that time finds that say something of
    what the question asks about it (a word of it other than the names in it,
    where it has one). A question about the time alone ("what did I do in
    May?") has every entry of it, in the order they happened."""
    from memd.index.base import Filters

    def of_time(record: Record) -> bool:
        moment = time_or_none(record.time)
        return record.kind == "entry" and in_span(when_spans(record), moment.date() if moment else None, span)

    content = _content(backend, topic)
    named = _content(backend, " ".join(names(topic)))
    about = (content - named) or content

    def about_it(item: Any) -> bool:
        return not about or not about.isdisjoint(_terms(backend, item))

    chosen = [r for r in found if of_time(r.record)]  # found for the question: by its words or their meaning
    # Every entry holds the years it was written in and speaks of (its context field): those
    # words and the filter find the entries of the time, whatever their other words.
    years = {str(year) for year in range(span.start.year, span.end.year + 1)}
    terms = [(term, 1.0) for term in sorted({*content, *backend.analyse(" ".join(sorted(years)))})]
    since, until = as_datetime(span.start), as_datetime(span.end, end=True)
    hits = backend.search(terms, TIME_CANDIDATES, Filters(since=since, until=until, kind="entry"))
    # Scored 0, below anything retrieval found (their BM25 scores are on another scale), kept in their order.
    chosen += [Result(hit.record, 0.0, "time") for hit in hits if of_time(hit.record) and about_it(hit)]
    seen: set[str] = set()
    unique = [r for r in chosen if not (r.record.rid in seen or seen.add(r.record.rid))]  # type: ignore[func-returns-value]
    return unique if content else sorted(unique, key=lambda r: _order(r.record))


def _order(record: Record) -> tuple[str, str, int]:
    day = entry_day(record)
    return (day.start.isoformat() if day else "", record.time or "", max(record.seqs, default=0))


def _terms(backend: Any, item: Any) -> set[str]:
    return set(backend.analyse(item.record.text))


def _aliases_first(backend: Any, question: str, results: list[Result]) -> list[Result]:
    """For "what is Bart's real name?": entries that tell what someone goes by
    ("Bartholomew goes by Bart") and share a word with the question come first,
    found too when the question's own words ("real", "name") are not theirs."""
    extra = retrieve(backend, f"{question} {ALIAS_WORDS}", CANDIDATES, options=Options(respell=False))
    content = _content(backend, question) - set(backend.analyse(ALIAS_WORDS))
    pool = {r.record.rid: r for r in [*results, *extra]}
    telling = [
        r
        for r in pool.values()
        if r.record.kind == "entry"
        and ALIAS_SAID.search(r.record.text)
        and not asks(r.record.text)  # "What is it called?" tells no name
        and not content.isdisjoint(_terms(backend, r))
    ]
    first = {r.record.rid for r in telling}
    return telling + [r for r in results if r.record.rid not in first]


def _sharing(backend: Any, support: list[Evidence], content: set[str], alias: bool) -> list[Evidence]:
    """The supporting entries that share a content word with the question (an
    entry found by meaning alone may share none: it stays in the evidence, out
    of the answer's text); all of them when none does."""
    if alias:  # asked what someone is called: the entries telling it, when there are any
        telling = [e for e in support if ALIAS_SAID.search(e.record.text)]
        support = telling or support
    if not content:
        return support
    kept = [e for e in support if not content.isdisjoint(_terms(backend, e))]
    return kept or support[:1]


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


def _support(
    entries: list[Evidence],
    *,
    dated: bool = False,
    about_time: bool = False,
    current: bool = False,
    spoken: bool = False,
) -> list[Evidence]:
    """The few best entries (ANSWER_ENTRIES, and more while short), weak ones left out, newest first; for a question
    about a time (``dated``), its entries in the order they happened; for one
    about the present value of something (``current``), newest first by when
    they were written and then by arrival (seq), so the current value leads."""
    if about_time:  # all alike: the first few, in the order they happened
        return sorted(entries[:TIME_ENTRIES], key=lambda e: _order(e.record))
    ranked = sorted(entries, key=lambda e: -e.score)
    floor = SUPPORT_SHARE * ranked[0].score if ranked else 0.0
    best: list[Evidence] = []
    words = 0
    for entry in ranked:
        if entry.score < floor or len(best) >= ANSWER_MOST:
            break
        # Counted as the answer shows it (``spoken`` dates written out, "earlier:" before older values).
        cost = len(quote(entry.record, spoken).split()) + (1 if current and best else 0)
        if len(best) >= ANSWER_ENTRIES and words + cost > ANSWER_WORDS:
            break
        best.append(entry)
        words += cost
    if dated:  # the best few of the time asked about, in the order they happened
        return sorted(best, key=lambda e: _order(e.record))
    if current:
        return sorted(best, key=lambda e: (e.record.time or "", max(e.record.seqs, default=0)), reverse=True)
    return sorted(best, key=lambda e: e.record.time or "", reverse=True)


def _render(support: list[Evidence], evidence: list[Evidence], spoken: bool = False, current: bool = False) -> str:
    """The supporting entries quoted, one a line; for "when ...?", each dated as
    a person writes a date; for a question about the present, the newest
    first and the others marked as earlier values."""
    if not support:
        return "The closest memories are cited below."
    lines = [quote(item.record, spoken) for item in support]
    if current and len(lines) > 1:
        lines = [lines[0], *(f"earlier: {line}" for line in lines[1:])]
    return "\n".join(lines)
