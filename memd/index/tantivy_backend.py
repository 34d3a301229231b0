"""The tantivy backend: the Whoosh backend's ranking, at a fraction of its cost.

Same signals as ``whoosh_backend``, so ``retrieve`` ranks alike with either:
- the same terms: text is analysed in Python exactly as Whoosh's analyser
  does it (``analysis.py``), and tantivy indexes the analysed words split on
  spaces; stems, stopwords and query terms are therefore identical;
- the same fields and boosts (entry text, heading path, date/source context:
  ``fields.py``);
- the same BM25: tantivy fixes k1 = 1.2 (Whoosh's too) and b = 0.75, and
  uses another idf. Each field is padded with a filler word so b is Whoosh's
  0.4 (``tantivy_schema``: the schema, a record's document, the padding
  totals), and each query term's boost carries the ratio of Whoosh's idf to
  tantivy's (``tantivy_query``, with the filters, which score nothing).

This module is the backend itself: writing records (re-padding when the
mean lengths drift), reading them back, and the searcher kept fresh across
processes. tantivy is a dependency, imported only when this backend is
chosen (memd/index/backends.py), which imports this module and, through it,
the other two.
"""

from __future__ import annotations

import errno
import functools
import json
import os
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import tantivy

from memd.core.atomic import atomic_write
from memd.core.errors import VaultError
from memd.index.analysis import ANALYSIS, analyse
from memd.index.base import Filters, Hit
from memd.index.bm25 import whoosh_idf
from memd.index.bytecache import ByteLRU, budget_bytes, keyed_record_bytes, stored_record_bytes
from memd.index.fields import BM25_K1, context_text, decode_record
from memd.index.records import Record
from memd.index.tantivy_query import entries_holding, search_query
from memd.index.tantivy_schema import META, TEXT_FIELDS, Prepared, Stats, document, make_schema

_T = TypeVar("_T")
_HEAP_BYTES = 64 * 1024 * 1024
# Stored documents are read one by one, hundreds a search, each from a block
# decompressed whole: blocks of 4 KB instead of tantivy's 16 KB read a record in
# two thirds of the CPU (9.0 against 14.0 us at 110,000 records) for an index 1.2 times larger.
_DOC_BLOCK_BYTES = 4096
_FREE_BYTES = 64 * 1024 * 1024  # less free space than this where a write failed: the disk is full


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


def _small_doc_blocks(folder: Path) -> None:
    """Set a new, empty index's stored-document block size (``_DOC_BLOCK_BYTES``).

    tantivy keeps the setting in the index's meta.json, which every segment it
    writes from then on follows; the Python binding has no argument for it. An
    index whose meta.json has another shape keeps tantivy's default."""
    meta = folder / "meta.json"
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
        settings = data["index_settings"]
        if not isinstance(settings, dict) or not isinstance(settings.get("docstore_blocksize"), int):
            return
    except (OSError, ValueError, KeyError, TypeError):
        return
    settings["docstore_blocksize"] = _DOC_BLOCK_BYTES
    atomic_write(meta, json.dumps(data), derived=True)


def _merged(writer: Any) -> None:
    """Wait for the writer's merges. A merge that fails (a full disk) leaves the
    segments it would have joined, every one valid and listed: nothing written is
    lost, and a later write merges them."""
    with suppress(ValueError):
        writer.wait_merging_threads()


def _writer_stopped(folder: Path, err: ValueError) -> OSError:
    """The OSError a stopped writer most likely met: tantivy's message names no cause
    ("io::Error most likely"), so the process's file-size limit and the free space
    beside the index say which it was."""
    import resource
    import shutil

    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY:
        return OSError(errno.EFBIG, "File too large")
    try:
        if shutil.disk_usage(folder).free < _FREE_BYTES:
            return OSError(errno.ENOSPC, "No space left on device")
    except OSError:
        pass
    return OSError(errno.EIO, f"tantivy's index writer stopped ({err})")


class TantivyBackend:
    """One tantivy index in ``folder``; created empty when absent."""

    analysis = ANALYSIS

    def __init__(self, folder: Path, create: bool = False) -> None:
        self.folder = folder
        self.meta_path = folder / META
        self.schema = make_schema()
        if create or not tantivy.Index.exists(str(folder)):
            folder.mkdir(parents=True, exist_ok=True)
            tantivy.Index(self.schema, path=str(folder), reuse=False)
            _small_doc_blocks(folder)
            self.index = tantivy.Index.open(str(folder))
            self.stats = Stats.empty()
            self.stats.save(self.meta_path)
        else:
            self.stats = Stats.load(self.meta_path)
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
        # Decoded records by (segment, doc) of the current searcher: a long-lived reader meets the
        # same ones again. Bounded by their estimated bytes (memd.index.bytecache), not their number.
        self._records: ByteLRU[tuple[int, int], Record] = ByteLRU(budget_bytes(), keyed_record_bytes)

    # -- analysis -------------------------------------------------------------
    def analyse(self, text: str) -> list[str]:
        return analyse(text)

    # -- writing ----------------------------------------------------------------
    @_damage_is_one_line
    def replace_files(self, removed: Iterable[str], records: Sequence[Record]) -> None:
        removed = list(removed)
        prepared = [Prepared(record) for record in records]
        gone_docs, gone_tokens = self._totals_of(removed)
        stats = Stats(
            self.stats.docs - gone_docs + len(prepared),
            {f: self.stats.tokens[f] - gone_tokens[f] + sum(len(p.words[f]) for p in prepared) for f in TEXT_FIELDS},
            self.stats.pads,
        )
        repad = stats.drifted()
        if repad:
            stats.pads = stats.wanted_pads()
            if self.stats.docs - gone_docs > 0:
                # Every record kept is re-indexed with the new padding (from its stored copy).
                prepared = [Prepared(record) for record in self._all_records(exclude=set(removed))] + prepared
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
                writer.add_document(document(item, stats.pads))
            writer.commit()
        except BaseException as err:
            writer.rollback()
            _merged(writer)
            if isinstance(err, ValueError):
                # A write that failed (a full disk, a file-size limit) stops tantivy's writer
                # thread, and the binding reports it as a ValueError from the next call.
                raise _writer_stopped(self.folder, err) from None
            raise
        _merged(writer)
        self.index.reload()
        self.stats = stats
        stats.save(self.meta_path)

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
        records = (decode_record(doc.get_first("data").decode("utf-8")) for doc in self._documents(searcher, None))
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
        self._records.clear()

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
            data = searcher.doc(address).get_first("data").decode("utf-8")
            record = decode_record(data)
            self._records.put(key, record, stored_record_bytes(data, record) + 64)  # and its key, a small tuple
        return record

    @_damage_is_one_line
    def search(self, terms: Sequence[tuple[str, float]], limit: int, filters: Filters) -> list[Hit]:
        if not terms or limit <= 0:
            return []
        searcher = self._fresh()
        query = search_query(self.schema, searcher, terms, filters)
        if query is None:
            return []
        # tantivy sizes its collector by the limit asked: 10^9 aborted the process (32 GB).
        found = searcher.search(query, limit=min(limit, max(1, searcher.num_docs)), count=False)
        return [Hit(self._record(searcher, address), float(score)) for score, address in found.hits]

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
        query = entries_holding(self.schema, wanted)
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
    def doc_freq(self, term: str) -> int:
        return int(self._fresh().doc_freq("text", term))

    @_damage_is_one_line
    def count(self) -> int:
        return int(self._fresh().num_docs)

    def close(self) -> None:
        self._drop_searcher()


__all__ = ["BM25_K1", "META", "TantivyBackend", "analyse", "context_text"]
