"""The first backend: Whoosh (the maintained ``whoosh3`` fork), BM25F over stemmed text.

Imported only when a search runs: Whoosh takes ~30 ms of CPU to import and
``memd add`` must not pay for it. Queries are built from analysed terms, never from
Whoosh's query parser, so user text with ``"``, ``:``, ``*``, ``(`` or ``AND``
is just words.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from whoosh import index as whoosh_index
from whoosh import query as wq
from whoosh import scoring
from whoosh.analysis import StemmingAnalyzer
from whoosh.fields import DATETIME, ID, KEYWORD, STORED, TEXT, Schema
from whoosh.reading import TermNotFound

from memd.core.timeutil import as_datetime
from memd.index.analysis import ANALYSIS
from memd.index.base import Filters, Hit
from memd.index.fields import BM25_B, BM25_K1, FIELD_BOOSTS, context_text, naive_time, record_data, record_from_data
from memd.index.records import Record, when_spans


def _analyzer() -> Any:
    # Whoosh's default token pattern keeps "*" inside words (for wildcards);
    # memd never parses query syntax, so a token is letters and digits only.
    return StemmingAnalyzer(expression=r"\w+(?:\.\w+)*")


def make_schema() -> Schema:
    return Schema(
        rid=ID(unique=True, stored=True),
        path=ID,
        kind=ID,
        doc=ID,
        source=ID,
        seqs=KEYWORD,
        src=KEYWORD(lowercase=False, commas=False),
        time=DATETIME,
        when_start=DATETIME,  # the days a relative time in the text names ("yesterday"), see memd/core/timeexpr.py
        when_end=DATETIME,
        text=TEXT(analyzer=_analyzer()),
        headings=TEXT(analyzer=_analyzer()),
        context=TEXT(analyzer=_analyzer()),
        data=STORED,
    )


class WhooshBackend:
    """One Whoosh index in ``folder``; created empty when absent."""

    analysis = ANALYSIS  # its analyser is the one memd.index.analysis reproduces

    def __init__(self, folder: Path, create: bool = False) -> None:
        self.folder = folder
        if create or not whoosh_index.exists_in(str(folder)):
            folder.mkdir(parents=True, exist_ok=True)
            self.ix = whoosh_index.create_in(str(folder), make_schema())
        else:
            self.ix = whoosh_index.open_dir(str(folder))
        self._analyzer = _analyzer()
        self._searcher: Any = None

    def analyse(self, text: str) -> list[str]:
        return [token.text for token in self._analyzer(text)]

    def replace_files(self, removed: Iterable[str], records: Sequence[Record]) -> None:
        self._drop_searcher()
        writer = self.ix.writer(limitmb=256)
        try:
            for path in removed:
                writer.delete_by_term("path", path)
            for record in records:
                writer.add_document(**self._fields(record))
        except BaseException:
            writer.cancel()
            raise
        writer.commit()

    def _fields(self, record: Record) -> dict[str, Any]:
        spans = when_spans(record)
        fields: dict[str, Any] = {
            "rid": record.rid,
            "path": record.path,
            "kind": record.kind,
            "doc": record.doc,
            "text": record.text,
            "headings": " ".join(record.headings),
            "context": context_text(record),
            "data": record_data(record),
        }
        if record.source:
            fields["source"] = record.source
        if record.seqs:
            fields["seqs"] = " ".join(str(s) for s in record.seqs)
        if record.src:
            fields["src"] = " ".join(part.strip() for part in record.src.split(";") if part.strip())
        moment = naive_time(record.time)
        if moment is not None:
            fields["time"] = moment
        if spans:
            fields["when_start"] = as_datetime(min(span.start for span in spans))
            fields["when_end"] = as_datetime(max(span.end for span in spans), end=True)
        return fields

    def _search_handle(self) -> Any:
        # A fresh searcher when the index changed (Whoosh's own refresh fails on an
        # index that had no segment yet, such as a vault's first, empty commit).
        if self._searcher is not None and not self._searcher.up_to_date():
            self._drop_searcher()
        if self._searcher is None:
            self._searcher = self.ix.searcher(weighting=scoring.BM25F(B=BM25_B, K1=BM25_K1))
        return self._searcher

    def _drop_searcher(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None

    def search(self, terms: Sequence[tuple[str, float]], limit: int, filters: Filters) -> list[Hit]:
        if not terms or limit <= 0:
            return []
        clauses = [
            wq.Term(field, term, boost=boost * field_boost)
            for term, boost in terms
            for field, field_boost in FIELD_BOOSTS.items()
        ]
        searcher = self._search_handle()
        allowed = _allowed(searcher, filters)
        if allowed is not None and not allowed:
            return []
        # The filter is a set of document numbers the collector checks each
        # match against, so block-quality skipping stays on. (A Require query
        # ran with skipping off, and on a 10k-record vault its top 200 left out
        # documents that outranked ones it kept.)
        results = searcher.search(wq.Or(clauses), limit=limit, filter=allowed)
        return [Hit(record_from_data(hit["data"]), float(hit.score or 0.0)) for hit in results]

    def get(self, rids: Iterable[str]) -> dict[str, Record]:
        wanted = set(rids)
        if not wanted:
            return {}
        searcher = self._search_handle()
        docnums = _docnums(searcher.reader(), "rid", wanted)
        records = (record_from_data(searcher.stored_fields(docnum)["data"]) for docnum in docnums)
        return {record.rid: record for record in records}

    def by_seq(self, seqs: Iterable[int]) -> list[Record]:
        wanted = {str(seq) for seq in seqs}
        if not wanted:
            return []
        searcher = self._search_handle()
        docnums = _docnums(searcher.reader(), "seqs", wanted)
        records = (record_from_data(searcher.stored_fields(docnum)["data"]) for docnum in docnums)
        return [record for record in records if record.kind == "entry"]

    def idf(self, term: str) -> float:
        return float(self._search_handle().idf("text", term))

    def doc_freq(self, term: str) -> int:
        return int(self._search_handle().doc_frequency("text", term))

    def count(self) -> int:
        return int(self._search_handle().doc_count())

    def close(self) -> None:
        self._drop_searcher()


def _docnums(reader: Any, field: str, terms: set[str]) -> list[int]:
    """Live documents holding any of ``terms`` in ``field``, in index order.

    Direct posting reads, one per term and segment: several times cheaper than
    an Or query (no scorer, no matcher tree) or a ``document(...)`` lookup per
    term. Deleted documents are left out by the reader."""
    found: set[int] = set()
    for term in sorted(terms):
        try:
            found.update(reader.postings(field, term).all_ids())
        except TermNotFound:
            continue
    return sorted(found)


def _allowed(searcher: Any, filters: Filters) -> set[int] | None:
    """Document numbers that pass ``filters``; None when nothing is filtered."""
    reader = searcher.reader()
    parts: list[set[int]] = []
    if filters.since or filters.until:
        start = filters.since.replace(tzinfo=None) if filters.since else None
        end = filters.until.replace(tzinfo=None) if filters.until else None
        # An entry counts in a period when it was written then, or names a day in it ("yesterday").
        written = _in_range(searcher, "time", start, end)
        named = [_in_range(searcher, "when_start", None, end)] if end else []
        named += [_in_range(searcher, "when_end", start, None)] if start else []
        parts.append(written | set.intersection(*named))
    for field in ("source", "kind", "doc"):
        value = getattr(filters, field)
        if value:
            parts.append(set(_docnums(reader, field, {value})))
    if not parts:
        return None
    return set.intersection(*parts)


def _in_range(searcher: Any, field: str, start: datetime | None, end: datetime | None) -> set[int]:
    """Documents whose date ``field`` lies in [start, end], read straight from the postings.

    Whoosh covers a date range with a few ranges of trie terms; reading each
    term's postings directly is ~30x cheaper than running the range as a
    query, whose matcher tree over thousands of terms is pure Python.
    (``_btexts``, the terms a range covers, is Whoosh's own internal helper.)"""
    reader = searcher.reader()
    found: set[int] = set()
    for part in _leaves(wq.DateRange(field, start, end).simplify(reader)):
        if isinstance(part, wq.Term):
            texts: Iterable[Any] = (part.text,)
        elif isinstance(part, wq.TermRange):
            texts = part._btexts(reader)
        else:
            found.update(searcher.docs_for_query(part))  # not expected from Whoosh's numeric ranges; correct anyway
            continue
        for text in texts:
            try:
                found.update(reader.postings(field, text).all_ids())
            except TermNotFound:
                continue
    return found


def _leaves(query: Any) -> Iterator[Any]:
    if isinstance(query, wq.Or):
        for sub in query.subqueries:
            yield from _leaves(sub)
    elif isinstance(query, wq.WrappingQuery):
        yield from _leaves(query.child)
    elif query is not wq.NullQuery:
        yield query
