"""The dates an answer quotes, written as a person writes them.

An entry's day is the one it speaks of (``when=``, resolved from its words
against the day it was written), else the day it was written. In an answer to
"when ...?", a day is written out ("Tuesday 2 December 2026"), and a week or a
weekend the entry named relative to the day it was said ("last week", "two
weekends ago") is told against that day, as the speaker meant it: "the week
before 27 June 2023", not a Monday-to-Sunday span the speaker never named.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from memd.core.asked import dates_named, season_said
from memd.core.timeexpr import (
    WEEKDAY_PATTERN,
    WEEKDAYS,
    Span,
    human_date,
    resolve,
    tense_at,
)
from memd.core.timeutil import DAY_NAMES, MONTH_NAMES, time_or_none
from memd.index.records import Record, when_spans

_ON_WEEKDAY = re.compile(rf"\bon\s+({WEEKDAY_PATTERN})\b", re.IGNORECASE)
# How many weeks (or weekends) back a relative span may be told in words.
_COUNTS = {1: "the", 2: "two", 3: "three", 4: "four"}


def quote(record: Record, spoken: bool = False) -> str:
    """An entry's words, the day it speaks of (``when=``) or else the day it was
    written, and its citation; ``spoken``: the day as a person writes it
    ("Tuesday 2 December 2026", "the week before 27 June 2023"), and, for an
    entry that names no day of its own, a date its words name ("deadline pushed
    to 2027-01-10")."""
    day = dict(record.extra).get("when") or (record.time[:10] if record.time else None)
    if spoken:
        day = spoken_day(record)
    when = f" ({day})" if day else ""
    return f"{' '.join(record.text.split())}{when} [{record.cite}]"


def spoken_day(record: Record) -> str | None:
    """The day of ``record`` as a person writes it (None: its words name a day without its year)."""
    spans = when_spans(record)
    moment = time_or_none(record.time)
    if spans:
        span = min(spans)
        # Told against the day said only when the words name it so ("last week"), not
        # when the days were given outright (``--meta when=2026-11-14..2026-11-15``).
        relative = moment is not None and span in resolve(record.text, moment.date())
        told = told_against(span, moment.date()) if moment is not None and relative else None
        return told or human_date(span)
    named = dates_named(record.text, moment.date()) if moment else []
    if named:  # the date its words name (None: named without its year, and left as said)
        if named[0] is not None:
            return human_date(named[0])
        return weekday_told(record.text, moment.date()) if moment else None
    season = season_said(record.text, moment.date()) if moment else None
    if season is not None:  # "a camp last summer", said in December: the summer, not the day said
        return season
    return human_date(Span(moment.date(), moment.date())) if moment else None


def weekday_told(text: str, said: date) -> str | None:
    """A weekday named alone ("won it on Friday"), told against the day it was said:
    "the Friday before 10 July 2022" when its sentence plainly tells of the past, after
    it when of the future, and None when it does not say ("see you on Friday"). Which
    Friday is the speaker's to know (``core/timeexpr.py`` resolves no bare weekday);
    the day said, and on which side of it, is what the words give."""
    match = _ON_WEEKDAY.search(text)
    if match is None:
        return None
    side = {"past": "before", "future": "after"}.get(tense_at(text, match.start()) or "")
    if side is None:
        return None
    name = DAY_NAMES[WEEKDAYS[match.group(1).lower()]]
    return f"the {name} {side} {_day(said)}"


def told_against(span: Span, said: date) -> str | None:
    """A week (Monday to Sunday) or a weekend one to four from the week of
    ``said``, before or after it, told against that day ("two weeks before 11
    August 2023", "the weekend after 3 June 2022"); None for any other span."""
    start, end = span.start, span.end
    week = (end - start).days == 6 and start.weekday() == 0
    weekend = (end - start).days == 1 and start.weekday() == 5
    if not (week or weekend) or start <= said <= end:
        return None
    monday = said - timedelta(days=said.weekday())
    if end < said:
        count, side = (monday - start).days // 7 + (1 if weekend else 0), "before"
    else:
        count, side = (start - monday).days // 7 + (1 if weekend else 0), "after"
    if count not in _COUNTS:
        return None
    unit = f"{'week' if week else 'weekend'}{'s' if count > 1 else ''}"
    return f"{_COUNTS[count]} {unit} {side} {_day(said)}"


def _day(said: date) -> str:
    """The day something was said, as the span told against it names it ("10 July 2022")."""
    return f"{said.day} {MONTH_NAMES[said.month - 1]} {said.year}"
