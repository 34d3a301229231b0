"""What every backend indexes for a record, so each ranks alike: the field
boosts and BM25 constants, the context field's words, and the stored form a
record is read back from. Imports no search engine.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from dataclasses import fields as dataclass_fields
from datetime import datetime

from memd.core.timeutil import DAY_NAMES, MONTH_NAMES, time_or_none
from memd.index.bytecache import ByteLRU, budget_bytes, keyed_record_bytes, stored_record_bytes
from memd.index.records import Record, when_spans

# How much a term found in the heading path / the date-and-source context
# counts against one found in the entry text itself.
FIELD_BOOSTS = {"text": 1.0, "headings": 0.4, "context": 0.3}
# Entries are short: their length says little about relevance, so length
# normalisation is weaker than the usual 0.75 (measured on LoCoMo: +0.02).
BM25_K1 = 1.2
BM25_B = 0.4


def date_words(time: str | None) -> str:
    """``2023-05-08T13:56`` -> ``May 2023 Monday``: lets a question's date words match."""
    moment = naive_time(time)
    if moment is None:
        return ""
    return f"{MONTH_NAMES[moment.month - 1]} {moment.year} {DAY_NAMES[moment.weekday()]}"


def naive_time(time: str | None) -> datetime | None:
    """The record's time without its zone (the wall-clock time is what filters compare)."""
    moment = time_or_none(time)
    return moment.replace(tzinfo=None) if moment else None


def context_text(record: Record) -> str:
    """The context field: date words, source, signature keys, named days."""
    parts = [date_words(record.time), record.source or "", *(f"{k} {v}" for k, v in record.extra)]
    spans = when_spans(record)
    if spans:  # a search reads no record's context: it imports no time expressions
        from memd.core.timeexpr import describe

        parts.extend(describe(span) for span in spans)
    return " ".join(filter(None, parts))


def record_data(record: Record) -> str:
    """The stored form of a record (JSON)."""
    return json.dumps(asdict(record), ensure_ascii=False)


# Records by their stored form, bounded by estimated bytes (the Whoosh backend's
# cache; the tantivy backend keeps its own, by document address).
_DECODED: ByteLRU[str, Record] = ByteLRU(budget_bytes(), keyed_record_bytes)


def record_from_data(data: str) -> Record:
    """A record from its stored form. Records are immutable and the stored text
    names one exactly: a long-lived reader (the MCP server, the daemon, an
    evaluation) decodes each one once, while it stays in ``_DECODED``."""
    record = _DECODED.get(data)
    if record is None:
        record = decode_record(data)
        _DECODED.put(data, record, stored_record_bytes(data, record) + sys.getsizeof(data))  # the form is its key
    return record


def decode_record(data: str) -> Record:
    """``record_from_data`` without its cache (for a backend that keeps its own)."""
    raw = json.loads(data)
    raw["headings"] = tuple(raw["headings"])
    raw["seqs"] = tuple(raw["seqs"])
    raw["extra"] = tuple(tuple(pair) for pair in raw["extra"])
    if list(raw) != _NAMES:
        return Record(**raw)  # not this version's form (or order): the dataclass says what is wrong
    # A search decodes hundreds of records it has not met before; a frozen
    # dataclass's __init__ sets each field through object.__setattr__, half the
    # cost of a decode. The form is known complete here: each slot is set directly.
    record = object.__new__(Record)
    for put, value in zip(_SLOTS, raw.values(), strict=True):
        put(record, value)
    return record


_NAMES = [field.name for field in dataclass_fields(Record)]
_SLOTS = [getattr(Record, name).__set__ for name in _NAMES]
