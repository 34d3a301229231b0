"""The tantivy backend: the Whoosh backend's ranking, at a fraction of its cost.

Same signals as ``whoosh_backend``, so ``retrieve`` ranks alike with either:
- the same terms: text is analysed here, in Python, exactly as Whoosh's
  analyser does it (``analyse``), and tantivy indexes the analysed words split
  on spaces; stems, stopwords and query terms are therefore identical;
- the same fields and boosts (entry text, heading path, date/source context);
- the same BM25: tantivy fixes k1 = 1.2 (Whoosh's too) and b = 0.75, and
  uses another idf. Each query term's boost carries the ratio of Whoosh's idf
  to tantivy's, and each field is padded with a filler word, ``PAD_RATIO`` ×
  its mean length (rounded to whole words), which turns b = 0.75 into
  Whoosh's b = 0.4 exactly: 0.25 + 0.75 (l + c) / (m + c) = 0.6 + 0.4 l / m
  when c = 0.875 m. The filler is not a word (no query can name it). When the
  mean drifts far enough to move b past ``B_TOLERANCE`` every record is
  re-padded from its stored copy (rare: the mean of a vault's entries is
  stable), so b stays 0.4 as a vault grows from empty;
- filters (time, source, kind, doc) are tantivy term and range queries that
  contribute no score, as Whoosh's ``Require`` does.

tantivy is an optional extra (``pip install 'memd[tantivy]'``), imported only
when this backend is chosen (memd/index/backends.py).
"""

from __future__ import annotations

import calendar
import functools
import json
import os
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import tantivy

from ..atomic import atomic_write
from ..errors import VaultError
from ..timeexpr import as_datetime
from .analysis import analyse
from .base import Filters, Hit
from .bm25 import best_pad, effective_b, tantivy_idf, whoosh_idf
from .fields import BM25_B, BM25_K1, FIELD_BOOSTS, context_text, naive_time, record_data, record_from_data
from .records import Record, when_spans

META = "memd.json"  # pads and token totals, beside tantivy's own files
META_VERSION = 1  # raise with any change to make_schema(): an older index is then rebuilt
PAD = "|"  # never a token of the analyser (letters, digits, dots only)
B_TOLERANCE = 0.05  # re-pad every record when a field's effective b strays this far from BM25_B
TEXT_FIELDS = tuple(FIELD_BOOSTS)  # text, headings, context
_T = TypeVar("_T")
_HEAP_BYTES = 64 * 1024 * 1024
_CACHED_RECORDS = 200_000  # decoded records kept per searcher (a long-lived reader meets the same ones again)


def _micros(moment: datetime) -> int:
    """A naive time as microseconds since 1970 (the wall-clock time is compared, as Whoosh does)."""
    return calendar.timegm(moment.timetuple()) * 1_000_000 + moment.microsecond


