"""The write pipeline for files (ARCHITECTURE.md §3.1): input -> redact -> verbatim copy
under ``sources/`` -> extract entries -> append to CURRENT with fresh seqs.

Extraction goes through the engine seam, one unit at a time (units.py says
what a unit is and where its entries point). A note gives one entry per
statement the engine finds in a unit; a transcript gives one entry per
informative turn, ``Speaker: statements`` with the turn's time.

An import is an ``IngestJob`` that works in bounded steps: each ``step``
extracts units until its time budget is spent and appends what it has in
batches, so the daemon can interleave a 200,000-line note with the rest of
the inbox and with people's edits, and report progress. The vault lock is
held only to pick the copy's path, to append a batch, and to write the copy.
Re-importing a transcript of the same conversations adds only the new turns
and updates the copy in place (sources.py).
"""

from __future__ import annotations

import hashlib
import stat
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from memd.core.atomic import atomic_write
from memd.core.redact import redact_value
from memd.core.signature import SeqSet
from memd.core.timeutil import format_time, now
from memd.engine import get_engine
from memd.engine.base import Engine
from memd.ingest import sources
from memd.ingest.formats import Parsed, Rejected, Turn, parse
from memd.ingest.reservations import interrupted, mark_progress, release, reserve_path
from memd.ingest.scrub import scrub
from memd.ingest.smalltalk import bears_fact, restates
from memd.ingest.sources import KnownCopy, SourceCopy, find_ingested, render
from memd.ingest.turns import ASSISTANT
from memd.ingest.units import Unit, units_of
from memd.vault.buffer import NewEntry, append_entries
from memd.vault.vault import Vault

MAX_BYTES = 20 * 1024 * 1024
APPEND_BATCH = 2000
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class IngestResult:
    name: str
    format: str
    source: str  # vault-relative path of the source copy
    turns: int
    entries: int
    seqs: str
    redacted: tuple[str, ...] = ()  # kinds of secrets replaced
    duplicate: bool = False  # ingested before: nothing was written
    commit: str | None = None
    warnings: tuple[str, ...] = ()
    new_turns: int | None = None  # a re-import: the turns not seen before (None: a new copy)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "format": self.format,
            "source": self.source,
            "turns": self.turns,
            "new_turns": self.new_turns,
            "entries": self.entries,
            "seqs": self.seqs,
            "redacted": list(self.redacted),
            "duplicate": self.duplicate,
            "commit": self.commit,
            "warnings": list(self.warnings),
        }


