"""What the tantivy backend stores for a record, and the totals that keep its BM25 Whoosh's.

tantivy's BM25 fixes b = 0.75; Whoosh's (memd's) is 0.4. Each text field is
padded with a filler word, ``PAD_RATIO`` × its mean length (rounded to whole
words), which turns b = 0.75 into b = 0.4 exactly:
0.25 + 0.75 (l + c) / (m + c) = 0.6 + 0.4 l / m when c = 0.875 m. The filler
is not a word (no query can name it). The mean lengths, and the pads in use,
are kept in ``memd.json`` beside tantivy's files; when the mean drifts far
enough to move b past ``B_TOLERANCE`` every record is re-padded from its
stored copy (rare: the mean of a vault's entries is stable), so b stays 0.4
as a vault grows from empty.

The schema, a record's document and these totals change together (a new
field changes what a document holds and ``META_VERSION``), so they live in
one module; reading and writing the index is ``tantivy_backend``'s.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import tantivy

from memd.core.atomic import atomic_write
from memd.core.timeutil import as_datetime
from memd.index.analysis import analyse
from memd.index.bm25 import best_pad, effective_b
from memd.index.fields import BM25_B, FIELD_BOOSTS, context_text, naive_time, record_data
from memd.index.records import Record, when_spans

META = "memd.json"  # pads and token totals, beside tantivy's own files
META_VERSION = 1  # raise with any change to make_schema(): an older index is then rebuilt
PAD = "|"  # never a token of the analyser (letters, digits, dots only)
B_TOLERANCE = 0.05  # re-pad every record when a field's effective b strays this far from BM25_B
TEXT_FIELDS = tuple(FIELD_BOOSTS)  # text, headings, context


_EPOCH = datetime(1970, 1, 1)
_MICROSECOND = timedelta(microseconds=1)


def micros(moment: datetime) -> int:
    """A naive time as microseconds since 1970 (the wall-clock time is compared, as Whoosh does)."""
    return (moment.replace(tzinfo=None) - _EPOCH) // _MICROSECOND


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


class Stats:
    """Per-field token totals and padding, kept in ``memd.json``."""

    def __init__(self, docs: int, tokens: dict[str, int], pads: dict[str, int] | None) -> None:
        self.docs = docs
        self.tokens = tokens
        self.pads = pads

    @classmethod
    def empty(cls) -> Stats:
        return cls(0, dict.fromkeys(TEXT_FIELDS, 0), None)

    @classmethod
    def load(cls, path: Path) -> Stats:
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


class Prepared:
    """A record analysed once: its words per field and its other index fields."""

    __slots__ = ("record", "words")

    def __init__(self, record: Record) -> None:
        self.record = record
        self.words = {
            "text": analyse(record.text),
            "headings": analyse(" ".join(record.headings)),
            "context": analyse(context_text(record)),
        }


def document(item: Prepared, pads: dict[str, int]) -> Any:
    """The tantivy document for a record, each text field padded by ``pads``."""
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
        doc.add_integer("time", micros(moment))
    spans = when_spans(record)
    if spans:
        doc.add_integer("when_start", micros(as_datetime(min(span.start for span in spans))))
        doc.add_integer("when_end", micros(as_datetime(max(span.end for span in spans), end=True)))
    doc.add_bytes("data", record_data(record).encode("utf-8"))
    return doc