def make_schema() -> Any:
    builder = tantivy.SchemaBuilder()
    for name in ("rid", "path", "kind", "doc", "source"):
        builder.add_text_field(name, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("seqs", tokenizer_name="whitespace", index_option="basic")
    for name in TEXT_FIELDS:
        builder.add_text_field(name, tokenizer_name="whitespace", index_option="freq")
    for name in ("time", "when_start", "when_end"):
        builder.add_integer_field(name, indexed=True, fast=True)
    for name in TEXT_FIELDS:  # real (unpadded) lengths, to keep the mean lengths without re-reading files
        builder.add_integer_field(f"n_{name}", stored=True)
    builder.add_bytes_field("data", stored=True)
    return builder.build()


def _is_panic(err: BaseException) -> bool:
    # pyo3 turns a Rust panic into PanicException, a BaseException (not an Exception).
    return type(err).__name__ == "PanicException"


def _damage_is_one_line(method: Callable[..., _T]) -> Callable[..., _T]:
    """A panic inside tantivy while reading (a damaged segment file) becomes one VaultError, not a traceback."""

    @functools.wraps(method)
    def wrapper(self: TantivyBackend, *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except BaseException as err:
            if not _is_panic(err):
                raise
            raise VaultError(
                f"{self.folder}: the search index is damaged ({err}); run `memd reindex` to rebuild it from the files"
            ) from None

    return wrapper


class _Stats:
    """Per-field token totals and padding, kept in ``memd.json``."""

    def __init__(self, docs: int, tokens: dict[str, int], pads: dict[str, int] | None) -> None:
        self.docs = docs
        self.tokens = tokens
        self.pads = pads

    @classmethod
    def empty(cls) -> _Stats:
        return cls(0, dict.fromkeys(TEXT_FIELDS, 0), None)

    @classmethod
    def load(cls, path: Path) -> _Stats:
        """Raises ValueError when missing, damaged, or left mid-re-pad (the index is rebuilt)."""
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except OSError as err:
            raise ValueError(f"{path}: {err}") from None
        if not isinstance(raw, dict) or raw.get("version") != META_VERSION or raw.get("state") != "ok":
            raise ValueError(f"{path}: not a finished index")
        pads = raw.get("pads")
        return cls(int(raw["docs"]), {f: int(raw["tokens"][f]) for f in TEXT_FIELDS}, pads and dict(pads))

    def save(self, path: Path, state: str = "ok") -> None:
        data = {"version": META_VERSION, "state": state, "docs": self.docs, "tokens": self.tokens, "pads": self.pads}
        atomic_write(path, json.dumps(data))

    def mean(self, field: str) -> float:
        return self.tokens[field] / self.docs if self.docs else 0.0

    def wanted_pads(self) -> dict[str, int]:
        return {field: best_pad(self.mean(field)) for field in TEXT_FIELDS}

    def drifted(self) -> bool:
        """True when the pads no longer give b within tolerance (or were never set)."""
        if self.pads is None:
            return True
        return any(abs(effective_b(self.pads[f], self.mean(f)) - BM25_B) > B_TOLERANCE for f in TEXT_FIELDS)


class _Prepared:
    """A record analysed once: its words per field and its other index fields."""

    __slots__ = ("record", "words")

    def __init__(self, record: Record) -> None:
        self.record = record
        self.words = {
            "text": analyse(record.text),
            "headings": analyse(" ".join(record.headings)),
            "context": analyse(context_text(record)),
        }


class TantivyBackend:
    """One tantivy index in ``folder``; created empty when absent."""

    def __init__(self, folder: Path, create: bool = False) -> None:
        self.folder = folder
        self.meta_path = folder / META
        self.schema = make_schema()
        if create or not tantivy.Index.exists(str(folder)):
            folder.mkdir(parents=True, exist_ok=True)
            self.index = tantivy.Index(self.schema, path=str(folder), reuse=False)
            self.stats = _Stats.empty()
            self.stats.save(self.meta_path)
        else:
            self.stats = _Stats.load(self.meta_path)
            # META_VERSION changes with the schema, so a loadable memd.json vouches for it.
            try:
                self.index = tantivy.Index.open(str(folder))
            except BaseException as err:
                if not _is_panic(err):
                    raise
                # tantivy panics (rather than raising) on some damaged files: the store rebuilds.
                raise ValueError(f"{folder}: damaged ({err})") from None
        self._searcher: Any = None
        self._seen: tuple[int, int, int] | None = None  # tantivy's meta.json when the searcher was made
        self._records: dict[tuple[int, int], Record] = {}  # by (segment, doc) of the current searcher

    # -- analysis -------------------------------------------------------------
    def analyse(self, text: str) -> list[str]:
        return analyse(text)

    # -- writing ----------------------------------------------------------------
    @_damage_is_one_line
    def replace_files(self, removed: Iterable[str], records: Sequence[Record]) -> None:
        removed = list(removed)
        prepared = [_Prepared(record) for record in records]
        gone_docs, gone_tokens = self._totals_of(removed)
        stats = _Stats(
            self.stats.docs - gone_docs + len(prepared),
            {f: self.stats.tokens[f] - gone_tokens[f] + sum(len(p.words[f]) for p in prepared) for f in TEXT_FIELDS},
            self.stats.pads,
        )
        repad = stats.drifted()
        if repad:
            stats.pads = stats.wanted_pads()
            if self.stats.docs - gone_docs > 0:
                # Every record kept is re-indexed with the new padding (from its stored copy).
                prepared = [_Prepared(record) for record in self._all_records(exclude=set(removed))] + prepared
            # Marked first: a crash before the commit lands leaves an index to rebuild, never mixed pads.
            self.stats.save(self.meta_path, state="repad")
        assert stats.pads is not None
        self._drop_searcher()
        threads = 2 if len(prepared) > 5_000 else 1
        writer = self.index.writer(_HEAP_BYTES * threads, threads)
        try:
            if repad:
                writer.delete_all_documents()
            else:
                for path in removed:
                    writer.delete_documents_by_term("path", path)
            for item in prepared:
                writer.add_document(self._document(item, stats.pads))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()
        self.index.reload()
        self.stats = stats
        stats.save(self.meta_path)

    def _document(self, item: _Prepared, pads: dict[str, int]) -> Any:
        record = item.record
        doc = tantivy.Document()
        doc.add_text("rid", record.rid)
        doc.add_text("path", record.path)
        doc.add_text("kind", record.kind)
        doc.add_text("doc", record.doc)
        if record.source:
            doc.add_text("source", record.source)
        if record.seqs:
            doc.add_text("seqs", " ".join(str(s) for s in record.seqs))
        for field in TEXT_FIELDS:
            words = item.words[field]
            doc.add_text(field, " ".join([*words, *([PAD] * pads[field])]))
            doc.add_integer(f"n_{field}", len(words))
        moment = naive_time(record.time)
        if moment is not None:
            doc.add_integer("time", _micros(moment))
        spans = when_spans(record)
        if spans:
            doc.add_integer("when_start", _micros(as_datetime(min(span.start for span in spans))))
            doc.add_integer("when_end", _micros(as_datetime(max(span.end for span in spans), end=True)))
        doc.add_bytes("data", record_data(record).encode("utf-8"))
        return doc

    def _totals_of(self, paths: list[str]) -> tuple[int, dict[str, int]]:
        """How many records, and words per field, the files at ``paths`` hold in the index."""
        tokens = dict.fromkeys(TEXT_FIELDS, 0)
        if not paths or self.stats.docs == 0:
            return 0, tokens
        searcher = self._fresh()
        query = tantivy.Query.term_set_query(self.schema, "path", paths)
        docs = 0
        for doc in self._documents(searcher, query):
            docs += 1
            for field in TEXT_FIELDS:
                tokens[field] += int(doc.get_first(f"n_{field}") or 0)
        return docs, tokens

    def _all_records(self, exclude: set[str]) -> list[Record]:
        searcher = self._fresh()
        records = (record_from_data(doc.get_first("data").decode("utf-8")) for doc in self._documents(searcher, None))
        return sorted((r for r in records if r.path not in exclude), key=lambda r: (r.path, r.line))

    @staticmethod
    def _documents(searcher: Any, query: Any) -> list[Any]:
        """Every document matching ``query`` (None: all), in no particular order."""
        total = searcher.num_docs
        if total == 0:
            return []
        if query is None:
            found = searcher.search(tantivy.Query.all_query(), limit=total, count=False)
        else:  # a few files' records: a small collector first (its size is allocated up front)
            found = searcher.search(query, limit=min(total, 512), count=True)
            if found.count is not None and found.count > 512:
                found = searcher.search(query, limit=found.count, count=False)
        return [searcher.doc(address) for _, address in found.hits]

    # -- reading ----------------------------------------------------------------
    def _drop_searcher(self) -> None:
        self._searcher = None
        self._records = {}

    def _fresh(self) -> Any:
        """A searcher over the last commit, whoever made it (a CLI search beside the daemon)."""
        try:
            stat = os.stat(self.folder / "meta.json")  # replaced by each commit: a new inode
            seen: tuple[int, int, int] | None = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except OSError:
            seen = None
        if self._searcher is None or seen != self._seen:
            # A reload costs ~1 ms even when nothing changed; a stat costs microseconds.
            self.index.reload()
            self._drop_searcher()
            self._searcher = self.index.searcher()
            self._seen = seen
        return self._searcher

    def _record(self, searcher: Any, address: Any) -> Record:
        key = (address.segment_ord, address.doc)
        record = self._records.get(key)
        if record is None:
            if len(self._records) >= _CACHED_RECORDS:
                self._records.clear()
            record = record_from_data(searcher.doc(address).get_first("data").decode("utf-8"))
            self._records[key] = record
        return record

    @_damage_is_one_line
    def search(self, terms: Sequence[tuple[str, float]], limit: int, filters: Filters) -> list[Hit]:
        if not terms or limit <= 0:
            return []
        searcher = self._fresh()
        docs = searcher.num_docs
        should: list[tuple[Any, Any]] = []
        for term, boost in terms:
            for field, field_boost in FIELD_BOOSTS.items():
                doc_freq = searcher.doc_freq(field, term)
                if doc_freq == 0:
                    continue
                # Whoosh's idf in place of tantivy's: the boost carries the ratio.
                weight = boost * field_boost * whoosh_idf(doc_freq, docs) / tantivy_idf(doc_freq, docs)
                clause = tantivy.Query.term_query(self.schema, field, term, index_option="freq")
                should.append((tantivy.Occur.Should, tantivy.Query.boost_query(clause, weight)))
        if not should:
            return []
        query = tantivy.Query.boolean_query(should)
        restriction = self._filter(filters)
        if restriction is not None:
            # Scored by the words only; the filter matches or not (as Whoosh's Require).
            query = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Must, query),
                    (tantivy.Occur.Must, tantivy.Query.const_score_query(restriction, 0.0)),
                ]
            )
        found = searcher.search(query, limit=limit, count=False)
        return [Hit(self._record(searcher, address), float(score)) for score, address in found.hits]

    def _filter(self, filters: Filters) -> Any:
        query = tantivy.Query
        parts: list[Any] = []
        if filters.since or filters.until:
            start = _micros(filters.since.replace(tzinfo=None)) if filters.since else None
            end = _micros(filters.until.replace(tzinfo=None)) if filters.until else None
            written = query.range_query(self.schema, "time", tantivy.FieldType.Integer, start, end)
            # An entry counts in a period when it was written then, or names a day in it ("yesterday").
            named = []
            if end is not None:
                named.append(query.range_query(self.schema, "when_start", tantivy.FieldType.Integer, None, end))
            if start is not None:
                named.append(query.range_query(self.schema, "when_end", tantivy.FieldType.Integer, start, None))
            names = query.boolean_query([(tantivy.Occur.Must, q) for q in named])
            parts.append(query.boolean_query([(tantivy.Occur.Should, written), (tantivy.Occur.Should, names)]))
        for field in ("source", "kind", "doc"):
            value = getattr(filters, field)
            if value:
                parts.append(query.term_query(self.schema, field, value, index_option="basic"))
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else query.boolean_query([(tantivy.Occur.Must, q) for q in parts])

    @_damage_is_one_line
    def get(self, rids: Iterable[str]) -> dict[str, Record]:
        wanted = list(dict.fromkeys(rids))
        if not wanted:
            return {}
        searcher = self._fresh()
        query = tantivy.Query.term_set_query(self.schema, "rid", wanted)
        found = searcher.search(query, limit=len(wanted), count=False)
        records = (self._record(searcher, address) for _, address in found.hits)
        return {record.rid: record for record in records}

    @_damage_is_one_line
    def by_seq(self, seqs: Iterable[int]) -> list[Record]:
        wanted = sorted({str(seq) for seq in seqs})
        if not wanted:
            return []
        searcher = self._fresh()
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, tantivy.Query.term_set_query(self.schema, "seqs", wanted)),
                (tantivy.Occur.Must, tantivy.Query.term_query(self.schema, "kind", "entry", index_option="basic")),
            ]
        )
        limit = 2 * len(wanted) + 8  # an entry usually holds one seq; asked again when more match
        while True:
            found = searcher.search(query, limit=limit, count=True)
            if found.count is None or found.count <= limit:
                break
            limit = found.count
        records = [self._record(searcher, address) for _, address in found.hits]
        return sorted(records, key=lambda r: (r.path, r.line))

    @_damage_is_one_line
    def idf(self, term: str) -> float:
        searcher = self._fresh()
        return whoosh_idf(searcher.doc_freq("text", term), searcher.num_docs)

    @_damage_is_one_line
    def count(self) -> int:
        return int(self._fresh().num_docs)

    def close(self) -> None:
        self._drop_searcher()


__all__ = ["BM25_K1", "TantivyBackend", "analyse"]
