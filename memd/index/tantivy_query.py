"""The tantivy backend's queries: scored as Whoosh scores, filtered as Whoosh filters.

- Words: one clause per query term and text field. tantivy's idf is not
  Whoosh's, so each clause's boost carries the ratio of Whoosh's idf to
  tantivy's (with the field's boost and the term's own); the padding in
  ``tantivy_schema`` takes care of b.
- Filters (time, source, kind, doc) are term and range queries that add no
  score, as Whoosh's ``Require`` does: they decide what matches, never the order.

Kept apart from the backend because these are pure translations of memd's
terms and ``Filters`` into tantivy queries, the part most likely to change
when tantivy's query API does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tantivy

from memd.index.base import Filters
from memd.index.bm25 import tantivy_idf, whoosh_idf
from memd.index.fields import FIELD_BOOSTS
from memd.index.tantivy_schema import micros


def search_query(schema: Any, searcher: Any, terms: Sequence[tuple[str, float]], filters: Filters) -> Any | None:
    """The query for ``terms`` within ``filters``; None when no term is in the index."""
    docs = searcher.num_docs
    should: list[tuple[Any, Any]] = []
    for term, boost in terms:
        for field, field_boost in FIELD_BOOSTS.items():
            doc_freq = searcher.doc_freq(field, term)
            if doc_freq == 0:
                continue
            # Whoosh's idf in place of tantivy's: the boost carries the ratio.
            weight = boost * field_boost * whoosh_idf(doc_freq, docs) / tantivy_idf(doc_freq, docs)
            clause = tantivy.Query.term_query(schema, field, term, index_option="freq")
            should.append((tantivy.Occur.Should, tantivy.Query.boost_query(clause, weight)))
    if not should:
        return None
    query = tantivy.Query.boolean_query(should)
    restriction = filter_query(schema, filters)
    if restriction is not None:
        # Scored by the words only; the filter matches or not (as Whoosh's Require).
        query = tantivy.Query.boolean_query(
            [
                (tantivy.Occur.Must, query),
                (tantivy.Occur.Must, tantivy.Query.const_score_query(restriction, 0.0)),
            ]
        )
    return query


def filter_query(schema: Any, filters: Filters) -> Any:
    """The query a record must match to pass ``filters``; None when they restrict nothing."""
    query = tantivy.Query
    parts: list[Any] = []
    if filters.since or filters.until:
        start = micros(filters.since.replace(tzinfo=None)) if filters.since else None
        end = micros(filters.until.replace(tzinfo=None)) if filters.until else None
        written = query.range_query(schema, "time", tantivy.FieldType.Integer, start, end)
        # An entry counts in a period when it was written then, or names a day in it ("yesterday").
        named = []
        if end is not None:
            named.append(query.range_query(schema, "when_start", tantivy.FieldType.Integer, None, end))
        if start is not None:
            named.append(query.range_query(schema, "when_end", tantivy.FieldType.Integer, start, None))
        names = query.boolean_query([(tantivy.Occur.Must, q) for q in named])
        parts.append(query.boolean_query([(tantivy.Occur.Should, written), (tantivy.Occur.Should, names)]))
    for field in ("source", "kind", "doc"):
        value = getattr(filters, field)
        if value:
            parts.append(query.term_query(schema, field, value, index_option="basic"))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else query.boolean_query([(tantivy.Occur.Must, q) for q in parts])


def entries_holding(schema: Any, seqs: list[str]) -> Any:
    """Entry records holding any of ``seqs`` (a partition record carries its members' seqs too)."""
    return tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Must, tantivy.Query.term_set_query(schema, "seqs", seqs)),
            (tantivy.Occur.Must, tantivy.Query.term_query(schema, "kind", "entry", index_option="basic")),
        ]
    )
