"""The signals that re-rank retrieval candidates once they have a base score
(see ``memd.index.retrieve`` for the order they run in and why each is kept):
neighbours, speakers, sessions, and the dates a query names; plus the filter
test that candidates joining late (neighbours, meaning) must pass too.

Each takes and returns ``(hit, score)`` pairs, best first; ``replies`` runs
on the ranked results, and only moves a reply up next to its question;
``evidence_first`` places the final order: matches before weaker guesses,
evidence before context.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol, TypeVar

from memd.core.timeutil import MONTH_NAMES, time_or_none
from memd.index.base import Backend, Filters, Hit
from memd.index.records import Record, when_spans
from memd.index.sentences import speaker

Scored = list[tuple[Hit, float]]


class _HasRecord(Protocol):
    @property
    def record(self) -> Record: ...


Ranked = TypeVar("Ranked", bound=_HasRecord)  # a hit or a result: anything ranked that holds a record
NEIGHBOUR_SOURCES = 60  # entries whose unmatched neighbours may join the candidates


def neighbours(
    backend: Backend, scored: Scored, filters: Filters, share: float, gap_hours: float, join: bool = True
) -> Scored:
    """Each entry gains a share of its best seq-adjacent entry's score; adjacent
    entries that did not match at all join the candidates this way."""
    entries = {pair[0].record.rid: pair for pair in scored if pair[0].record.kind == "entry"}
    if not entries:
        return scored
    by_seq: dict[int, str] = {}
    for rid, (hit, _) in entries.items():
        for seq in hit.record.seqs:
            by_seq.setdefault(seq, rid)
    wanted: set[int] = set()
    # Only the best entries bring their unmatched neighbours in: one far down
    # the list would not lift a neighbour into view, and each costs a lookup.
    leading = sorted(entries.values(), key=lambda pair: -pair[1])[:NEIGHBOUR_SOURCES]
    for hit, _ in leading:
        if hit.record.seqs:
            wanted |= {min(hit.record.seqs) - 1, max(hit.record.seqs) + 1}
    missing = {seq for seq in wanted if seq > 0 and seq not in by_seq}
    extra: dict[str, tuple[Hit, float]] = {}
    for record in backend.by_seq(missing if join else ()):
        if record.rid not in entries and record.rid not in extra and passes(record, filters):
            extra[record.rid] = (Hit(record, 0.0), 0.0)
            for seq in record.seqs:
                by_seq.setdefault(seq, record.rid)
    pool = {**entries, **extra}
    base = {rid: score for rid, (_, score) in pool.items()}
    smoothed: list[tuple[Hit, float]] = [pair for pair in scored if pair[0].record.kind != "entry"]
    for rid, (hit, score) in pool.items():
        best = 0.0
        if hit.record.seqs:
            for seq in (min(hit.record.seqs) - 1, max(hit.record.seqs) + 1):
                other = by_seq.get(seq)
                if other and other != rid and _close(hit.record, pool[other][0].record, gap_hours):
                    best = max(best, base[other])
        smoothed.append((hit, score + share * best))
    smoothed.sort(key=lambda pair: (-pair[1], pair[0].record.rid))
    return smoothed


def speaker_of(record: Record) -> str | None:
    """Who said a transcript entry ("Ana: what she said"), if it has that shape."""
    if record.kind != "entry":
        return None
    return speaker(record.text)


def speakers(scored: Scored, query: str, share: float) -> Scored:
    """Entries said by a speaker the query names gain ``share``. A question
    naming someone is mostly answered by what they said, rather than by what
    others said to or about them; when every candidate speaker is named (or
    none), nothing changes."""
    said_by = [speaker_of(hit.record) for hit, _ in scored]
    present = {name for name in said_by if name}
    lowered = query.lower()
    # "Ana's" is one word here, so a possessive does not name Ana: what is asked about
    # someone's things ("Ana's new bike") is as often told by the others (counting it
    # lowered the informal chats' recall, 0.811 -> 0.778, for +0.0007 on LoCoMo).
    words = set(re.findall(r"[\w'-]+", lowered))
    named = {name for name in present if (name.lower() in lowered if " " in name else name.lower() in words)}
    if not named or named == present:
        return scored
    out = [(hit, score + share if name in named else score) for (hit, score), name in zip(scored, said_by, strict=True)]
    out.sort(key=lambda pair: (-pair[1], pair[0].record.rid))
    return out


def sessions(scored: Scored, weight: float) -> Scored:
    """Entries stamped with the same time were written together (one import,
    one ``memd add``): a session where several entries match is likely the one
    the question is about, so each of its entries gains with the session's
    strength (the sum of its three best scores, scaled to the best session)."""
    groups: dict[str, list[float]] = {}
    for hit, score in scored:
        if hit.record.kind == "entry" and hit.record.time:
            groups.setdefault(hit.record.time, []).append(score)
    strength = {key: sum(sorted(values, reverse=True)[:3]) for key, values in groups.items()}
    top = max(strength.values(), default=1.0) or 1.0
    out = [
        (hit, score + weight * strength.get(hit.record.time or "", 0.0) / top if hit.record.kind == "entry" else score)
        for hit, score in scored
    ]
    out.sort(key=lambda pair: (-pair[1], pair[0].record.rid))
    return out


def replies(results: list[Ranked], depth: int, within: int) -> list[Ranked]:
    """A result near the top that ends in a question is followed by its reply,
    when the reply is itself among the first ``within`` results: a question
    turn matches a question's words best, but what answers it is the next
    turn ("How often do you work out?" - "Three times a week"), which its own
    words rarely rank as high. Only the first ``depth`` results bring theirs
    along, so a long list of questions does not push the answers out."""
    if depth <= 0:
        return results
    by_seq: dict[int, int] = {}
    for i, item in enumerate(results[:within]):
        if item.record.kind == "entry":
            for seq in item.record.seqs:
                by_seq.setdefault(seq, i)
    out: list[Ranked] = []
    placed: set[int] = set()
    for i, item in enumerate(results):
        if i in placed:
            continue
        out.append(item)
        placed.add(i)
        asked = item.record
        if i >= depth or asked.kind != "entry" or not asked.seqs or not asks(asked.text):
            continue
        j = by_seq.get(max(asked.seqs) + 1)
        if j is not None and j not in placed and _answers(results[j].record, asked):
            out.append(results[j])
            placed.add(j)
    return out


def evidence_first(
    results: list[Ranked],
    matches: Callable[[Ranked], bool],
    context: Callable[[Ranked], bool],
    score: Callable[[Ranked], float],
    limit: int | None = None,
) -> list[Ranked]:
    """The final placement, so that what a reader sees first is what matched.

    - A result holding the query's words (``matches``) is never placed below a
      result that holds none of them and scored lower (one found by meaning
      alone): demoting repetition reorders matches, it never buries one under
      a weaker guess.
    - Context (a neighbour or reply holding none of the query's words) follows
      after every other result, in the order of the hits it belongs to.
      Context whose hit is not among the results, or that gained nothing from
      it (score 0: the hit was written too long before or after), is left
      out: it never stands alone.

    With ``limit``, only the first ``limit`` places are settled (the rest
    follow in no promised order): places are only ever added at the end, so
    once ``limit`` are taken nothing further down can change them, and
    ``matches`` and ``context`` (which read a text's words) are not asked of
    the hundreds of candidates below."""
    evidence: list[Ranked] = []
    waiting: list[Ranked] = []  # results found by meaning alone, held above no stronger match
    for n, item in enumerate(results):
        if limit is not None and len(evidence) >= limit:
            return evidence + waiting + results[n:]
        if context(item):
            continue
        if not matches(item):
            waiting.append(item)
            continue
        evidence += [other for other in waiting if score(other) >= score(item)]
        waiting = [other for other in waiting if score(other) < score(item)]
        evidence.append(item)
    evidence += waiting
    at: dict[int, int] = {}
    for i, item in enumerate(evidence):
        if item.record.kind == "entry":
            for seq in item.record.seqs:
                at.setdefault(seq, i)
    tail: list[tuple[int, int, Ranked]] = []
    for order, item in enumerate(results):
        if not context(item) or score(item) <= 0 or not item.record.seqs:
            continue
        near = [at[seq] for seq in (min(item.record.seqs) - 1, max(item.record.seqs) + 1) if seq in at]
        if near:
            tail.append((min(near), order, item))
    tail.sort(key=lambda placed: (placed[0], placed[1]))
    return evidence + [item for _, _, item in tail]


# "How's it going?" asks after nothing in particular: what follows it is news, not an answer.
_GREETING = re.compile(
    r"\b(?:how(?:'s| is) it going|how(?: are|'re)? (?:you|ya)(?: doing)?|how(?: have|'ve)? (?:you|ya) been|"
    r"how(?:'s| is| are| have| has)? (?:things|everything|life)(?: been| going)?|what's (?:up|new)|"
    r"what is (?:up|new))\W*$",
    re.IGNORECASE,
)
_ASIDE = re.compile(r"\s*\[[^\[\]]*\]\s*$")  # a trailing aside: "[image]", "[shares a photo: ...]"


def asks(text: str) -> bool:
    """Whether ``text`` leaves a question open: a "?" that no statement (a full
    stop) follows, and not a greeting's. "Did you go? So cool!" still asks; "Did
    you go? I did." does not, nor does "Hey John, how's it going? I took a
    writing class!": the reply to a greeting is news of its own, as likely
    as any other turn to be what a search looks for."""
    body = _ASIDE.sub("", text)
    mark = body.rfind("?")
    if mark < 0 or mark < body.rfind("."):
        return False
    opens = max(body.rfind(end, 0, mark) for end in ".!?") + 1
    return not _GREETING.search(body[opens:mark])


def _answers(reply: Record, asked: Record) -> bool:
    """Whether the next entry is a reply: written in the same session, and by
    someone else when the entries name speakers."""
    if reply.time != asked.time:
        return False
    first, second = speaker_of(asked), speaker_of(reply)
    return first is None or second is None or first != second


def passes(record: Record, filters: Filters) -> bool:
    if filters.source and record.source != filters.source:
        return False
    if filters.doc and record.doc != filters.doc:
        return False
    if filters.since or filters.until:
        return _written_in(record, filters) or _names_day_in(record, filters)
    return True


def _written_in(record: Record, filters: Filters) -> bool:
    moment = time_or_none(record.time)
    if moment is None:
        return False
    return not ((filters.since and moment < filters.since) or (filters.until and moment > filters.until))


def _names_day_in(record: Record, filters: Filters) -> bool:
    since = filters.since.date() if filters.since else None
    until = filters.until.date() if filters.until else None
    return any(
        (until is None or span.start <= until) and (since is None or span.end >= since) for span in when_spans(record)
    )


def _close(a: Record, b: Record, hours: float) -> bool:
    first, second = time_or_none(a.time), time_or_none(b.time)
    if first is None or second is None:
        return True
    return abs((first - second).total_seconds()) <= hours * 3600


_MONTH_NAMES = {name.lower(): i for i, name in enumerate(MONTH_NAMES, 1)}


_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_MAY = re.compile(
    r"\bmay,?\s+(?:(?:19|20)\d\d|\d{1,2}(?:st|nd|rd|th)?)\b"
    r"|\b(?:in|during|last|this|next|since|until|till|early|mid|late|of|through|from|by|before|after)\s+may\b"
)


def query_dates(query: str) -> set[tuple[int | None, int | None]]:
    """(year, month) pairs a query names; ``None`` is "any". "may" counts as a
    month only where a month's words stand around it: a year or a day after it
    ("May 2025", "May 3rd"), or a word that introduces a time before it ("in
    May", "last May", "early May"), since it is far more often a verb."""
    lowered = query.lower()
    years = [int(y) for y in _YEAR.findall(lowered)]
    months = [_MONTH_NAMES[w] for w in re.findall(r"[a-z]+", lowered) if w in _MONTH_NAMES and w != "may"]
    months += [5] if _MAY.search(lowered) else []
    any_year: list[int | None] = [None]
    any_month: list[int | None] = [None]
    return {(y, m) for y in (years or any_year) for m in (months or any_month) if y is not None or m is not None}


def in_dates(record: Record, wanted: set[tuple[int | None, int | None]]) -> bool:
    """Written in a month or year the query names, or naming a day in it."""
    moment = time_or_none(record.time)
    months = {(moment.year, moment.month)} if moment else set()
    for span in when_spans(record):
        if (span.end - span.start).days <= 62:
            months |= {(span.start.year, span.start.month), (span.end.year, span.end.month)}
    return any((y is None or y == year) and (m is None or m == month) for y, m in wanted for year, month in months)
