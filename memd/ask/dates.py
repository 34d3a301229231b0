"""The dates an answer quotes, written as a person writes them.

An entry's day is the one it speaks of (``when=``, resolved from its words
against the day it was written), else the day it was written. In an answer to
"when ...?", a day is written out ("Tuesday 2 December 2026").
"""

from __future__ import annotations

from memd.core.timeexpr import Span, dates_named, human_date
from memd.core.timeutil import time_or_none
from memd.index.records import Record, when_spans


def quote(record: Record, spoken: bool = False) -> str:
    """An entry's words, the day it speaks of (``when=``) or else the day it was
    written, and its citation; ``spoken``: the day as a person writes it
    ("Tuesday 2 December 2026"), and, for an entry that names no day of its
    own, a date its words name ("deadline pushed to 2027-01-10")."""
    day = dict(record.extra).get("when") or (record.time[:10] if record.time else None)
    if spoken:
        told = _spoken_day(record)
        day = human_date(told) if told is not None else None  # None: its words name the day, without a year
    when = f" ({day})" if day else ""
    return f"{' '.join(record.text.split())}{when} [{record.cite}]"


def _spoken_day(record: Record) -> Span | None:
    spans = when_spans(record)
    if spans:
        return min(spans)
    moment = time_or_none(record.time)
    named = dates_named(record.text, moment.date()) if moment else []
    if named:
        return named[0]  # the date its words name (None: named without its year, and left as said)
    return Span(moment.date(), moment.date()) if moment else None
