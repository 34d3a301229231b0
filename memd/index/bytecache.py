"""Per-process caches bounded by the memory they hold, not by a count.

A long-lived reader (the daemon, the MCP server, an evaluation) decodes the
records its searches meet and keeps them for the next search; how many fit
in a budget depends on how long their texts are, so the bound is an
estimate of bytes (``sys.getsizeof`` of each string, plus the objects around
them), least recently used out first. The record cache has a budget of
16 MB (the cache of analysed words an eighth of it); the
``MEMD_RECORD_CACHE_MB`` environment variable sets it (0 keeps nothing).

16 MB holds every record of a vault of about 13,000 entries. Past that, a
server's searches meet few records twice: at 100,000 entries (500 distinct
searches through the MCP server, docs/benchmarks.md) 64 MB bought no CPU and
made the RSS grow by 13% after warm-up, 16 MB by 5%.
"""

from __future__ import annotations

import math
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from memd.index.records import Record

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_DEFAULT_MB = 16.0


def budget_bytes(share: float = 1.0) -> int:
    """``share`` of the record caches' budget: ``MEMD_RECORD_CACHE_MB`` (a number of MB), else 16 MB."""
    raw = os.environ.get("MEMD_RECORD_CACHE_MB", "").strip()
    try:
        mb = float(raw) if raw else _DEFAULT_MB
    except ValueError:
        mb = _DEFAULT_MB
    if not math.isfinite(mb):
        mb = _DEFAULT_MB
    return max(0, int(share * mb * 1024 * 1024))


class ByteLRU(Generic[K, V]):
    """A mapping that keeps the most recently used values while their
    estimated sizes (``size(key, value)``) sum to at most ``budget`` bytes."""

    __slots__ = ("_values", "budget", "held", "size")

    def __init__(self, budget: int, size: Callable[[K, V], int]) -> None:
        self.budget = budget
        self.size = size
        self.held = 0  # estimated bytes of the values kept
        self._values: OrderedDict[K, tuple[V, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def get(self, key: K) -> V | None:
        found = self._values.get(key)
        if found is None:
            return None
        self._values.move_to_end(key)
        return found[0]

    def put(self, key: K, value: V, size: int | None = None) -> None:
        """Keep ``value``; ``size``: its estimated bytes when the caller knows them (else ``size(key, value)``)."""
        size = self.size(key, value) if size is None else size
        old = self._values.pop(key, None)
        if old is not None:
            self.held -= old[1]
        if size > self.budget:
            return  # bigger than the whole budget: not kept
        self._values[key] = (value, size)
        self.held += size
        while self.held > self.budget:
            _, (_, dropped) = self._values.popitem(last=False)
            self.held -= dropped

    def clear(self) -> None:
        self._values.clear()
        self.held = 0


# What a record costs besides its strings: the object and its slots (17 fields),
# tuples, an int per seq, and a cache entry (an OrderedDict node, its key tuple).
_RECORD_OVERHEAD = sys.getsizeof(object()) + 17 * 8 + 3 * sys.getsizeof(()) + 200


def record_bytes(record: Record) -> int:
    """An estimate of the memory a decoded record holds (its strings counted as Python stores them)."""
    size = _RECORD_OVERHEAD
    for text in (
        record.rid,
        record.doc,
        record.path,
        record.text,
        record.seq,
        record.time,
        record.source,
        record.src,
        record.prev,
        record.next,
        record.block,
    ):
        if text is not None:
            size += sys.getsizeof(text)
    for heading in record.headings:
        size += 8 + sys.getsizeof(heading)
    size += 36 * len(record.seqs)
    for key, value in record.extra:
        size += 8 + sys.getsizeof(()) + 16 + sys.getsizeof(key) + sys.getsizeof(value)
    return size


def stored_record_bytes(data: str, record: Record) -> int:
    """``record_bytes`` for a record just decoded from its stored form ``data``, in a
    fifth of the time (a search decodes hundreds): its strings are that form's text,
    whose field names and quotes weigh about what the strings' own headers do (300
    bytes more), plus what the form writes small and memory does not (an int per
    seq, a tuple per signature key, a pointer per heading)."""
    return (
        _RECORD_OVERHEAD
        + 300
        + sys.getsizeof(data)
        + 36 * len(record.seqs)
        + 8 * len(record.headings)
        + (170 * len(record.extra))
    )


def keyed_record_bytes(key: object, record: Record) -> int:
    """A cached record with its key (a stored form: its size counts; anything else is small)."""
    return record_bytes(record) + (sys.getsizeof(key) if isinstance(key, str) else 64)


_TUPLE = sys.getsizeof(())


def terms_bytes(key: tuple[str, str], terms: tuple[str, ...]) -> int:
    """A text's analysed words kept under (analysis, text): the text, the tuple
    and its pointers (the words themselves are shared with the stemmer's cache)."""
    return 150 + sys.getsizeof(key[1]) + _TUPLE + 8 * len(terms)
