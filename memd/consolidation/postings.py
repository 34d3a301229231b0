"""A term's holders, packed in one catalog row: the topic numbers (sorted) and
the term's count in each, as two arrays of C ints."""

from __future__ import annotations

import sqlite3
from array import array
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from typing import Any


def holders(row: tuple[bytes, bytes]) -> tuple[array[int], array[int]]:
    """A term's holders: topic numbers (sorted) and the term's count in each."""
    return array("i", row[0]), array("i", row[1])


class TermEdits:
    """Changes to terms' holders within one transaction, written once per term."""

    def __init__(self) -> None:
        self.gone: defaultdict[str, set[int]] = defaultdict(set)
        self.new: defaultdict[str, dict[int, int]] = defaultdict(dict)
        self.small: Counter[str] = Counter()

    def remove(self, n: int, terms: Iterable[str], small: bool) -> None:
        for term in terms:
            self.gone[term].add(n)
            self.new[term].pop(n, None)
            self.small[term] -= small

    def add(self, n: int, counts: Counter[str], small: bool) -> None:
        for term, count in counts.items():
            self.new[term][n] = count
            self.small[term] += small

    def flush(self, db: sqlite3.Connection) -> None:
        affected = sorted(self.gone.keys() | self.new.keys())
        stored: dict[str, tuple[int, bytes, bytes]] = {}
        for chunk in _chunks(affected):
            marks = ",".join("?" * len(chunk))
            rows = db.execute(f"SELECT term, small, topics, counts FROM terms WHERE term IN ({marks})", chunk)
            stored.update((term, (small, ns, counts)) for term, small, ns, counts in rows)
        kept, emptied = [], []
        for term in affected:
            row = stored.get(term)
            small, (ns, counts) = (row[0], holders(row[1:])) if row else (0, (array("i"), array("i")))
            for n in self.gone.get(term, ()):
                at = bisect_left(ns, n)
                if at < len(ns) and ns[at] == n:
                    del ns[at], counts[at]
            for n, count in sorted(self.new.get(term, {}).items()):
                at = bisect_left(ns, n)
                if at < len(ns) and ns[at] == n:
                    counts[at] = count
                else:
                    ns.insert(at, n)
                    counts.insert(at, count)
            if not ns:
                if row:
                    emptied.append((term,))
                continue
            packed = (term, len(ns), small + self.small[term], ns.tobytes(), counts.tobytes())
            if row is None or packed[2:] != (row[0], row[1], row[2]):  # a rewritten topic mostly keeps its terms
                kept.append(packed)
        db.executemany("INSERT OR REPLACE INTO terms VALUES (?, ?, ?, ?, ?)", kept)
        db.executemany("DELETE FROM terms WHERE term = ?", emptied)
        self.gone.clear()
        self.new.clear()
        self.small.clear()


def _chunks(values: list[Any], size: int = 500) -> Iterator[list[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]
