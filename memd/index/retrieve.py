"""The one retrieval every reader uses: ``memd search``, ``memd ask`` and the
LoCoMo evaluation all call ``retrieve``, so what is measured is what users get.

BM25 finds candidates; then a few signals the entries carry re-rank them:
- the heading block: an entry inside a partition that matches the query as a
  whole gains part of that partition's score (context beyond one line);
- time: a query naming a month or year favours entries from that time;
- neighbours: a hit is followed by the entry just before and after it in the
  same file, since an answer often needs the turn around the matching one.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from ..timeutil import parse_time
from .base import Backend, Filters, Hit
from .records import Record


@dataclass(frozen=True)
class Options:
    """Retrieval knobs; the defaults are what ``memd search`` uses."""

    kinds: tuple[str, ...] = ("entry", "partition")
    candidates: int = 100
    neighbours: int = 0
    heading_weight: float = 0.0
    date_boost: float = 0.0
    length_alpha: float = 0.0


@dataclass(frozen=True)
class Result:
    record: Record
    score: float
    via: str = "match"  # "match" | "neighbour" | "recent"
    terms: tuple[str, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, object]:
        data = self.record.to_json()
        data.update({"score": round(self.score, 4), "via": self.via, "snippet": snippet(self.record.text, self.terms)})
        return data


def query_terms(backend: Backend, query: str) -> list[tuple[str, float]]:
    """Analysed query terms with a weight per repetition (empty for stopwords)."""
    counts = Counter(backend.analyse(query))
    return [(term, float(count)) for term, count in counts.items()]


def retrieve(backend: Backend, query: str, limit: int = 10, filters: Filters | None = None,
             options: Options | None = None) -> list[Result]:
    options = options or Options()
    filters = filters or Filters()
    terms = query_terms(backend, query)
    if not terms or limit <= 0:
        return []
    names = tuple(term for term, _ in terms)
    wanted_kinds = (filters.kind,) if filters.kind else options.kinds
    hits: list[Hit] = []
    for kind in wanted_kinds:
        hits += backend.search(terms, max(limit, options.candidates), replace(filters, kind=kind))
    scored = _rescore(hits, query, options)
    results = _dedupe([Result(hit.record, score, "match", names) for hit, score in scored])
    if options.neighbours:
        results = _with_neighbours(backend, results, options.neighbours, names, limit)
    return results[:limit]


def _dedupe(results: list[Result]) -> list[Result]:
    """Drop a hit whose lines a better hit already shows (a block and its entry)."""
    kept: list[Result] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    for result in results:
        record = result.record
        taken = spans.setdefault(record.path, [])
        if any(
            (start <= record.line and record.end_line <= end) or (record.line <= start and end <= record.end_line)
            for start, end in taken
        ):
            continue
        taken.append((record.line, record.end_line))
        kept.append(result)
    return kept


def _rescore(hits: list[Hit], query: str, options: Options) -> list[tuple[Hit, float]]:
    entry_hits = [hit for hit in hits if hit.record.kind == "entry"]
    part_hits = [hit for hit in hits if hit.record.kind == "partition"]
    block_scores: dict[tuple[str, int], float] = {}
    if options.heading_weight and part_hits:
        top = max(hit.score for hit in part_hits) or 1.0
        for hit in part_hits:
            block_scores[(hit.record.path, hit.record.line)] = hit.score / top
    wanted = _query_months(query) if options.date_boost else set()
    top_entry = max((hit.score for hit in entry_hits), default=1.0) or 1.0
    scored: list[tuple[Hit, float]] = []
    for hit in hits:
        score = hit.score
        if hit.record.kind == "entry":
            score = hit.score / top_entry
            if block_scores:
                score += options.heading_weight * _block_score(hit.record, block_scores)
            if wanted and _month_of(hit.record.time) in wanted:
                score += options.date_boost
        else:
            score = hit.score / (max(h.score for h in part_hits) or 1.0)
        if options.length_alpha:
            score /= (max(len(hit.record.text.split()), 5) / 25) ** options.length_alpha
        scored.append((hit, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0].record.rid))
    return scored


def _block_score(record: Record, blocks: dict[tuple[str, int], float]) -> float:
    best = 0.0
    for (path, line), score in blocks.items():
        if path == record.path and line <= record.line:
            best = max(best, score) if _same_block(record, line, blocks, path) else best
    return best


def _same_block(record: Record, line: int, blocks: dict[tuple[str, int], float], path: str) -> bool:
    later = [start for (p, start) in blocks if p == path and line < start <= record.line]
    return not later


_MONTH_NAMES = {calendar.month_name[i].lower(): i for i in range(1, 13)}
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")


def _query_months(query: str) -> set[tuple[int | None, int | None]]:
    lowered = query.lower()
    years = [int(y) for y in _YEAR.findall(lowered)]
    months = [_MONTH_NAMES[w] for w in re.findall(r"[a-z]+", lowered) if w in _MONTH_NAMES and w != "may"]
    months += [5] if re.search(r"\bmay\s+(19|20)\d\d\b", lowered) else []
    wanted: set[tuple[int | None, int | None]] = set()
    for year in years or [None]:
        for month in months or [None]:
            if year is not None or month is not None:
                wanted.add((year, month))
    return wanted


def _month_of(time: str | None) -> tuple[int | None, int | None] | None:
    if not time:
        return None
    try:
        moment: datetime = parse_time(time)
    except Exception:
        return None
    return (moment.year, moment.month)


def _with_neighbours(backend: Backend, results: list[Result], width: int, names: tuple[str, ...],
                     limit: int) -> list[Result]:
    out: list[Result] = []
    seen: set[str] = set()
    for result in results:
        if len(out) >= limit:
            break
        if result.record.rid in seen:
            continue
        seen.add(result.record.rid)
        out.append(result)
        if result.record.kind != "entry":
            continue
        around = _around(backend, result.record, width)
        for record in around:
            if record.rid not in seen:
                seen.add(record.rid)
                out.append(Result(record, result.score, "neighbour", names))
    return out


def _around(backend: Backend, record: Record, width: int) -> list[Record]:
    found: list[Record] = []
    for direction in ("prev", "next"):
        current = record
        for _ in range(width):
            rid = getattr(current, direction)
            if rid is None:
                break
            nxt = backend.get([rid]).get(rid)
            if nxt is None:
                break
            found.append(nxt)
            current = nxt
    return found


_WORD = re.compile(r"\w+")


def snippet(text: str, terms: Sequence[str], width: int = 160) -> str:
    """A one-line window of ``text`` around the first query term (by stem prefix)."""
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    lowered = flat.lower()
    at = -1
    for term in terms:
        match = re.search(r"\b" + re.escape(term[:5].lower()), lowered)
        if match and (at < 0 or match.start() < at):
            at = match.start()
    start = max(0, min(at - width // 3, len(flat) - width)) if at >= 0 else 0
    piece = flat[start : start + width]
    return ("…" if start > 0 else "") + piece + ("…" if start + width < len(flat) else "")
