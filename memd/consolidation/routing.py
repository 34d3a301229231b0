"""The vault's topics as word statistics for routing and merging (``TopicIndex``).

Topics a consolidation has read (and the ones it created) are described from
their documents as they stand in memory; every other topic from the catalog
(``catalog.py``), whose rows then stand for files this run has not changed.
Only the terms asked about are read from the catalog: one row per term,
holding every topic that has it.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from memd.consolidation.catalog import Catalog
from memd.consolidation.postings import holders
from memd.consolidation.records import Record
from memd.engine.base import TopicInfo

if TYPE_CHECKING:
    from array import array

    Holders = tuple[array[int], array[int]]

_SLACK = 1e-9  # relative room for sums taken in another order
_CHUNK = 500  # values per SQL ``IN (...)``


class RoutingIndex:
    """A ``TopicIndex`` over the catalog, with ``overlay`` standing in for the
    topics in memory and ``hidden`` catalog rows not to use (read or deleted)."""

    def __init__(self, catalog: Catalog, order: list[str], overlay: Mapping[str, Record], hidden: set[str]) -> None:
        self.catalog = catalog
        self.db = catalog.db
        self.order = order
        self.overlay = overlay
        self.rows = {row.n: (topic_id, row) for topic_id, row in catalog.known.items() if row.problem is None}
        self.hidden = {catalog.known[t].n for t in hidden if t in catalog.known}
        self._ignored: frozenset[str] | None = None
        self._minus: dict[str, dict[int, int]] = {}  # term -> topic -> occurrences that are ignored words
        self._cut: Counter[int] = Counter()  # topic -> its terms that are ignored words
        self._counts: dict[str, Counter[str]] = {}
        self._holders: dict[str, Holders | None] = {}

    # --- TopicIndex ------------------------------------------------------------------

    def ids(self) -> list[str]:
        return list(self.order)

    def speakers(self, below: int | None = None) -> frozenset[str]:
        limit = _limit(below)
        names = {
            name
            for name, n in self.db.execute("SELECT name, topic FROM speakers")
            if n not in self.hidden and self._small(n, limit)
        }
        for record in self._live(below):
            names |= record.speakers
        return frozenset(names)

    def spoken_in(self, words: frozenset[str]) -> list[str]:
        if not words:
            return []
        held: set[int] | None = None
        for word in sorted(words):
            found = {n for (n,) in self.db.execute("SELECT topic FROM speakers WHERE name = ?", (word,))}
            held = found if held is None else held & found
        ids = {self.rows[n][0] for n in held or () if n in self.rows and n not in self.hidden}
        ids |= {topic_id for topic_id, record in self.overlay.items() if words <= record.speakers}
        return [topic_id for topic_id in self.order if topic_id in ids]

    def totals(self, ignore: frozenset[str], below: int | None = None) -> tuple[int, int]:
        self._ignore(ignore)
        limit = _limit(below)
        count = length = 0
        for n, (_, row) in self.rows.items():
            if n not in self.hidden and row.tokens < limit:
                count += 1
                length += row.length - self._cut[n]
        for topic_id, _ in self._live_items(below):
            count += 1
            length += sum(self._counts_of(topic_id, ignore).values())
        return count, length

    def frequencies(self, terms: Iterable[str], ignore: frozenset[str], below: int | None = None) -> dict[str, int]:
        self._ignore(ignore)
        wanted = set(terms)
        limit = _limit(below)
        found: Counter[str] = Counter()
        column = {None: "df", self.catalog.small_below: "small"}.get(below)
        if column is None:  # a size the catalog keeps no count for: count the holders
            for term, (ns, _) in self._fetch(wanted).items():
                found[term] = sum(1 for n in ns if self._small(n, limit))
        else:
            for chunk in _chunks(sorted(wanted)):
                marks = ",".join("?" * len(chunk))
                found.update(dict(self.db.execute(f"SELECT term, {column} FROM terms WHERE term IN ({marks})", chunk)))
        # The counts are of every catalog row: take out rows that do not count.
        for n in self.hidden:
            if self._small(n, limit):
                found.subtract(wanted & set(self._terms_of(n)))
        for term, cut in self._minus.items():
            if term in wanted:
                for n in cut:
                    if n not in self.hidden and self._small(n, limit) and not self._count(term, n):
                        found[term] -= 1
        for topic_id, _ in self._live_items(below):
            found.update(wanted & self._counts_of(topic_id, ignore).keys())
        return {term: count for term, count in found.items() if count > 0}

    def ranked(
        self, queries: list[Mapping[str, float]], average: float, ignore: frozenset[str], limit: int, slack: float
    ) -> list[list[tuple[float, str]]]:
        self._ignore(ignore)
        average = average or 1.0
        postings = self._fetch({term for query in queries for term in query})
        top = max([*self.rows, *(ns[-1] for ns, _ in postings.values() if ns)], default=0)
        norms = [1.0] * (top + 1)  # a topic number the rows lack (changed meanwhile) is dropped below
        for n, (_, row) in self.rows.items():
            norms[n] = 1.2 * (0.25 + 0.75 * (row.length - self._cut[n]) / average)
        results = []
        live = [(topic_id, self._counts_of(topic_id, ignore)) for topic_id, _ in self._live_items(None)]
        for query in queries:
            scores: dict[int, float] = {}
            for term, weight in query.items():
                held = postings.get(term)
                if held is None:
                    continue
                cut = self._minus.get(term)
                for n, c in zip(*held, strict=True):
                    if cut and n in cut:
                        c -= cut[n]
                        if c <= 0:
                            continue
                    scores[n] = scores.get(n, 0.0) + weight * c * 2.2 / (c + norms[n])
            found = [
                (score, self.rows[n][0])
                for n, score in scores.items()
                if score > 0 and n in self.rows and n not in self.hidden
            ]
            for topic_id, counts in live:
                norm = 1.2 * (0.25 + 0.75 * sum(counts.values()) / average)
                score = sum(w * counts[t] * 2.2 / (counts[t] + norm) for t, w in query.items() if counts[t])
                if score > 0:
                    found.append((score, topic_id))
            best = heapq.nlargest(limit, found)
            if len(best) == limit:  # and whatever may tie with the last
                best = sorted((f for f in found if f[0] >= best[-1][0] - slack), reverse=True)
            results.append(best)
        return results

    def near(
        self, vector: Mapping[str, float], idf: Mapping[str, float], ignore: frozenset[str], below: int, floor: float
    ) -> set[str]:
        self._ignore(ignore)
        # A topic holding none of the heaviest terms shares only terms whose
        # part of the vector is shorter than ``floor``: its cosine is lower.
        heaviest: list[str] = []
        rest = sum(v * v for v in vector.values())
        for term, value in sorted(vector.items(), key=lambda tv: (-tv[1], tv[0])):
            if rest < floor * floor * (1 - _SLACK):
                break
            heaviest.append(term)
            rest -= value * value
        postings = self._fetch(set(vector))
        chosen = {
            n
            for term in heaviest
            for n, _ in self._held(postings, term)
            if n not in self.hidden and self._small(n, below)
        }
        # The terms' counts in each chosen topic: looked up, or gathered from
        # the holders when there are fewer holders than lookups.
        counts: dict[int, list[tuple[str, int]]] = {n: [] for n in chosen}
        if len(chosen) * len(vector) <= sum(len(postings[t][0]) for t in vector if t in postings):
            for n, found_in in counts.items():
                found_in.extend((t, c) for t in vector if (c := self._count(t, n)))
        else:
            for term in vector:
                for n, count in self._held(postings, term):
                    if n in counts:
                        counts[n].append((term, count))
        found: set[str] = set()
        for n, held in counts.items():
            xs = [((1 + math.log(c)) * idf.get(t, 0.0), vector[t]) for t, c in held]
            dot = sum(x * v for x, v in xs)
            if dot > 0 and dot >= floor * (1 - _SLACK) * math.sqrt(sum(x * x for x, _ in xs)):
                found.add(self.rows[n][0])
        for topic_id, _ in self._live_items(below):
            own = self._counts_of(topic_id, ignore)
            shared = [((1 + math.log(own[t])) * idf.get(t, 0.0), v) for t, v in vector.items() if own[t]]
            product = sum(x * v for x, v in shared)
            if product > 0 and product >= floor * (1 - _SLACK) * math.sqrt(sum(x * x for x, _ in shared)):
                found.add(topic_id)
        return found

    def infos(self, ids: Iterable[str]) -> list[TopicInfo]:
        wanted = list(dict.fromkeys(ids))
        stored = [topic_id for topic_id in wanted if topic_id not in self.overlay]
        found: dict[str, TopicInfo] = {}
        for chunk in _chunks(stored):
            marks = ",".join("?" * len(chunk))
            for topic_id, summary, tokens, text in self.db.execute(
                "SELECT t.id, x.summary, t.tokens, x.text FROM topics t JOIN texts x ON x.n = t.n"
                f" WHERE t.id IN ({marks})",
                chunk,
            ):
                found[topic_id] = TopicInfo(topic_id, summary, tokens, text)
        for topic_id in wanted:
            record = self.overlay.get(topic_id)
            if record is not None:
                found[topic_id] = TopicInfo(topic_id, record.summary, record.tokens, record.text)
        return [found[topic_id] for topic_id in wanted if topic_id in found]

    # --- helpers ------------------------------------------------------------------------

    def _fetch(self, terms: set[str]) -> dict[str, Holders]:
        """The holders of these terms (terms no catalog topic has are left out)."""
        missing = sorted(t for t in terms if t not in self._holders)
        for chunk in _chunks(missing):
            marks = ",".join("?" * len(chunk))
            for term, ns, counts in self.db.execute(
                f"SELECT term, topics, counts FROM terms WHERE term IN ({marks})", chunk
            ):
                self._holders[term] = holders((ns, counts))
            for term in chunk:
                self._holders.setdefault(term, None)
        return {t: held for t in terms if (held := self._holders.get(t)) is not None}

    def _held(self, postings: Mapping[str, Holders], term: str) -> Iterable[tuple[int, int]]:
        """A term's holders and counts, ignored words left out."""
        held = postings.get(term)
        if held is None:
            return ()
        cut = self._minus.get(term)
        pairs = zip(*held, strict=True)
        if not cut:
            return pairs
        return ((n, c - cut.get(n, 0)) for n, c in pairs if c > cut.get(n, 0))

    def _count(self, term: str, n: int) -> int:
        """How often a catalog topic has a term, ignored words left out."""
        held = self._holders.get(term) if term in self._holders else self._fetch({term}).get(term)
        if held is None:
            return 0
        ns, counts = held
        at = _find(ns, n)
        if at < 0:
            return 0
        return counts[at] - self._minus.get(term, {}).get(n, 0)

    def _small(self, n: int, limit: int) -> bool:
        row = self.rows.get(n)
        return row is not None and row[1].tokens < limit

    def _terms_of(self, n: int) -> list[str]:
        return [t for (t,) in self.db.execute("SELECT DISTINCT term FROM words WHERE topic = ?", (n,))]

    def _live(self, below: int | None) -> list[Record]:
        return [record for _, record in self._live_items(below)]

    def _live_items(self, below: int | None) -> list[tuple[str, Record]]:
        limit = _limit(below)
        return [(topic_id, record) for topic_id, record in self.overlay.items() if record.tokens < limit]

    def _counts_of(self, topic_id: str, ignore: frozenset[str]) -> Counter[str]:
        self._ignore(ignore)
        counts = self._counts.get(topic_id)
        if counts is None:
            counts = self._counts[topic_id] = self.overlay[topic_id].counts(ignore)
        return counts

    def _ignore(self, ignore: frozenset[str]) -> None:
        """Per topic and term, the occurrences that are ignored words (speakers' names)."""
        if ignore == self._ignored:
            return
        self._ignored = ignore
        self._counts = {}
        self._minus = {}
        self._cut = Counter()
        for chunk in _chunks(sorted(ignore)):
            marks = ",".join("?" * len(chunk))
            for term, n, count in self.db.execute(
                f"SELECT term, topic, SUM(count) FROM words WHERE word IN ({marks}) GROUP BY term, topic", chunk
            ):
                self._minus.setdefault(term, {})[n] = self._minus.get(term, {}).get(n, 0) + count
                self._cut[n] += count


def _find(ns: array[int], n: int) -> int:
    at = bisect_left(ns, n)
    return at if at < len(ns) and ns[at] == n else -1


def _chunks(values: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(values), _CHUNK):
        yield values[start : start + _CHUNK]


def _limit(below: int | None) -> int:
    return below if below is not None else 2**62
