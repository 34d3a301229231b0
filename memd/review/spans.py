"""Seq sets as sorted disjoint runs, so a hand-typed ``1-1000000`` costs nothing.

Comparing two seq sets costs the smaller one's runs times the logarithm of
the larger's (a consolidation's buffer can hold thousands of runs, asked
about once per entry), and ``RunIndex`` finds which of many seq sets meet a
given one without looking at the others, so a review is linear in the
entries it reads, not quadratic.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence

from memd.core.signature import SeqSet

Runs = tuple[tuple[int, int], ...]  # sorted, disjoint, not adjacent: what ``runs`` makes


def runs(value: SeqSet | Iterable[SeqSet]) -> Runs:
    parts = list(value.parts) if isinstance(value, SeqSet) else [p for s in value for p in s.parts]
    merged: list[tuple[int, int]] = []
    for start, end in sorted(parts):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def union(*values: Runs) -> Runs:
    return runs(SeqSet(value) for value in values if value)


def _end(run: tuple[int, int]) -> int:
    return run[1]


def overlaps(a: Runs, b: Runs) -> bool:
    if len(a) > len(b):
        a, b = b, a
    for start, end in a:
        # The first run of b that ends at or after ``start`` (ends ascend, as the runs are disjoint).
        at = bisect_left(b, start, key=_end)
        if at < len(b) and b[at][0] <= end:
            return True
    return False


def minus(a: Runs, b: Runs) -> Runs:
    out: list[tuple[int, int]] = []
    for start, end in a:
        at = bisect_left(b, start, key=_end)  # cuts before this one end before ``start``
        while at < len(b) and b[at][0] <= end:
            cut_start, cut_end = b[at]
            if cut_start > start:
                out.append((start, cut_start - 1))
            start = cut_end + 1
            at += 1
            if start > end:
                break
        if start <= end:
            out.append((start, end))
    return tuple(out)


class RunIndex:
    """Which of many seq sets meet a given one: ``meeting(value)`` gives their
    positions, ascending, in time logarithmic in their number per match.

    Every run of every set is one interval; the intervals sorted by start
    carry a tree of their largest end, so a query visits only the branches
    holding an interval that reaches it (sets may overlap one another, and
    one may span a million seqs, without costing the others)."""

    def __init__(self, sets: Sequence[Runs]) -> None:
        pieces = sorted((start, end, owner) for owner, value in enumerate(sets) for start, end in value)
        self._starts = [start for start, _, _ in pieces]
        self._owners = [owner for _, _, owner in pieces]
        self._size = 1
        while self._size < len(pieces):
            self._size *= 2
        tree = [-1] * (2 * self._size)  # tree[node]: the largest end among the intervals below it
        for at, (_, end, _) in enumerate(pieces):
            tree[self._size + at] = end
        for node in range(self._size - 1, 0, -1):
            tree[node] = max(tree[2 * node], tree[2 * node + 1])
        self._tree = tree

    def meeting(self, value: Runs) -> list[int]:
        found: set[int] = set()
        tree, size = self._tree, self._size
        for start, end in value:
            # Intervals starting at or before ``end`` are the first ``limit``; those
            # among them ending at or after ``start`` meet the run.
            limit = bisect_right(self._starts, end)
            stack = [(1, 0, size)]
            while stack:
                node, low, high = stack.pop()
                if low >= limit or tree[node] < start:
                    continue
                if node >= size:
                    found.add(self._owners[node - size])
                    continue
                middle = (low + high) // 2
                stack.append((2 * node + 1, middle, high))
                stack.append((2 * node, low, middle))
        return sorted(found)


def text(value: Runs) -> str:
    return str(SeqSet(value)) if value else ""
