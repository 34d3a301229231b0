"""The time a question names ("what did I do last May?", "before Christmas",
"on 3 March 2025"), resolved against the moment it is asked (now, or the date
of ``--as-of``), and whether an entry speaks of it. Readers use it to keep the
evidence from that time and to order it by the day each entry speaks of. The
relative expressions of entries and questions alike are ``timeexpr.py``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta

from memd.core.timeexpr import (
    ALIASES,
    FUTURE,
    LOWER_WORDS,
    MONTHS,
    TRIGGERS,
    WEEKDAY_PATTERN,
    Span,
    month_span,
    patterns,
    span_of,
    tense_at,
    week_span,
    year_span,
)

# Who resolves what:
# - The relative expressions ``timeexpr.resolve`` reads ("yesterday", "two weeks ago", "last week",
#   "last May", "in May") stay with ``resolve``: it gives the whole week or
#   month they stand for, where dateparser gives one day inside it ("two
#   weeks ago" -> the day 14 days back), and it reads "last May" whole
#   (dateparser's ``search_dates`` finds only "May" in it, and finds a month
#   in "who may come?").
# - Seasons ("this spring", "last summer") and feasts ("before Christmas")
#   are read here: dateparser knows neither.
# - Everything else that names a date, with or without a year ("in 2025",
#   "on 3 March 2025", "March 3rd", "2025-05-14", "14/05/2025", "on
#   Tuesday"), goes to dateparser (``DateDataParser.get_date_data`` on the
#   expression located here, which also tells whether a day, a month or a
#   year is meant): its date grammar covers far more spellings than ours.
#   It is imported only when a question holds such an expression, so adding
#   memories and plain searches never load it.
SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11), "fall": (9, 11), "winter": (12, 2)}
FEASTS = {
    "christmas eve": (12, 24),
    "christmas": (12, 25),
    "boxing day": (12, 26),
    "new year's eve": (12, 31),
    "new years eve": (12, 31),
    "new year's day": (1, 1),
    "new year": (1, 1),
    "new year's": (1, 1),
    "halloween": (10, 31),
    "valentine's day": (2, 14),
    "valentines day": (2, 14),
}
FEAST_DAYS = 30  # "before Christmas" is the month before it, "after Christmas" the month after
_SEASON = re.compile(
    r"\b(?:(?P<which>last|this|next|past|in|during|over|since)\s+(?:the\s+)?)?"
    r"(?P<season>spring|summer|autumn|fall|winter)\b(?:\s+(?:of\s+)?(?P<year>(?:19|20)\d\d)\b)?",
    re.IGNORECASE,
)
_FEAST = re.compile(
    r"\b(?P<rel>before|after|since|until|till|around|at|on|over|for)?\s*(?:(?P<which>last|this|next)\s+)?"
    r"(?P<feast>" + "|".join(sorted((re.escape(f) for f in FEASTS), key=len, reverse=True)) + r")"
    r"(?:\s+(?:(?P<year>(?:19|20)\d\d)|(?P<whichyear>last|this|next)\s+year))?\b",
    re.IGNORECASE,
)
# What dateparser is asked to read: a year, a day and a month in either order
# (with an optional weekday and year), a numeric date, or a weekday after "on".
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_MONTH_WORD = "(?:" + "|".join(sorted({*MONTHS, "sep"}, key=len, reverse=True)) + r")\.?"
_DATED = re.compile(
    r"\b(?:"
    rf"(?:(?:on|in|by|since|until|before|after)\s+)?(?:(?:{WEEKDAY_PATTERN}),?\s+)?(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH_WORD}(?:,?\s+(?:19|20)\d\d)?"
    rf"|(?:(?:on|in|by|since|until|before|after)\s+)?(?:(?:{WEEKDAY_PATTERN}),?\s+)?{_MONTH_WORD}\s+{_DAY}(?:,?\s+(?:19|20)\d\d)?"
    r"|\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}/\d{2,4}"
    rf"|{_MONTH_WORD}\s+(?:19|20)\d\d"
    r"|(?:in|during|since|by|until|of|before|after)\s+(?:19|20)\d\d"
    rf"|on\s+(?:{WEEKDAY_PATTERN})"
    r")\b",
    re.IGNORECASE,
)
_PAST_QUESTION = re.compile(r"\b(?:did|was|were|had|have|has|ago|last|went|got|been)\b|\b[a-z]+ed\b", re.IGNORECASE)


@dataclass(frozen=True)
class Asked:
    """The time a question names: the days, and the words that named them."""

    span: Span
    words: str
    start: int
    end: int
    others: tuple[tuple[int, int], ...] = ()  # where the question names other times (left out of what it asks)


def question_time(question: str, today: date) -> Asked | None:
    """The span of days ``question`` asks about, or None when it names no time.

    The first expression that resolves wins: questions rarely name two times,
    and when they do ("between May and June") the first is the start."""
    found: list[Asked] = []
    for match in _SEASON.finditer(question):
        if match.group("which") or match.group("year"):  # "fall" alone is a verb as often as a season
            found.append(Asked(_season(match, today, _past(question)), match.group(0), match.start(), match.end()))
    for match in _FEAST.finditer(question):
        found.append(Asked(_feast(match, today, _past(question)), match.group(0).strip(), match.start(), match.end()))
    if not found:
        found += _relative(question, today)
    if not found:
        found += _dated(question, today)
    else:  # the other expressions only refine the first ("before Christmas last year"): not what is asked about
        found += [Asked(a.span, a.words, a.start, a.end) for a in _relative(question, today) if a.start >= found[0].end]
    if not found:
        return None
    first = min(found, key=lambda asked: asked.start)
    return replace(first, others=tuple((a.start, a.end) for a in found if a is not first))


def _past(question: str) -> bool:
    return bool(_PAST_QUESTION.search(question)) and not FUTURE.search(question)


def season_said(text: str, said: date) -> str | None:
    """A season an entry's words place ("last summer", "this winter", "summer 2022"),
    read against the day it was said, as a person writes it ("summer 2023", "winter
    2023-24"). A season the words do not place ("in summer", "fall") is none: no
    date is better than a wrong one."""
    for match in _SEASON.finditer(text):
        which = (match.group("which") or "").lower()
        if which not in ("last", "this", "next", "past") and not match.group("year"):
            continue
        span = _season(match, said, tense_at(text, match.start()) == "past")
        years = str(span.start.year)
        if span.end.year != span.start.year:
            years += f"-{span.end.year % 100:02d}"
        return f"{match.group('season').lower()} {years}"
    return None


def _season(match: re.Match[str], today: date, past: bool) -> Span:
    first, last = SEASONS[match.group("season").lower()]
    which = (match.group("which") or "").lower()

    def of(year: int) -> Span:  # winter runs into the next year
        return Span(month_span(year, first).start, month_span(year + (last < first), last).end)

    if match.group("year"):
        return of(int(match.group("year")))
    this = of(today.year if today.month >= first or last >= first else today.year - 1)
    if this.start > today:  # this year's has not begun: "this spring" in January is the coming one
        this = of(this.start.year - 1) if which in ("last", "past", "since") or past else this
        return this if which != "next" else of(this.start.year + 1)
    if which == "next":
        return of(this.start.year + 1)
    if which in ("last", "past") and today <= this.end:  # in the middle of it, "last summer" is the one before
        return of(this.start.year - 1)
    return this


def _feast(match: re.Match[str], today: date, past: bool) -> Span:
    month, day_of = FEASTS[" ".join(match.group("feast").lower().split())]
    which = (match.group("which") or match.group("whichyear") or "").lower()
    if match.group("year"):
        year = int(match.group("year"))
    else:
        year = today.year
        if which == "last" or (past and date(year, month, day_of) > today and which != "next"):
            year -= 1
        elif which == "next" and date(year, month, day_of) <= today:
            year += 1
    day = date(year, month, day_of)
    rel = (match.group("rel") or "").lower()
    if rel in ("before", "until", "till"):
        return Span(day - timedelta(days=FEAST_DAYS), day - timedelta(days=1))
    if rel in ("after", "since"):
        return Span(day + timedelta(days=1), day + timedelta(days=FEAST_DAYS))
    if rel in ("around", "over"):
        return Span(day - timedelta(days=3), day + timedelta(days=3))
    return Span(day, day)


def _relative(question: str, today: date) -> list[Asked]:
    """The relative expressions ``resolve`` reads, located in the question."""
    if TRIGGERS.isdisjoint(LOWER_WORDS.findall(question.lower())):
        return []
    pattern, alias = patterns()
    plain = alias.sub(lambda m: ALIASES[m.group(1).lower()], question)
    found: list[Asked] = []
    for match in pattern.finditer(plain):
        if match.group("mon") and match.group("myear"):
            continue  # a month with its year is dateparser's ("in May 2025")
        span = span_of(match, today)
        if span is not None:
            found.append(Asked(span, match.group(0), match.start(), match.end()))
    return found


def dates_named(text: str, written: date) -> list[Span | None]:
    """The dates an entry's words name outright ("pushed to 2027-01-10", "on
    3 March 2025"), read against the day it was written; None for a date
    named without its year ("on 14 March": a birthday is every year's)."""
    return [
        asked.span if re.search(r"\d{4}|\d/\d+/\d", asked.words) else None
        for asked in _dated(text, written, shift=False)
    ]


def _dated(question: str, today: date, shift: bool = True) -> list[Asked]:
    """Dates dateparser reads, at the places ``_DATED`` finds them; ``shift``:
    "before"/"after" a date asks about the time before or after it."""
    matches = [m for m in _DATED.finditer(question) if not re.fullmatch(r"may\s+\d{1,2}", m.group(0), re.I)]
    if not matches:
        return []
    from dateparser.date import DateDataParser  # imported here only: it takes a while

    past = _past(question)
    settings = {
        "RELATIVE_BASE": datetime.combine(today, datetime.min.time()),
        "PREFER_DATES_FROM": "past" if past else "current_period",
        "RETURN_TIME_AS_PERIOD": True,
        "PREFER_DAY_OF_MONTH": "first",
    }
    parser = DateDataParser(languages=["en"], settings=settings)
    found: list[Asked] = []
    for match in matches:
        words = re.sub(r"^(?:on|in|by|since|until|before|after|during|of)\s+", "", match.group(0), flags=re.I)
        data = parser.get_date_data(words)
        if data.date_obj is None:
            continue
        day = data.date_obj.date()
        period = data.period or "day"
        if period == "year":
            span = year_span(day.year)
        elif period == "month":
            span = month_span(day.year, day.month)
        elif period == "week":
            span = week_span(day)
        else:
            span = Span(day, day)
        lead = match.group(0).split()[0].lower() if shift else ""
        if lead in ("before", "until", "by"):
            span = Span(span.start - timedelta(days=365 if period == "year" else 31), span.start - timedelta(days=1))
        elif lead in ("after", "since"):
            span = Span(span.end + timedelta(days=1), max(today, span.end + timedelta(days=1)))
        found.append(Asked(span, match.group(0), match.start(), match.end()))
    return found


WRITTEN_LATE_DAYS = 3  # what happened on a day is often written down a few days after


def in_span(spans: list[Span], written: date | None, asked: Span) -> bool:
    """Whether an entry speaks of the asked days: a day it names (``when=``)
    falls in them, or it was written in them or in the few days after (a
    ``when=`` may name another time than the one asked about: "7 people came,
    and want to come again next month")."""
    if any(span.start <= asked.end and span.end >= asked.start for span in spans):
        return True
    return written is not None and asked.start <= written <= asked.end + timedelta(days=WRITTEN_LATE_DAYS)
