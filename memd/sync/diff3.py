"""A three-way diff of token sequences (the diff3 algorithm), pure.

``diff3(base, ours, theirs)`` cuts the three sequences into hunks: stable
runs all three share, and changed regions between them, each marked with
who changed it. ``merge.py`` runs it over documents whose tokens are whole
entries (by seq) and lines, so an entry whose words changed on one side still
lines up with itself on the other.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Generic, Literal, TypeVar

T = TypeVar("T", bound=Hashable)
Kind = Literal["stable", "ours", "theirs", "both", "conflict"]


@dataclass(frozen=True)
class Hunk(Generic[T]):
    kind: Kind  # ours/theirs: only that side changed; both: the same change on each
    base: tuple[T, ...]
    ours: tuple[T, ...]
    theirs: tuple[T, ...]
    at_ours: int  # where the hunk starts in ``ours``

    @property
    def result(self) -> tuple[T, ...]:
        """The merged tokens, for every kind but a conflict."""
        if self.kind == "conflict":
            raise ValueError("a conflict has no single result")
        return self.theirs if self.kind == "theirs" else self.ours


def _matches(a: Sequence[T], b: Sequence[T]) -> dict[int, int]:
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    found: dict[int, int] = {}
    for i, j, size in matcher.get_matching_blocks():
        for step in range(size):
            found[i + step] = j + step
    return found


def diff3(base: Sequence[T], ours: Sequence[T], theirs: Sequence[T]) -> list[Hunk[T]]:
    mine, yours = _matches(base, ours), _matches(base, theirs)
    hunks: list[Hunk[T]] = []
    i = j = k = 0
    while True:
        start, start_j = i, j
        while i < len(base) and mine.get(i) == j and yours.get(i) == k:
            i, j, k = i + 1, j + 1, k + 1
        if i > start:
            run = tuple(base[start:i])
            hunks.append(Hunk("stable", run, run, run, start_j))
        if i >= len(base) and j >= len(ours) and k >= len(theirs):
            return hunks
        sync = i
        while sync < len(base) and not (sync in mine and sync in yours and mine[sync] >= j and yours[sync] >= k):
            sync += 1
        next_j, next_k = (mine[sync], yours[sync]) if sync < len(base) else (len(ours), len(theirs))
        b, o, t = tuple(base[i:sync]), tuple(ours[j:next_j]), tuple(theirs[k:next_k])
        kind: Kind = "theirs" if o == b else "ours" if t == b else "both" if o == t else "conflict"
        hunks.append(Hunk(kind, b, o, t, j))
        i, j, k = sync, next_j, next_k
