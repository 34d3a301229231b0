"""The one retrieval every reader uses: ``memd search``, ``memd ask`` and the
LoCoMo evaluation all call ``retrieve``, so what is measured is what users get.

Candidates come two ways: BM25 over words (question words like "what did
she" are dropped from the query first), and, when the vault's embedding
model is installed, the records nearest the query in meaning. Each gets its
BM25 score scaled to the best hit (1.0) plus 0.75 x (similarity / the best
similarity)^3: the power keeps only the closest few in meaning strong, so
meaning decides between near-equal word matches and brings in the entries
that say the thing in other words. A candidate of several sentences gains
half the lead its closest sentence has over it as a whole (a sentence that
answers is diluted by the others in the record's own vector). (Measured
against reciprocal rank fusion, min-max scaling, and meaning as a mere
candidate source: see the README.)
Then signals the entries carry re-rank them:
- neighbours: an entry gains part of the score of the entry written just
  before or after it (seq order is arrival order, so in a conversation that
  is the turn around it: a question's answer, an answer's question);
- speakers: in a transcript ("Ana: ...") a question naming a speaker is
  mostly answered by what that speaker said, not by what others said to or
  about them, so their entries gain (only when the candidates hold other
  speakers too);
- sessions: entries stamped with the same time were written together; a
  session where several entries match lifts all of its entries;
- time: a query naming a month or a year favours entries written then, or
  naming a day then ("yesterday", resolved when written: ``when=``);
- blocks: a heading partition that holds entries is shown through those
  entries (shorter to read, exact to cite); prose partitions are results too;
- repeats: a result that mostly repeats the words of a better one moves down.
- replies: a result near the top that ends in a question is followed by its
  reply (the next turn), which its own words rarely rank as high.
Last, evidence first: a result holding the query's words is never placed
below a weaker one found by meaning alone, and a neighbour or reply holding
none of the query's words comes after every other result, in the order of the
hit it belongs to, and never without that hit.
The heading an entry sits under is part of what BM25 matches (its own field).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memd.index import signals
from memd.index.base import Backend, Filters, Hit
from memd.index.diversify import distinct_terms, diversify
from memd.index.records import Record
from memd.index.spelling import respell


@dataclass(frozen=True)
class Options:
    """Retrieval knobs; the defaults are what ``memd search`` uses (each one
    measured with ``memd eval locomo``, see the README)."""

    kinds: tuple[str, ...] = ("entry", "partition")
    candidates: int = 200
    question_words: bool = True
    neighbour_share: float = 0.45  # of the best adjacent entry's score
    neighbour_gap_hours: float = 12.0  # entries further apart in time are not neighbours
    date_boost: float = 0.6
    prose_partitions_only: bool = True
    neighbours_join: bool = True
    session_weight: float = 0.3  # of the best-matching session's strength
    diversity: float = 0.8  # MMR: penalty per unit of word overlap with a better result
    speaker_share: float = 0.2  # added for an entry said by a speaker the query names
    # Meaning: "weighted" adds semantic similarity to the BM25 score, "rrf" fuses
    # the two rankings by reciprocal rank, "candidates" lets the semantic top
    # join the candidates but ranks by BM25 only, "off" is words only.
    fusion: str = "weighted"
    semantic_weight: float = 0.75  # for the most similar candidate, against 1.0 for the best BM25 hit
    semantic_candidates: int = 100
    semantic_scale: str = "top"  # "top": similarity / the best one's; "minmax": between the worst and the best
    semantic_floor: float = 0.0  # minmax only: quantile of the candidates' similarities that counts as zero
    semantic_power: float = 3.0  # >1 favours the few most similar candidates
    semantic_min: float = 0.25  # a record this dissimilar joins only through its words
    sentence_share: float = 0.5  # of a candidate's best sentence's lead in similarity over the whole record
    reply_depth: int = 6  # results this near the top that end in a question bring their reply next
    reply_within: int = 40  # ... when the reply is among this many results
    rrf_k: int = 60
    respell: bool = True  # a query word no record holds is read as its nearest known spelling (spelling.py)


@dataclass(frozen=True)
class Result:
    record: Record
    score: float
    via: str = "match"  # "match" | "meaning" | "neighbour" | "recent"
    terms: tuple[str, ...] = field(default=(), compare=False)

    def to_json(self) -> dict[str, object]:
        data = self.record.to_json()
        data.update({"score": round(self.score, 4), "via": self.via, "snippet": snippet(self.record.text, self.terms)})
        return data


# Words that shape a question but say nothing about its subject. They are
# dropped from queries only (an entry may well be about "what we did").
QUESTION_WORDS = (
    "what which who whom whose when where why how did does do done doing was were has had am "
    "would could should might must shall about ever any some there their they them he she her his him "
    "i me my mine our i'm its it's kind type sort thing things"
)


def query_terms(backend: Backend, query: str, question_words: bool = True) -> list[tuple[str, float]]:
    """Analysed query terms with a weight per repetition (empty for stopwords)."""
    terms = backend.analyse(query)
    if question_words:
        dropped = set(backend.analyse(QUESTION_WORDS))
        kept = [term for term in terms if term not in dropped]
        terms = kept or terms
    counts = Counter(terms)
    return [(term, float(count)) for term, count in counts.items()]


def retrieve(
    backend: Backend, query: str, limit: int = 10, filters: Filters | None = None, options: Options | None = None
) -> list[Result]:
    options = options or Options()
    filters = filters or Filters()
    if options.respell:
        query = respell(query, backend.analyse, backend.doc_freq).query
    terms = query_terms(backend, query, options.question_words)
    if not terms or limit <= 0:
        return []  # nothing but stopwords and punctuation: nothing to look for, by words or meaning
    similar = _similarity(backend, query, options)
    names = tuple(term for term, _ in terms)
    wanted_kinds = (filters.kind,) if filters.kind else options.kinds
    size = max(limit, options.candidates)
    hits: list[Hit] = []
    if terms:
        if len(wanted_kinds) == 1:
            hits = backend.search(terms, size, replace(filters, kind=wanted_kinds[0]))
        else:
            hits = [hit for hit in backend.search(terms, 2 * size, filters) if hit.record.kind in wanted_kinds]
    meaning: set[str] = set()
    if similar is not None:
        hits, meaning = _with_semantic(backend, hits, similar, options, filters, wanted_kinds)
    scored = _rescore(hits, query, options, similar)
    if options.neighbour_share:
        scored = signals.neighbours(
            backend, scored, filters, options.neighbour_share, options.neighbour_gap_hours, options.neighbours_join
        )
    if options.speaker_share:
        scored = signals.speakers(scored, query, options.speaker_share)
    if options.session_weight:
        scored = signals.sessions(scored, options.session_weight)
    if options.prose_partitions_only and not filters.kind:
        # A block holding entries is shown through its entries (cheaper to read,
        # exact to cite); only blocks of plain prose are results in their own right.
        scored = [pair for pair in scored if pair[0].record.kind == "entry" or not pair[0].record.seqs]
    results = _dedupe([Result(hit.record, score, _via(hit, meaning), names) for hit, score in scored])
    if options.diversity:
        results = diversify(backend, results, limit, options.diversity)
    if options.reply_depth:
        results = signals.replies(results, options.reply_depth, options.reply_within)
    wanted = set(names)
    worded: dict[int, bool] = {}

    def holds_words(result: Result) -> bool:
        # Read once, and only for the results placement reaches (evidence_first's limit).
        found = worded.get(id(result))
        if found is None:
            found = result.via == "match" or not wanted.isdisjoint(distinct_terms(backend, result.record.text))
            worded[id(result)] = found
        return found

    results = signals.evidence_first(
        results, holds_words, lambda r: r.via == "neighbour" and not holds_words(r), lambda r: r.score, limit
    )
    return results[:limit]


def _similarity(backend: Backend, query: str, options: Options) -> Any:
    """The backend's semantic view of ``query``, when it has vectors and fusion is on."""
    if options.fusion == "off" or not options.semantic_candidates:
        return None
    similar = getattr(backend, "similar", None)
    return similar(query) if similar is not None else None


