"""Sentence vectors for the records, a derived index beside the lexical one, kept in segments.

The vectors of a vault live in ``.memd/index/``: ``vectors.npz``, the *base*
segment, and the newer segments under ``vectors/`` named by a number
(``vectors/000007.npz``), with ``vectors/log.json`` saying which segments
there are and, per indexed file, its content hash, its *generation* (the
first segment that may hold its rows), and how many of its records have a
vector against how many want one. Every segment is a ``memd.index.segment``
file. A row is live while its file is in the log and the row's segment is
not older than the file's generation: a file that changed gets the next
number as its generation, which retires its older rows without touching
them.

``refresh`` compares the file hashes with the lexical manifest's: only
records of files that changed are looked at, and only texts never embedded
before are embedded (any stored vector, live or retired, serves again for
the same text), so a hand edit embeds the lines it touched and writes one
small segment, and a consolidation that moves entries between files embeds
nothing. Texts are embedded in chunks sorted by length (little padding), and
each finished chunk is a segment with the log written after it: a build that
is stopped (Ctrl-C, a crash, a time budget) keeps what is done, its rows are
searchable, and the next refresh embeds only the rest.

Compaction: when every file is complete and half of the base is retired
(or the base is in an older format), the live rows are written as a new base
and the segments removed; past ``MAX_SEGMENTS`` the newest half are merged
into one. A base rewritten by compaction gets a new id, and a log naming
another id is ignored (the base alone is then the truth), so a crash between
the two writes loses nothing. Everything here is derived: deleting
``.memd/index`` loses nothing but the time to embed again.

Search is a brute-force product of the query vector with each segment's
mapped matrix (memory-bound: 1.5 KB per record read per query; figures in the
README), keeping the live rows.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memd.index.embed_plan import Todo, take, todo_of
from memd.index.gather import View, gathered, in_file_order, vectors_of
from memd.index.live_rows import LiveRows
from memd.index.records import Record
from memd.index.segment import Segment, path_of, text_key, vector_text, wants_vector
from memd.index.vector_log import LOG, read_log, write_log

__all__ = ["RefreshReport", "VectorIndex", "text_key", "vector_text", "wants_vector"]

BASE = "vectors.npz"
SEGMENTS = "vectors"
# Texts embedded between two segment writes: about 20 s of one core, so a stopped
# build loses little, and a 100k-record build writes some hundred segments at most.
CHUNK_TEXTS = 2048
# With a time budget, chunks of about what the budget embeds (at least SLICE_TEXTS: a
# search that must not wait), so a slice ends near its budget, and a longer slice (the
# daemon's, a reindex's) writes fewer, larger segments: in 64-text chunks a reindex in
# 10 s slices spent 1.3x the CPU of one pass, most of it writing and compacting segments.
SLICE_TEXTS = 64
TEXTS_PER_SECOND = CHUNK_TEXTS // 20
MAX_SEGMENTS = 16
ReadRecords = Callable[[str], list[Record]]
Progress = Callable[[int, int], None]
# Per file: [content hash, generation, records with a vector, records that want one].
FileState = list[Any]


@dataclass(frozen=True)
class RefreshReport:
    embedded: int  # texts run through the model
    reused: int  # vectors kept from before
    records: int  # records with a vector now
    rebuilt: bool  # the stored vectors could not be used at all
    wanted: int = 0  # records that want a vector
    seconds: float = 0.0  # CPU seconds the refresh took
    laid: int = 0  # records given a vector by this refresh
    wall: float = 0.0  # seconds the refresh took

    @property
    def complete(self) -> bool:
        return self.records >= self.wanted


class VectorIndex(LiveRows):
    """The stored vectors of one vault for one model: a base and the segments after it
    (searched through ``LiveRows``)."""

    assembled = 0  # times the live rows were worked out: a store's answer to ``stale`` holds until it moves

    def __init__(self, folder: Path, model: str, dim: int) -> None:
        self.folder = folder
        self.model = model
        self.dim = dim
        self.base = Segment(folder / BASE, model, dim)
        self.segments: list[tuple[int, Segment]] = []  # (number, segment), oldest first; the base is 0
        self.files: dict[str, FileState] = {}
        self.next = 1
        self.damaged = False
        self._assemble()

    @property
    def segment_dir(self) -> Path:
        return self.folder / SEGMENTS

    @property
    def log_path(self) -> Path:
        return self.segment_dir / LOG

    # -- reading --------------------------------------------------------------
    @classmethod
    def load(cls, folder: Path, model: str, dim: int) -> VectorIndex:
        """The stored vectors; empty (and ``damaged`` when a file was unusable) otherwise."""
        index = cls(folder, model, dim)
        base = Segment.load(folder / BASE, model, dim)
        index.base, index.damaged = base, base.damaged
        segments: list[tuple[int, Segment]] = [(0, base)]
        log = read_log(index.log_path, model)
        files: dict[str, FileState] | None = None
        if log is not None and log["id"] == base.ident and not base.damaged:
            for number in log["segments"]:
                segment = Segment.load(index._segment_path(number), model, dim)
                if segment.damaged or not segment.path.exists() or segment.outdated:
                    index.damaged = True
                    break
                segments.append((number, segment))
            files, index.next = log["files"], log["next"]
        if files is None:
            # The base alone: every file it names is complete at generation 0.
            counts: dict[str, int] = {}
            for rid in base.rids:
                counts[path_of(rid)] = counts.get(path_of(rid), 0) + 1
            files = {rel: [digest, 0, counts.get(rel, 0), counts.get(rel, 0)] for rel, digest in base.files.items()}
        index.segments = segments
        index.files = {} if index.damaged else files
        index._assemble()
        return index

    def _segment_path(self, number: int) -> Path:
        return self.segment_dir / f"{number:06d}.npz"

    def _assemble(self) -> None:
        """The live rows, numbered across segments in order."""
        views: list[View] = []
        rids: list[str] = []
        for number, segment in self.segments:
            if not segment.rids:
                continue
            if number == 0 and self._base_whole():
                views.append((segment, None, len(rids)))
                rids.extend(segment.rids)
                continue
            # Judged per file, not per row: a segment holds runs of one file's rows.
            verdict: dict[str, bool] = {}
            live: list[int] = []
            for row, rid in enumerate(segment.rids):
                rel = path_of(rid)
                ok = verdict.get(rel)
                if ok is None:
                    state = self.files.get(rel)
                    ok = verdict[rel] = state is not None and number >= state[1]
                if ok:
                    live.append(row)
            if not live:
                continue
            everything = len(live) == len(segment.rids)
            views.append((segment, None if everything else np.array(live, dtype=np.int64), len(rids)))
            rids.extend(segment.rids if everything else [segment.rids[row] for row in live])
        self._views = views
        self.rids = rids
        self._starts = np.array([start for _, _, start in views], dtype=np.int64)
        self._row: dict[str, int] | None = None
        self.assembled += 1  # every change of what is live or complete ends here

    def _base_whole(self) -> bool:
        """Whether every row of the base is live, judged by its file list alone (a base
        holds rows of the files it lists, and only those): a new process reading a
        compacted store does not look at each of its rows."""
        files, listed = self.files, self.base.files
        return len(listed) > 0 and all(
            (state := files.get(rel)) is not None and state[0] == digest and state[1] == 0
            for rel, digest in listed.items()
        )

    # -- state ----------------------------------------------------------------
    @property
    def outdated(self) -> bool:
        return self.base.outdated

    def stale(self, digests: Mapping[str, str]) -> bool:
        """Whether any indexed file (content hashes ``digests``) lacks some of its vectors."""
        if self.damaged or self.base.outdated or self.files.keys() != digests.keys():
            return True
        return any(state[0] != digests[rel] or state[2] < state[3] for rel, state in self.files.items())

    def coverage(self) -> tuple[int, int]:
        """(records with a vector, records that want one) over the files in the log."""
        return len(self.rids), sum(int(state[3]) for state in self.files.values())

    # -- keeping in step ------------------------------------------------------
    def refresh(
        self,
        digests: Mapping[str, str],
        read: ReadRecords,
        embed: Callable[[Sequence[str]], Any],
        known: Mapping[str, list[Record]] | None = None,
        progress: Progress | None = None,
        seconds: float | None = None,
    ) -> RefreshReport:
        """Bring the vectors in step with files whose content hashes are ``digests``.

        ``read(rel)`` gives a file's records; ``known`` may already hold them
        for files just re-read by the lexical index. ``progress(done, total)``
        counts records; with ``seconds``, embedding stops after the chunk that
        spends that much CPU time, leaving the rest for a later refresh."""
        started, clock = time.process_time(), time.monotonic()
        known = known or {}
        rebuilt = self.damaged
        if self.damaged:
            self.files, self.damaged = {}, False
        before = {rel: list(state) for rel, state in self.files.items()}
        todo = self._plan(digests, read, known)
        written = self.next
        total = len(todo)
        if total > CHUNK_TEXTS:
            self._write_log()  # `memd status` counts what is left from here on
        stored = self.stored() if todo else {}
        embedded = reused = done = 0
        chunk = CHUNK_TEXTS if seconds is None else max(SLICE_TEXTS, min(CHUNK_TEXTS, int(seconds * TEXTS_PER_SECOND)))
        if progress is not None and total:
            progress(0, total)
        while done < total:
            batch, fresh = take(todo, done, chunk, stored)
            vectors = embed([text for _, text in fresh]) if fresh else np.zeros((0, self.dim), np.float32)
            for row, (key, _) in enumerate(fresh):
                stored[key] = (vectors, row)
            embedded += len(fresh)
            reused += sum(1 + len(item.parts) for item in batch) - len(fresh)
            self._append(batch, stored)
            done += len(batch)
            if progress is not None:
                progress(done, total)
            if seconds is not None and time.process_time() - started >= seconds:
                break  # at least one chunk a call: each bounded call gets further
        if self.next == written and (self.files != before or rebuilt):
            self._write_log()  # no segment written, but files changed or went
        self._compact()
        live, wanted = self.coverage()
        spent = time.process_time() - started
        return RefreshReport(embedded, reused, live, rebuilt, wanted, spent, done, time.monotonic() - clock)

    def register(self, digests: Mapping[str, str], read: ReadRecords, known: Mapping[str, list[Record]]) -> None:
        """Note the files that changed or went, and how many records each wants a vector
        for, embedding nothing (a search that must not wait): their old rows stop
        serving, and ``coverage`` and ``memd status`` count what is left."""
        if self.damaged:
            self.files, self.damaged = {}, False
        before = {rel: list(state) for rel, state in self.files.items()}
        self._plan(digests, read, known, resume=False)
        if self.files != before:
            self._write_log()

    def _plan(
        self, digests: Mapping[str, str], read: ReadRecords, known: Mapping[str, list[Record]], resume: bool = True
    ) -> list[Todo]:
        """The records still to embed, shortest text first; files that changed get a new generation.
        Without ``resume``, files already begun are not read again (nothing is embedded)."""
        laid: set[str] | None = None  # rids with a vector, asked for only when a file resumes
        changed = False
        for rel in [rel for rel in self.files if rel not in digests]:
            del self.files[rel]
            changed = True
        todo: list[Todo] = []
        for rel, digest in digests.items():
            state = self.files.get(rel)
            if state is not None and state[0] == digest and (state[2] >= state[3] or not resume):
                continue
            records = [record for record in (known[rel] if rel in known else read(rel)) if wants_vector(record)]
            if state is None or state[0] != digest:
                self.files[rel] = [digest, self.next, 0, len(records)]
                changed = True
            else:
                laid = set(self.rids) if laid is None else laid
                records = [record for record in records if record.rid not in laid]
            todo.extend(todo_of(len(todo) + n, rel, record) for n, record in enumerate(records))
        if changed:
            self._assemble()  # rows of changed files are retired from now on
        todo.sort(key=lambda item: len(item.text))
        return todo

    def stored(self) -> dict[bytes, tuple[Any, int]]:
        """Every stored vector by the hash of its text, live or retired."""
        stored: dict[bytes, tuple[Any, int]] = {}
        for _, segment in self.segments:
            stored.update({key: (segment.parts, row) for row, key in enumerate(segment.part_keys)})
            stored.update({key: (segment.matrix, row) for row, key in enumerate(segment.keys)})
        return stored

    def _append(self, batch: list[Todo], stored: dict[bytes, tuple[Any, int]]) -> None:
        """Write ``batch`` (all of whose texts are in ``stored``) as the next segment, then the log."""
        batch = sorted(batch, key=lambda item: item.order)  # rows of one file together, in file order
        segment = Segment(self._segment_path(self.next), self.model, self.dim)
        segment.rids = [item.rid for item in batch]
        segment._keys = [item.key for item in batch]
        segment.matrix = vectors_of([item.key for item in batch], stored, self.dim)
        part_keys = [key for item in batch for key, _ in item.parts]
        segment.part_keys = part_keys
        segment.part_rows = np.array([row for row, item in enumerate(batch) for _ in item.parts], dtype=np.int32)
        segment.parts = vectors_of(part_keys, stored, self.dim)
        self.segment_dir.mkdir(parents=True, exist_ok=True)
        segment.save()
        self.segments.append((self.next, segment))
        self.next += 1
        for item in batch:
            self.files[item.rel][2] += 1
        self._write_log()
        self._assemble()

    def _compact(self) -> None:
        serving = [len(s.rids) if live is None else len(live) for s, live, _ in self._views if s is self.base]
        retired = len(self.base.rids) - sum(serving)
        complete = all(state[2] >= state[3] for state in self.files.values())
        if complete and (self.base.outdated or (len(self.segments) > 1 and retired * 2 >= len(self.base.rids))):
            self._write_base()
        elif len(self.segments) - 1 > MAX_SEGMENTS:
            self._merge(self.segments[-(MAX_SEGMENTS // 2) :])

    def _write_base(self) -> None:
        base = in_file_order(gathered(self._views, self.folder / BASE, self.model, self.dim), self.files)
        base.files = {rel: str(state[0]) for rel, state in self.files.items()}
        base.ident = uuid.uuid4().hex
        base.save()
        # From here the base is the truth (a log naming the old base is ignored).
        self.base = Segment.load(base.path, self.model, self.dim)
        self.segments = [(0, self.base)]
        for state in self.files.values():
            state[1] = 0
        self.log_path.unlink(missing_ok=True)
        self._remove_unlisted()
        self._assemble()

    def _merge(self, tail: list[tuple[int, Segment]]) -> None:
        """The segments of ``tail`` (the newest) as one segment numbered after them."""
        first = tail[0][0]
        views = [view for view in self._views if any(view[0] is segment for _, segment in tail)]
        merged = gathered(views, self._segment_path(self.next), self.model, self.dim)
        merged.save()
        # Files whose rows all lie in the tail start at the merged segment: rows
        # of theirs in older segments were retired already and stay so.
        for state in self.files.values():
            if state[1] >= first:
                state[1] = self.next
        self.segments = [*self.segments[: -len(tail)], (self.next, Segment.load(merged.path, self.model, self.dim))]
        self.next += 1
        self._write_log()
        self._remove_unlisted()
        self._assemble()

    def _write_log(self) -> None:
        segments = [number for number, _ in self.segments if number]
        write_log(self.log_path, self.model, self.base.ident, self.next, segments, self.files)

    def _remove_unlisted(self) -> None:
        """Segments no log names (merged, compacted, or written before a crash)."""
        listed = {self._segment_path(number).name for number, _ in self.segments if number}
        try:
            names = os.listdir(self.segment_dir)
        except OSError:
            return
        for name in names:
            if name.endswith(".npz") and name not in listed:
                (self.segment_dir / name).unlink(missing_ok=True)
