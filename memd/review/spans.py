"""Seq sets as sorted disjoint runs, so a hand-typed ``1-1000000`` costs nothing."""

from __future__ import annotations

from collections.abc import Iterable

from memd.core.signature import SeqSet

Runs = tuple[tuple[int, int], ...]


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


def overlaps(a: Runs, b: Runs) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


def minus(a: Runs, b: Runs) -> Runs:
    out: list[tuple[int, int]] = []
    for start, end in a:
        for cut_start, cut_end in b:
            if cut_end < start or cut_start > end:
                continue
            if cut_start > start:
                out.append((start, cut_start - 1))
            start = cut_end + 1
            if start > end:
                break
        if start <= end:
            out.append((start, end))
    return tuple(out)


def text(value: Runs) -> str:
    return str(SeqSet(value)) if value else ""
