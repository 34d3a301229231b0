"""What bringing the index in step with the files did (``SyncReport``), and
progress counted over the slices a long rebuild is cut into."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Progress = Callable[[int, int], None]


class Cumulative:
    """A progress callback over slices: each slice counts from 0 over what is left, the
    callback sees one count over the whole build."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        self.before = 0  # done in the slices before this one
        self.done = 0

    def __call__(self, done: int, total: int) -> None:
        self.done = done
        self.progress(self.before + done, self.before + total)

    def next_slice(self) -> None:
        self.before += self.done
        self.done = 0


@dataclass(frozen=True)
class SyncReport:
    rebuilt: bool
    updated: tuple[str, ...]
    removed: tuple[str, ...]
    records: int
    seconds: float
    embedded: int = 0  # texts the embedding model read in this sync