@dataclass
class IngestJob:
    """One import, done in steps: ``open``, then ``step`` until it returns True."""

    vault: Vault
    name: str  # redacted: it goes into the copy, its path and the commit message
    parsed: Parsed
    engine: Engine
    rel: str
    units: list[Unit]
    digest: str
    kinds: list[str]
    commit: bool = True
    copy: SourceCopy | None = None  # a new copy; None when an earlier one is updated
    previous: KnownCopy | None = None
    new_turns: list[tuple[Turn, int]] = field(default_factory=list)
    done: int = 0
    resumed: int = 0  # units an interrupted run of the same input had appended
    pending: list[NewEntry] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    entries: int = 0
    result: IngestResult | None = None

    @classmethod
    def open(
        cls,
        vault: Vault,
        path: Path,
        *,
        name: str | None = None,
        max_bytes: int = MAX_BYTES,
        engine: Engine | None = None,
        commit: bool = True,
    ) -> IngestJob:
        """Read, parse and redact the file and plan the import (raises ``Rejected``)."""
        name = name or path.name
        try:
            info = path.stat()
            if not stat.S_ISREG(info.st_mode):
                # Opening a named pipe waits for a writer for ever, a device never ends:
                # refused by what it is, before it is opened.
                raise Rejected(f"not a regular file ({_file_kind(info.st_mode)}); memd imports files only")
            size = info.st_size
            if size > max_bytes:
                raise Rejected(
                    f"too large ({_mb(size)}; the limit is {_mb(max_bytes)}: `memd ingest --max-size MB` raises it)"
                )
            # The limit holds while reading too: a device (/dev/zero) or a pipe has no size to stat.
            with open(path, "rb") as stream:
                data = stream.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise Rejected(
                    f"too large (more than {_mb(max_bytes)}, the limit: `memd ingest --max-size MB` raises it)"
                )
        except OSError as err:
            raise Rejected(f"cannot read: {err.strerror or err}") from None
        digest = hashlib.sha256(data).hexdigest()
        parsed, kinds = scrub(parse(name, data, path))
        clean = redact_value(name)
        kinds += ["file-name"] if clean != name else []
        engine = engine or get_engine(vault)
        stamp = format_time(now())
        job = cls(vault, clean, parsed, engine, "", [], digest, kinds, commit)
        with vault.locked():
            existing = find_ingested(vault, digest)
            if existing is not None:
                job.result = IngestResult(clean, parsed.format, existing, len(parsed.turns), 0, "", duplicate=True)
                return job
            earlier = sources.find_thread_copy(vault, parsed, clean) if parsed.note is None else None
            job.previous = sources.read_copy(vault, earlier) if earlier else None
            stopped = interrupted(vault, digest) if job.previous is None else None
            if stopped is not None:
                # The same input, stopped before its copy was written: its first units'
                # entries are in the buffer already, linked to this copy's path.
                job.rel, job.done = stopped
                job.resumed = job.done
            else:
                job.rel = job.previous.rel if job.previous else reserve_path(vault, clean, stamp)
        if job.previous is not None:
            fresh = _unseen(job.previous, parsed.turns)
            if not fresh:
                job.result = IngestResult(
                    clean,
                    parsed.format,
                    job.rel,
                    len(parsed.turns),
                    0,
                    "",
                    duplicate=True,
                    warnings=parsed.warnings,
                    new_turns=0,
                )
                return job
            job.new_turns = [(turn, job.previous.last_anchor + n) for n, turn in enumerate(fresh, start=1)]
        else:
            job.copy = render(job.rel, parsed, _meta(clean, digest, parsed, stamp, kinds))
            job.new_turns = list(zip(parsed.turns, range(1, len(parsed.turns) + 1), strict=True))
        job.units = units_of(parsed, job.rel, job.copy, job.new_turns)
        return job

    @property
    def total(self) -> int:
        return len(self.units)

    def step(self, seconds: float = float("inf"), progress: Progress | None = None) -> bool:
        """Extract and append for about ``seconds`` (at least one unit); True when finished."""
        if self.result is not None:
            return True
        deadline = time.monotonic() + seconds
        source = f"import:{self.parsed.format}"
        while self.done < len(self.units):
            unit = self.units[self.done]
            statements = [found.text for found in self.engine.extract(unit.text)]
            previous = self.units[self.done - 1] if self.done else None
            echo = (
                unit.speaker == ASSISTANT
                and previous is not None
                and previous.speaker not in (None, ASSISTANT)
                and restates(unit.text, previous.text)
            )
            if unit.speaker is None:
                self.pending += [NewEntry(text, None, source, unit.src) for text in statements]
            elif echo:
                pass  # an assistant saying back what the person told: in the source only
            elif " ".join(statements).strip() and bears_fact(unit.text):  # small talk: in the source only
                self.pending.append(NewEntry(f"{unit.speaker}: {' '.join(statements)}", unit.time, source, unit.src))
            self.done += 1
            if progress is not None and (self.done % 50 == 0 or self.done == len(self.units)):
                progress(self.done, len(self.units))
            if len(self.pending) >= APPEND_BATCH:
                self._flush()
            if time.monotonic() >= deadline:
                break
        if self.done < len(self.units):
            return False
        self._flush()
        self._finish()
        return True

    def _flush(self) -> None:
        # Entries before the copy: a crash in between leaves duplicates on the
        # next try (consolidation folds them), never a copy without entries.
        if self.pending:
            self.seqs += [a.seq for a in append_entries(self.vault, self.pending)]
            self.entries += len(self.pending)
            self.pending = []
            if self.copy is not None:
                mark_progress(self.vault, self.rel, self.digest, self.done)

    def _finish(self) -> None:
        vault, parsed = self.vault, self.parsed
        with vault.locked():
            if self.copy is not None:
                atomic_write(vault.root / self.rel, self.copy.text)
                release(vault, self.rel)
            else:
                self._update_copy()
            sha, warnings = (
                _commit(vault, self.rel, self.name, len(parsed.turns), self.entries) if self.commit else (None, ())
            )
        span = str(SeqSet.of(self.seqs)) if self.seqs else ""
        self.result = IngestResult(
            self.name,
            parsed.format,
            self.rel,
            len(parsed.turns),
            self.entries,
            span,
            tuple(sorted(set(self.kinds))),
            commit=sha,
            # Extraction steps the model failed were done offline: say which and why.
            warnings=(*parsed.warnings, *self.engine.drain_notes(), *warnings, *self._resumed_note()),
            new_turns=None if self.previous is None else len(self.new_turns),
        )

    def _resumed_note(self) -> tuple[str, ...]:
        if not self.resumed:
            return ()
        return (
            f"resumed an import stopped before it finished: the entries of its first {self.resumed:,} of "
            f"{len(self.units):,} parts were already in the buffer",
        )

    def _update_copy(self) -> None:
        """Add the new turns to the earlier copy, compared again right before
        the rename (a turn another import added meanwhile is not added twice)."""
        for _ in range(3):
            known = sources.read_copy(self.vault, self.rel) or self.previous
            assert known is not None
            missing = {id(turn) for turn in _unseen(known, [turn for turn, _ in self.new_turns])}
            turns = [(turn, n) for turn, n in self.new_turns if id(turn) in missing]
            total = sum(known.keys.values()) + len(turns)
            meta = {"sha256": self.digest, "turns": total, "updated": format_time(now())}
            text = sources.merge(known, turns, meta)
            if atomic_write(self.vault.root / self.rel, text, unless_changed=known.text.encode("utf-8")):
                return
        raise Rejected(f"{self.rel} kept changing while memd was adding turns to it; try again")


