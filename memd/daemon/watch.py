"""What the daemon watches, and the debounce queue between events and work.

File-system event types are unreliable (a new file may arrive only as
``created``, an editor's atomic save as ``moved``), so every event means just
"this path may have changed": it is classified by path, queued, and looked
at once no new event came for it for the debounce period. The queue takes
the time as an argument, so tests drive it with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memd.core.layout import DOCUMENT_KINDS, IGNORED_DIRS, classify

__all__ = ["DOCUMENT_KINDS", "IGNORED_DIRS", "Debouncer", "classify"]


@dataclass
class Debouncer:
    """Paths waiting for a quiet moment: each new event pushes its due time."""

    delay: float
    due_at: dict[str, float] = field(default_factory=dict)

    def touch(self, key: str, now: float, delay: float | None = None) -> None:
        self.due_at[key] = now + (self.delay if delay is None else delay)

    def due(self, now: float) -> list[str]:
        ready = sorted((at, key) for key, at in self.due_at.items() if at <= now)
        for _, key in ready:
            del self.due_at[key]
        return [key for _, key in ready]

    def next_deadline(self) -> float | None:
        return min(self.due_at.values(), default=None)

    def __contains__(self, key: str) -> bool:
        return key in self.due_at

    def __len__(self) -> int:
        return len(self.due_at)