def _with_semantic(
    backend: Backend, hits: list[Hit], similar: Any, options: Options, filters: Filters, kinds: tuple[str, ...]
) -> tuple[list[Hit], set[str]]:
    """The lexical hits plus the records nearest in meaning that passed the filters."""
    have = {hit.record.rid for hit in hits}
    nearest = similar.top(options.semantic_candidates)
    top = [rid for rid, cos in nearest if rid not in have and cos >= options.semantic_min]
    found = backend.get(top)
    extra = [
        Hit(found[rid], 0.0)
        for rid in top
        if rid in found and found[rid].kind in kinds and signals.passes(found[rid], filters)
    ]
    return hits + extra, {hit.record.rid for hit in extra}


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


def _rescore(hits: list[Hit], query: str, options: Options, similar: Any = None) -> list[tuple[Hit, float]]:
    """Each candidate's base score: BM25 scaled to the best hit of its kind
    (1.0), fused with similarity in meaning, plus the date boosts."""
    wanted = signals.query_dates(query) if options.date_boost else set()
    tops: dict[str, float] = {}
    for hit in hits:
        tops[hit.record.kind] = max(tops.get(hit.record.kind, 0.0), hit.score)
    lexical = [hit.score / (tops[hit.record.kind] or 1.0) for hit in hits]
    base = _fuse(hits, lexical, similar, options) if similar is not None else lexical
    scored: list[tuple[Hit, float]] = []
    for hit, score in zip(hits, base, strict=True):
        if wanted and signals.in_dates(hit.record, wanted):
            score += options.date_boost
        scored.append((hit, score))
    scored.sort(key=lambda pair: (-pair[1], pair[0].record.rid))
    return scored


