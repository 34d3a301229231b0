"""Times in signatures: ISO 8601 dates or datetimes; naive means UTC."""

from __future__ import annotations

import os
import re
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from memd.core.errors import FormatError

_DATE_ONLY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


# English names, whatever the locale (the calendar module's follow it, and importing it costs every
# add and every search).
MONTH_NAMES = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def parse_time(value: str) -> datetime:
    """Parse a signature time into an aware UTC datetime.

    Accepts ``2026-11-20``, ``2026-11-20T09:12``, ``2026-11-20T09:12:05Z`` and
    offsets like ``+02:00``. A date means its midnight; no zone means UTC.
    """
    text = value.strip()
    try:
        if _DATE_ONLY.match(text):
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, tzinfo=UTC)
        if "T" not in text and " " not in text:
            raise ValueError
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise FormatError(f"invalid time {_short(value)!r} (expected ISO 8601, e.g. 2026-11-20T09:12Z)") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        # 0001-01-01T00:00:00+23:59 is a valid ISO text whose UTC moment is before year 1.
        raise FormatError(f"time {_short(value)!r} is out of range (before year 1 or after 9999 in UTC)") from None


@lru_cache(maxsize=8192)
def time_or_none(value: str | None) -> datetime | None:
    """``parse_time`` for a time that may be missing or unreadable (then None).
    Kept by the text: ranking compares the times of hundreds of candidates a
    search, most of them met before (a datetime cannot change)."""
    if not value:
        return None
    try:
        return parse_time(value)
    except FormatError:
        return None


def _short(value: str) -> str:
    return value if len(value) <= 80 else value[:77] + "..."


def format_time(moment: datetime) -> str:
    """The form memd writes: UTC, seconds precision, ``Z`` suffix."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now() -> datetime:
    """The current time; ``MEMD_NOW`` pins it for reproducible runs and tests."""
    pinned = os.environ.get("MEMD_NOW")
    return parse_time(pinned) if pinned else datetime.now(UTC)


def parse_duration(value: str | int | float) -> timedelta:
    """``90``, ``"90s"``, ``"15m"``, ``"1h"``, ``"2d"`` -> timedelta."""
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return timedelta(seconds=float(value))
        match = _DURATION.match(str(value))
        if match:
            return timedelta(seconds=float(match.group(1)) * _UNIT_SECONDS[match.group(2)])
    except (OverflowError, ValueError):
        raise FormatError(f"duration {_short(str(value))!r} is out of range") from None
    raise FormatError(f"invalid duration {_short(str(value))!r} (expected e.g. 90s, 15m, 1h, 2d)")


def format_duration(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    if seconds >= 3600:
        return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def time_bound(value: str | None, *, end_of_day: bool = False) -> datetime | None:
    """A ``--since``/``--until`` bound; a bare date as an upper bound means
    through that day, not "before it began"."""
    if value is None:
        return None
    moment = parse_time(value)
    if end_of_day and "T" not in value and " " not in value.strip():
        moment += timedelta(days=1, microseconds=-1)
    return moment


def time_range(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """``--since`` and ``--until`` as bounds (``time_bound``); raises ``FormatError``
    when the first comes after the second, which no time can be between."""
    start, end = time_bound(since), time_bound(until, end_of_day=True)
    if start is not None and end is not None and start > end:
        raise FormatError(f"since {since} is after until {until}: no time is between them")
    return start, end


def as_datetime(day: date, end: bool = False) -> datetime:
    """A day's first moment (its last with ``end``), without a zone."""
    return datetime.combine(day, datetime.max.time() if end else datetime.min.time())
