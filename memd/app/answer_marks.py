"""Whether an answer holds the expected one, as ``memd eval locomo`` scores it:
both normalised (case, punctuation, articles, number words as digits, dates
in common formats as ISO dates), then the expected words looked for in order,
and its content words at least half held.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_NUMBER_WORDS = {
    word: str(n)
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_NUMBER_WORDS.update({"thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "once": "1", "twice": "2"})
_MONTH_SPELLINGS = (
    "jan january|feb february|mar march|apr april|may|jun june|jul july|aug august|sep sept september"
    "|oct october|nov november|dec december"
)
_MONTHS = {name: n for n, names in enumerate(_MONTH_SPELLINGS.split("|"), start=1) for name in names.split()}
_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_WEEKDAY_RE = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day,?\s+"
_DAY_RE = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATES = (
    # 7 May 2023, Sunday 7 May 2023, 7th of May, 2023, 7May, 2023 (typed without the space)
    (re.compile(rf"\b(?:{_WEEKDAY_RE})?{_DAY_RE}\s*(?:of\s+)?({_MONTH_RE})\.?,?\s+(\d{{4}})\b"), (3, 2, 1)),
    # May 7, 2023, Sunday, May 7th 2023
    (re.compile(rf"\b(?:{_WEEKDAY_RE})?({_MONTH_RE})\.?\s+{_DAY_RE},?\s+(\d{{4}})\b"), (3, 1, 2)),
    # May 2023, May, 2023
    (re.compile(rf"\b({_MONTH_RE})\.?,?\s+(\d{{4}})\b"), (2, 1, None)),
)
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})(?:-(\d{1,2}))?\b")


def normalise(text: str) -> str:
    """Text as answers are compared: lower case, dates as ISO dates (``2023-05-07``,
    ``2023-05``), number words as digits, no punctuation or articles."""
    lowered = text.lower()

    def iso(order: tuple[int, int, int | None]) -> Callable[[re.Match[str]], str]:
        def put(match: re.Match[str]) -> str:
            year, month = match.group(order[0]), _MONTHS[match.group(order[1])]
            day = f"-{int(match.group(order[2])):02d}" if order[2] is not None else ""
            return f" {year}-{month:02d}{day} "

        return put

    for pattern, order in _DATES:
        lowered = pattern.sub(iso(order), lowered)
    lowered = _ISO.sub(
        lambda m: f" {m.group(1)}-{int(m.group(2)):02d}" + (f"-{int(m.group(3)):02d} " if m.group(3) else " "),
        lowered,
    )
    words = re.findall(r"\d{4}-\d{2}(?:-\d{2})?|[a-z0-9]+", lowered.replace("'", ""))
    return " ".join(_NUMBER_WORDS.get(word, word) for word in words if word not in ("a", "an", "the"))


def answer_marks(answer: str, expected: str, analyse: Callable[[str], list[str]]) -> tuple[bool, bool]:
    """Whether ``answer`` contains ``expected`` (normalised), and holds at least half of its content words."""
    said, wanted = normalise(answer), normalise(expected)
    if not wanted:
        return False, False
    contains = f" {wanted} " in f" {said} "
    terms = set(analyse(wanted))
    held = set(analyse(said))
    return contains, bool(terms) and len(terms & held) >= 0.5 * len(terms)