def _fuse(hits: list[Hit], lexical: list[float], similar: Any, options: Options) -> list[float]:
    """Fused scores on BM25's scale (the best candidate near 1.0), so the boosts
    that follow weigh the same with and without meaning."""
    cosines = similar.of_records([hit.record.rid for hit in hits], options.sentence_share)
    known = [c for c in cosines if c is not None]
    if not known or options.fusion == "candidates":
        return lexical
    if options.fusion == "rrf":
        lex_rank = _ranks([score if hit.score > 0 else None for hit, score in zip(hits, lexical, strict=True)])
        sem_rank = _ranks(cosines)
        fused = [
            sum(1.0 / (options.rrf_k + rank) for rank in (a, b) if rank is not None)
            for a, b in zip(lex_rank, sem_rank, strict=True)
        ]
        top = max(fused) or 1.0
        return [value / top for value in fused]
    # Similarity scaled between the weakest and the strongest candidate: cosine
    # levels differ from query to query, their order among candidates is what counts.
    high = max(known)
    if options.semantic_scale == "top":
        low, spread = 0.0, high if high > 0 else 1.0
    else:
        ordered = sorted(known)
        low = ordered[min(len(ordered) - 1, int(options.semantic_floor * len(ordered)))]
        spread = (high - low) or 1.0
    return [
        score
        + options.semantic_weight
        * (max(0.0, (cos - low) / spread) ** options.semantic_power if cos is not None else 0.0)
        for score, cos in zip(lexical, cosines, strict=True)
    ]


def _ranks(values: list[float | None]) -> list[int | None]:
    order = sorted((i for i, v in enumerate(values) if v is not None), key=lambda i: -(values[i] or 0.0))
    ranks: list[int | None] = [None] * len(values)
    for rank, i in enumerate(order, start=1):
        ranks[i] = rank
    return ranks


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


def _via(hit: Hit, meaning: set[str]) -> str:
    if hit.record.rid in meaning:
        return "meaning"  # found by similarity in meaning, not by its words
    # Entries that joined only as a neighbour of a hit carry no BM25 score.
    return "neighbour" if hit.score == 0.0 and hit.record.kind == "entry" else "match"
