"""Relative time expressions resolved against the moment an entry was written.

"I went to the support group yesterday", written on 2023-05-08, happened on
2023-05-07. ``resolve`` finds such expressions ("yesterday", "last week",
"two days ago", "last Friday", "next month", "this weekend", "in June") and
gives the dates they stand for; ``when_value`` renders them for an entry's
signature (``when=2023-05-07``), so the words stay as written while readers,
date filters and "when did ..." questions see the absolute date.

Conventions: weeks run Monday to Sunday; "last Friday" is the latest Friday
before the day of writing, "next Friday" the first one after it; a month
named without a year ("in June") is the June nearest the day of writing,
unless its sentence plainly tells of the past ("moved to Kyoto in May",
written in November: this May) or of the future ("will fly out in April":
next April).
Vague phrases ("recently", "the other day") and bare weekdays ("on Friday",
past or future?) are left alone: no date is better than a wrong one.
Everything here is pure: text and a date in, dates out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from functools import cache

from memd.core.errors import FormatError
from memd.core.timeutil import DAY_NAMES, MONTH_NAMES

MONTHS = {name.lower(): i for i, name in enumerate(MONTH_NAMES, 1)}
MONTHS.update({name[:3].lower(): i for i, name in enumerate(MONTH_NAMES, 1) if name != "May"})
MONTHS["sept"] = 9
WEEKDAYS = {name.lower(): i for i, name in enumerate(DAY_NAMES)}
# The weekdays after "last", "this" or "next", also as chat shortens them ("Last Fri I took my
# kids to a workshop"); not "sat" and "sun": "we last sat together", "the last sun of summer".
_WEEKDAYS_SAID = WEEKDAYS | {
    "mon": 0, "tue": 1, "tues": 1, "wed": 2, "weds": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4,
}  # fmt: skip
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple of": 2,
    "a couple of": 2,
}
# Informal spellings seen in chat, mapped to the word they stand for.
ALIASES = {
    "yday": "yesterday",
    "yest": "yesterday",
    "yesterdy": "yesterday",
    "ystrday": "yesterday",
    "tmrw": "tomorrow",
    "tmr": "tomorrow",
    "tmrrw": "tomorrow",
    "tomoro": "tomorrow",
    "tomorow": "tomorrow",
    "2moro": "tomorrow",
    "2morrow": "tomorrow",
    "2day": "today",
    "tonite": "tonight",
    "2nite": "tonight",
    "wk": "week",
    "wknd": "weekend",
    "wkend": "weekend",
    "mo": "month",
    "yr": "year",
}
MAX_SPANS = 4  # an entry that names more times than this is a schedule, not a story


@dataclass(frozen=True, order=True)
class Span:
    """An inclusive range of days."""

    start: date
    end: date

    def render(self) -> str:
        if self.start == self.end:
            return self.start.isoformat()
        last = _days_in(self.start.year, self.start.month)
        if self.start.day == 1 and self.end == self.start.replace(day=last):
            return f"{self.start.year:04d}-{self.start.month:02d}"
        if (self.start.month, self.start.day, self.end.month, self.end.day) == (1, 1, 12, 31) and (
            self.start.year == self.end.year
        ):
            return f"{self.start.year:04d}"
        return f"{self.start.isoformat()}..{self.end.isoformat()}"


def week_span(day: date) -> Span:
    monday = day - timedelta(days=day.weekday())
    return Span(monday, monday + timedelta(days=6))


def _days_in(year: int, month: int) -> int:
    following = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    return (following - timedelta(days=1)).day


def month_span(year: int, month: int) -> Span:
    while month < 1:
        year, month = year - 1, month + 12
    while month > 12:
        year, month = year + 1, month - 12
    return Span(date(year, month, 1), date(year, month, _days_in(year, month)))


def year_span(year: int) -> Span:
    return Span(date(year, 1, 1), date(year, 12, 31))


def _weekend(day: date, weeks: int) -> Span:
    """The weekend of the week ``weeks`` after the one holding ``day``."""
    saturday = day - timedelta(days=day.weekday()) + timedelta(days=5 + 7 * weeks)
    return Span(saturday, saturday + timedelta(days=1))


def _nearest_month(today: date, month: int) -> Span:
    candidates = [month_span(today.year + shift, month) for shift in (-1, 0, 1)]
    return min(candidates, key=lambda s: (abs((s.start - today.replace(day=1)).days), s.start > today))


_NUM = r"(\d{1,2}|a couple of|couple of|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(day|week|month|year)s?"
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
WEEKDAY_PATTERN = "|".join(WEEKDAYS)
_PATTERN = (
    r"\b(?:"
    r"(?P<dby>the day before yesterday)|(?P<dat>the day after tomorrow)|"
    r"(?P<single>yesterday|today|tonight|tomorrow|last night|this (?:morning|afternoon|evening))|"
    rf"(?P<ago>{_NUM} {_UNIT} ago)|(?P<few>a few days ago)|"
    rf"(?P<ahead>in {_NUM} {_UNIT})|"
    rf"(?P<rel>(?:last|this|next) (?:week|weekend|month|year))|"
    rf"(?P<wday>(?:last|this|next) (?:{'|'.join(_WEEKDAYS_SAID)}))|"
    rf"(?P<mon>(?:in|during|last|this|next|since|by|until) (?:{_MONTH})(?: (?P<myear>(?:19|20)\d\d))?)"
    r")\b"
)
_ALIAS = r"\b(" + "|".join(map(re.escape, ALIASES)) + r")\b"
# Every expression holds one of these words (or an alias): a text without any
# is not searched, and the patterns are compiled only for one that has
# (compiling them costs every `memd add` milliseconds).
TRIGGERS = frozenset(
    {"yesterday", "today", "tonight", "tomorrow", "night", "morning", "afternoon", "evening", "ago"}
    | {*MONTHS, *_WEEKDAYS_SAID, *ALIASES}
    | {unit + plural for unit in ("day", "week", "weekend", "month", "year") for plural in ("", "s")}
)
LOWER_WORDS = re.compile(r"[a-z0-9]+")


@cache
def patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    return re.compile(_PATTERN, re.IGNORECASE), re.compile(_ALIAS, re.IGNORECASE)


def resolve(text: str, today: date, *, asides: bool = True) -> list[Span]:
    """The days each relative time expression in ``text`` names, in order of
    appearance; ``asides=False`` leaves out those said in a side clause
    ("because Ingrid is on leave in December"): they date another fact."""
    if TRIGGERS.isdisjoint(LOWER_WORDS.findall(text.lower())):
        return []
    pattern, alias = patterns()
    plain = alias.sub(lambda m: ALIASES[m.group(1).lower()], text)
    side = [] if asides else _side_clauses(plain)
    spans: list[Span] = []
    for match in pattern.finditer(plain):
        if any(start <= match.start() < end for start, end in side):
            continue
        span = span_of(match, today)
        if span is not None and span not in spans:
            spans.append(span)
    return spans


# A clause that gives a reason or a concession tells of another fact than the
# entry's own: "The deadline was pushed to 2027-01-10 because Ingrid is on leave
# in December" happened when it was written, not in December. It runs from its
# conjunction to the next comma or the end of the sentence. ("since" and "as"
# are left out: as often as not they introduce the time itself, "since May".)
_SIDE = re.compile(r"\b(?:because|cause|although|though|whereas|given that)\b(?!\s+of\b)[^,;.!?\n]*", re.IGNORECASE)


def _side_clauses(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _SIDE.finditer(text)]


def span_of(match: re.Match[str], today: date) -> Span | None:
    phrase = " ".join(match.group(0).lower().split())
    day = timedelta(days=1)
    if match.group("dby"):
        return Span(today - 2 * day, today - 2 * day)
    if match.group("dat"):
        return Span(today + 2 * day, today + 2 * day)
    if match.group("single"):
        shift = {"yesterday": -1, "last night": -1, "tomorrow": 1}.get(phrase, 0)
        return Span(today + shift * day, today + shift * day)
    if match.group("few"):
        return Span(today - 6 * day, today - 2 * day)
    if match.group("ago") or match.group("ahead"):
        words = phrase.removeprefix("in ").removesuffix(" ago").rsplit(" ", 1)
        count = int(words[0]) if words[0].isdigit() else NUMBERS[words[0]]
        unit = words[1].rstrip("s")
        return _shifted(today, -count if match.group("ago") else count, unit)
    if match.group("rel"):
        which, unit = phrase.split()
        step = {"last": -1, "this": 0, "next": 1}[which]
        if unit == "week":
            return week_span(today + timedelta(weeks=step))
        if unit == "weekend":
            return _weekend(today, step)
        if unit == "month":
            return month_span(today.year, today.month + step)
        return year_span(today.year + step)
    if match.group("wday"):
        which, name = phrase.split()
        target = _WEEKDAYS_SAID[name]
        if which == "last":
            back = (today.weekday() - target) % 7 or 7
            found = today - back * day
        elif which == "next":
            ahead = (target - today.weekday()) % 7 or 7
            found = today + ahead * day
        else:
            found = today - timedelta(days=today.weekday()) + target * day
        return Span(found, found)
    if match.group("mon"):
        which = phrase.split()[0]
        month = MONTHS[phrase.split()[1]]
        if match.group("myear"):
            return month_span(int(match.group("myear")), month)
        if which == "last":
            year = today.year if month < today.month else today.year - 1
            return month_span(year, month)
        if which == "next":
            year = today.year if month > today.month else today.year + 1
            return month_span(year, month)
        if which == "this":
            return month_span(today.year, month)
        if which in ("in", "during", "since"):
            tense = "past" if which == "since" else tense_at(match.string, match.start())
            if tense == "past":  # "moved to Kyoto in May", written in November: this May, not next
                return month_span(today.year if month <= today.month else today.year - 1, month)
            if tense == "future":  # "will fly out in April", written in November: next April
                return month_span(today.year if month >= today.month else today.year + 1, month)
        return _nearest_month(today, month)
    return None


# What says a sentence tells of the past or of the future. Only plain cues count: a past
# verb after its subject ("I moved", "Dana finally moved") or opening the sentence
# ("Moved to Kyoto in May"), a past auxiliary; a future auxiliary or intention. With
# cues of both kinds, or none, a month named without a year is the nearest one.
FUTURE = re.compile(
    r"\b(?:will|won't|shall|gonna|going to|plan(?:s|ning)? to|hop(?:e|es|ing) to|want(?:s)? to|about to"
    r"|looking forward|can't wait|upcoming)\b|'ll\b",
    re.IGNORECASE,
)
_PAST = re.compile(
    r"\b(?i:was|were|had|did|went|got|came|took|bought|met|left|saw|began|told|said|found|gave|ran|wrote"
    r"|spent|flew|felt|kept|lost|won|sold|paid|built|drove|ate|became|brought|caught|taught)\b"
    r"|\b(?:(?i:i|we|he|she|they|you)|[A-Z][a-z]+)(?: (?:just|finally|also|already|first|then|even|actually))?"
    r" [a-z]+[^\We]ed\b"  # not "need", "feed", "proceed"
    r"|^\W*[A-Z][a-z]*[^\We]ed\b",
)
_SENTENCE_END = re.compile(r"[.!?\n]")
# "Dana said the contract renews in March": the saying is past, what was said is not. When
# a clause follows a verb of saying (``_clause_between``), the month is read in that clause;
# "told me in May" (no clause between) is still the telling's own time.
_REPORTED = re.compile(r"\b(?i:said|says|told|tells)\b")


def _clause_between(words: str) -> bool:
    """Whether the words between a verb of saying and a month make a clause of their own."""
    parts = words.split()
    return bool(parts) and (parts[0].lower() == "that" or len(parts) >= 3)


def tense_at(text: str, at: int) -> str | None:
    """ "past", "future" or None for the sentence of ``text`` holding position ``at``
    (from its reported words on, when it reports speech before ``at``)."""
    start = max((m.end() for m in _SENTENCE_END.finditer(text, 0, at)), default=0)
    reported = [m for m in _REPORTED.finditer(text, start, at) if _clause_between(text[m.end() : at])]
    if reported:
        start = reported[-1].end()
    end_match = _SENTENCE_END.search(text, at)
    sentence = text[start : end_match.start() if end_match else len(text)]
    future = bool(FUTURE.search(sentence))
    past = bool(_PAST.search(sentence))
    if future == past:
        return None
    return "future" if future else "past"


def _shifted(today: date, count: int, unit: str) -> Span:
    if unit == "day":
        moment = today + timedelta(days=count)
        return Span(moment, moment)
    if unit == "week":
        return week_span(today + timedelta(weeks=count))
    if unit == "month":
        return month_span(today.year, today.month + count)
    return year_span(today.year + count)


def when_value(text: str, time: str | None) -> str | None:
    """The ``when=`` signature value for an entry written at ``time`` (None: no expression, or no time)."""
    if not time:
        return None
    from memd.core.timeutil import parse_time

    try:
        moment = parse_time(time)
    except FormatError:
        return None
    spans = resolve(text, moment.date(), asides=False)
    if not spans or len(spans) > MAX_SPANS:
        return None
    return ";".join(span.render() for span in spans)


def with_when(extra: tuple[tuple[str, str], ...], text: str, time: str | None) -> tuple[tuple[str, str], ...]:
    """``extra`` plus ``("when", ...)`` when the text names a relative time and none is recorded yet."""
    if any(key == "when" for key, _ in extra):
        return extra
    value = when_value(text, time)
    return (*extra, ("when", value)) if value else extra


_VALUE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def parse_when(value: str) -> list[Span]:
    """Spans of a ``when=`` value (``2023-05-07``, ``2023-05``, ``2023``, ``a..b``, ``;``-joined);
    parts that do not parse are skipped (the value may have been edited by hand)."""
    spans: list[Span] = []
    for part in value.split(";"):
        first, _, last = part.strip().partition("..")
        try:
            start = _bound(first, end=False)
            end = _bound(last or first, end=True)
        except ValueError:
            continue
        if start <= end:
            spans.append(Span(start, end))
    return spans


def _bound(text: str, end: bool) -> date:
    match = _VALUE.match(text.strip())
    if not match:
        raise ValueError(text)
    year = int(match.group(1))
    if match.group(3):
        return date(year, int(match.group(2)), int(match.group(3)))
    if match.group(2):
        month = int(match.group(2))
        return month_span(year, month).end if end else date(year, month, 1)
    return date(year, 12, 31) if end else date(year, 1, 1)


def describe(span: Span) -> str:
    """Words a question may use for the span: month names, years, and the weekday of a single day."""
    words: list[str] = []
    cursor = span.start.replace(day=1)
    while cursor <= span.end and len(words) < 24:
        words += [MONTH_NAMES[cursor.month - 1], str(cursor.year)]
        cursor = month_span(cursor.year, cursor.month + 1).start
    if span.start == span.end:
        words.append(DAY_NAMES[span.start.weekday()])
    return " ".join(dict.fromkeys(words))


def human_date(span: Span) -> str:
    """A span as a person writes it: "Tuesday 2 December 2026", "December 2026", "2026"."""
    start, end = span.start, span.end
    if start == end:
        return f"{DAY_NAMES[start.weekday()]} {start.day} {MONTH_NAMES[start.month - 1]} {start.year}"
    if span == month_span(start.year, start.month):
        return f"{MONTH_NAMES[start.month - 1]} {start.year}"
    if span == year_span(start.year):
        return str(start.year)
    if (start.year, start.month) == (end.year, end.month):
        return f"{start.day} to {end.day} {MONTH_NAMES[start.month - 1]} {start.year}"
    if start.year == end.year:
        return f"{start.day} {MONTH_NAMES[start.month - 1]} to {end.day} {MONTH_NAMES[end.month - 1]} {start.year}"
    first = f"{start.day} {MONTH_NAMES[start.month - 1]} {start.year}"
    return f"{first} to {end.day} {MONTH_NAMES[end.month - 1]} {end.year}"
