"""Why model steps were done offline: the warning lines a run reports.

Each step that fell back is counted by its operation and cause (``invalid
JSON``, ``placeholder copy``, ``timeout``, ``budget``, ``HTTP 400``, ...); a
run reports one line per operation and cause, and a line per cause for the
steps that never asked because the endpoint was paused or the run's budget
spent. A line is a ``str`` (front doors print it) that also carries its count
and cause, so a commit trailer can name them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

UNASKED = frozenset({"endpoint paused", "budget spent"})  # causes of steps that made no call


class Fallback(str):
    """A warning line: which steps were done offline, how many, and why."""

    steps: int
    cause: str

    def __new__(cls, text: str, steps: int = 1, cause: str = "bad model output") -> Fallback:
        line = super().__new__(cls, text)
        line.steps = steps
        line.cause = cause
        return line


@dataclass(frozen=True)
class Fell:
    """One step done offline."""

    operation: str
    cause: str
    detail: str


def lines(fell: Iterable[Fell]) -> list[str]:
    """One line per operation and cause (per cause for steps that made no call), in order of first occurrence."""
    groups: dict[tuple[str, str], list[Fell]] = {}
    for item in fell:
        key = ("", item.cause) if item.cause in UNASKED else (item.operation, item.cause)
        groups.setdefault(key, []).append(item)
    out: list[str] = []
    for (operation, cause), items in groups.items():
        count = len(items)
        if operation:
            text = f"{operation}: {items[0].detail}; {count} step(s) done offline ({cause})"
        else:
            ops = ", ".join(dict.fromkeys(i.operation for i in items))
            text = f"{items[0].detail}; {count} more model step(s) of this run were done offline ({ops})"
        out.append(Fallback(text, count, cause))
    return out


def offline_steps(notes: Iterable[str]) -> int:
    """Steps the notes say were done offline (a plain note counts one)."""
    return sum(n.steps if isinstance(n, Fallback) else 1 for n in notes)


def trailer(notes: Iterable[str]) -> str | None:
    """``13 step(s) done offline (connection failed: 2, endpoint paused: 11)``, or None."""
    counts: dict[str, int] = {}
    for note in notes:
        cause = note.cause if isinstance(note, Fallback) else "bad model output"
        counts[cause] = counts.get(cause, 0) + (note.steps if isinstance(note, Fallback) else 1)
    if not counts:
        return None
    causes = ", ".join(f"{cause}: {n}" for cause, n in counts.items())
    return f"{sum(counts.values())} step(s) done offline ({causes})"
