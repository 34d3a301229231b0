"""Rewriting vector segments: the live rows of several gathered into one
(a compaction's new base, a merge of the newest segments), in file order.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from memd.index.segment import Segment

# A segment, its live rows (None: all of them), and the number of its first live row across segments.
View = tuple[Segment, np.ndarray | None, int]


def gathered(views: list[View], path: Path, model: str, dim: int) -> Segment:
    """One segment holding the live rows of ``views``, in order."""
    out = Segment(path, model, dim)
    matrices: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    part_rows: list[np.ndarray] = []
    part_keys: list[bytes] = []
    keys: list[bytes] = []
    rids: list[str] = []
    offset = 0
    for segment, live, _ in views:
        rows = np.arange(len(segment.rids)) if live is None else live
        renumber = np.full(len(segment.rids) + 1, -1, dtype=np.int64)
        renumber[rows] = np.arange(len(rows)) + offset
        kept = np.flatnonzero(renumber[segment.part_rows] >= 0) if len(segment.part_rows) else np.zeros(0, np.int64)
        matrices.append(segment.matrix[rows])
        parts.append(segment.parts[kept])
        part_rows.append(renumber[segment.part_rows[kept]])
        part_keys.extend(segment.part_keys[i] for i in kept)
        keys.extend(segment.keys[row] for row in rows)
        rids.extend(segment.rids[row] for row in rows)
        offset += len(rows)
    empty = np.zeros((0, dim), dtype=np.float32)
    out.rids, out._keys, out.part_keys = rids, keys, part_keys
    out.matrix = np.ascontiguousarray(np.concatenate([empty, *matrices]), np.float32)
    out.parts = np.ascontiguousarray(np.concatenate([empty, *parts]), np.float32)
    out.part_rows = np.concatenate([np.zeros(0, np.int64), *part_rows]).astype(np.int32)
    return out


def in_file_order(segment: Segment, files: Mapping[str, Any]) -> Segment:
    """``segment`` with its rows file by file (in the order of ``files``) and, within a
    file, as ``records_for`` gives them (entries by line, then partitions): the order a
    build in one go has, whatever chunks the rows came in. Equal vectors (a text
    in two files) rank by row, so a stopped and resumed build ranks as one in one go."""
    rank = {rel: n for n, rel in enumerate(files)}

    def key(row: int) -> tuple[int, int, int]:
        rel, _, place = segment.rids[row].rpartition("#")
        return rank.get(rel, len(rank)), 0 if place.startswith("L") else 1, int(place[1:] or 0)

    order = np.array(sorted(range(len(segment.rids)), key=key), dtype=np.int64)
    if np.array_equal(order, np.arange(len(order))):
        return segment
    new_of_old = np.empty(len(order), dtype=np.int64)
    new_of_old[order] = np.arange(len(order))
    parts = np.argsort(new_of_old[segment.part_rows], kind="stable") if len(segment.part_rows) else order[:0]
    keys = segment.keys
    segment.rids = [segment.rids[row] for row in order]
    segment._keys = [keys[row] for row in order]
    segment.matrix = np.ascontiguousarray(segment.matrix[order])
    segment.part_keys = [segment.part_keys[i] for i in parts]
    segment.parts = np.ascontiguousarray(segment.parts[parts])
    segment.part_rows = new_of_old[segment.part_rows[parts]].astype(np.int32) if len(parts) else segment.part_rows
    return segment


def vectors_of(keys: list[bytes], stored: Mapping[bytes, tuple[Any, int]], dim: int) -> np.ndarray:
    out = np.zeros((len(keys), dim), dtype=np.float32)
    for i, key in enumerate(keys):
        source, row = stored[key]
        out[i] = source[row]
    return out