def ingest_file(
    vault: Vault,
    path: Path,
    *,
    name: str | None = None,
    max_bytes: int = MAX_BYTES,
    progress: Progress | None = None,
    engine: Engine | None = None,
    commit: bool = True,
) -> IngestResult:
    """Ingest one file; raises ``Rejected`` when it cannot be ingested."""
    job = IngestJob.open(vault, path, name=name, max_bytes=max_bytes, engine=engine, commit=commit)
    while not job.step(progress=progress):
        pass
    assert job.result is not None
    return job.result


def _file_kind(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a folder"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


def _meta(name: str, digest: str, parsed: Parsed, stamp: str, kinds: list[str]) -> dict[str, object]:
    meta: dict[str, object] = {
        "original": name,
        "sha256": digest,
        "format": parsed.format,
        "ingested": stamp,
        "turns": len(parsed.turns),
        "redacted": len(kinds),
    }
    if parsed.title:
        meta["title"] = parsed.title
    threads = list(dict.fromkeys(turn.thread for turn in parsed.turns if turn.thread))
    if threads:
        meta["threads"] = threads
    return meta


def _unseen(copy: KnownCopy, turns: list[Turn] | tuple[Turn, ...]) -> list[Turn]:
    """The turns the copy does not hold yet (a turn said twice counts twice)."""
    left: Counter[str] = Counter(copy.keys)
    fresh = []
    for turn in turns:
        key = sources.turn_key(turn.thread if copy.threaded else "", sources.turn_lines(turn))
        if left[key] > 0:
            left[key] -= 1
        else:
            fresh.append(turn)
    return fresh


def _commit(vault: Vault, rel: str, name: str, turns: int, entries: int) -> tuple[str | None, tuple[str, ...]]:
    """Commit the source copy as memd's own change right away, so a later
    hand-edit commit never sweeps it up. CURRENT's appends wait for the next
    consolidation, like every other append."""
    from memd.git.log import commit_as_memd

    what = f"{turns} turns" if turns else "note"
    sha, note = commit_as_memd(
        vault, f"ingest: {name} -> {rel} ({what}, {entries} entries)", [rel], {"Memd-Source": rel}
    )
    return sha, tuple(f"source {note}" for note in [note] if note)
