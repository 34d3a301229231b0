"""The write pipeline for files (ARCHITECTURE.md §3.1): input -> redact -> verbatim copy
under ``sources/`` -> extract entries -> append to CURRENT with fresh seqs.

Extraction goes through the engine seam. A note gives one entry per
statement the engine finds in each paragraph or list item (``src`` = the
source copy's line, ``#L12``); a transcript gives one entry per informative
turn, ``Speaker: statements`` with the turn's time (``src`` = the turn's
anchor, ``#t12``; for LoCoMo the dia_id comes first: ``src=D1:3;sources/...#t3``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..atomic import atomic_write
from ..buffer import NewEntry, append_entries
from ..engine import get_engine
from ..engine.base import Engine
from ..redact import redact
from ..signature import SeqSet
from ..timeutil import format_time, now
from ..vault import Vault
from .formats import Parsed, Rejected, Turn, parse
from .sources import SourceCopy, find_ingested, render, reserve_path

MAX_BYTES = 20 * 1024 * 1024
APPEND_BATCH = 2000
Progress = Callable[[int, int], None]
_FENCE = re.compile(r"^(```|~~~)")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_SIGNATURE = re.compile(r"^<seq=[^>\n]*>\s*")


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

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "format": self.format,
            "source": self.source,
            "turns": self.turns,
            "entries": self.entries,
            "seqs": self.seqs,
            "redacted": list(self.redacted),
            "duplicate": self.duplicate,
            "commit": self.commit,
            "warnings": list(self.warnings),
        }


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
    name = name or path.name
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise Rejected(f"too large ({_mb(size)}; the limit is {_mb(max_bytes)})")
        data = path.read_bytes()
    except OSError as err:
        raise Rejected(f"cannot read: {err.strerror or err}") from None
    digest = hashlib.sha256(data).hexdigest()
    parsed = parse(name, data, path)
    engine = engine or get_engine(vault)
    with vault.locked():
        existing = find_ingested(vault, digest)
        if existing is not None:
            return IngestResult(name, parsed.format, existing, len(parsed.turns), 0, "", duplicate=True)
        stamp = format_time(now())
        rel = reserve_path(vault, name, stamp)
        parsed, kinds = _redacted(parsed)
        meta = {
            "original": name,
            "sha256": digest,
            "format": parsed.format,
            "ingested": stamp,
            "turns": len(parsed.turns),
            "redacted": len(kinds),
        }
        copy = render(rel, parsed, meta)
        items = _entries(copy, parsed, engine, progress)
        # Entries before the copy: a crash in between leaves duplicates on the
        # next try (consolidation folds them), never a copy without entries.
        seqs: list[int] = []
        for start in range(0, len(items), APPEND_BATCH):
            seqs += [a.seq for a in append_entries(vault, items[start : start + APPEND_BATCH])]
        atomic_write(vault.root / rel, copy.text)
        sha, warnings = _commit(vault, rel, name, len(parsed.turns), len(items)) if commit else (None, ())
    span = str(SeqSet.of(seqs)) if seqs else ""
    return IngestResult(name, parsed.format, rel, len(parsed.turns), len(items), span, tuple(sorted(set(kinds))),
                        commit=sha, warnings=warnings)


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MB"


def _redacted(parsed: Parsed) -> tuple[Parsed, list[str]]:
    kinds: list[str] = []
    if parsed.note is not None:
        result = redact(parsed.note)
        return replace(parsed, note=result.text), [f.kind for f in result.findings]
    turns = []
    for turn in parsed.turns:
        text, speaker = redact(turn.text), redact(turn.speaker)
        kinds += [f.kind for f in (*text.findings, *speaker.findings)]
        turns.append(replace(turn, text=text.text, speaker=speaker.text))
    return replace(parsed, turns=tuple(turns)), kinds


def _entries(copy: SourceCopy, parsed: Parsed, engine: Engine, progress: Progress | None) -> list[NewEntry]:
    source = f"import:{parsed.format}"
    if parsed.note is not None:
        return [
            NewEntry(found.text, None, source, f"{copy.rel}#L{copy.note_offset + line}")
            for line, unit in note_units(parsed.note)
            for found in engine.extract(unit)
        ]
    items = []
    total = len(parsed.turns)
    for number, (turn, anchor) in enumerate(zip(parsed.turns, copy.anchors, strict=True), start=1):
        item = _turn_entry(turn, engine, source, f"{copy.rel}#{anchor}")
        if item is not None:
            items.append(item)
        if progress is not None and (number % 50 == 0 or number == total):
            progress(number, total)
    return items


def _turn_entry(turn: Turn, engine: Engine, source: str, anchor: str) -> NewEntry | None:
    statements = " ".join(found.text for found in engine.extract(turn.text))
    if not statements.strip():
        return None  # greetings and acknowledgements: kept in the source only
    src = f"{turn.ref};{anchor}" if turn.ref else anchor
    return NewEntry(f"{turn.speaker}: {statements}", turn.time, source, src)


def _commit(vault: Vault, rel: str, name: str, turns: int, entries: int) -> tuple[str | None, tuple[str, ...]]:
    """Commit the source copy as memd's own change right away, so a later
    hand-edit commit never sweeps it up. CURRENT's appends wait for the next
    consolidation, like every other append."""
    from ..history import commit_as_memd

    what = f"{turns} turns" if turns else "note"
    sha, note = commit_as_memd(vault, f"ingest: {name} -> {rel} ({what}, {entries} entries)", [rel],
                               {"Memd-Source": rel})
    return sha, tuple(f"source {note}" for note in [note] if note)


def note_units(note: str) -> list[tuple[int, str]]:
    """(1-based line, text) of each paragraph and list item of a Markdown note,
    outside frontmatter and code blocks; headings are not statements."""
    lines = note.split("\n")
    units: list[tuple[int, str]] = []
    current: list[str] = []
    start = 0
    fence: str | None = None
    skip_to = -1
    if lines and lines[0].strip() == "---":
        skip_to = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), -1)

    def flush() -> None:
        if current:
            units.append((start, " ".join(current)))
            current.clear()

    for i, raw in enumerate(lines):
        line = raw.strip()
        if i <= skip_to:
            continue
        marker = _FENCE.match(line)
        if fence is not None:
            if marker and line.startswith(fence):
                fence = None
            continue
        if marker:
            flush()
            fence = marker.group(1)
            continue
        if not line or line.startswith("#") or set(line) <= set("-*_=|: "):
            flush()
            continue
        item = _ITEM.match(raw)
        if item:
            flush()
        if item:
            line = raw[item.end() :].strip()
        line = _SIGNATURE.sub("", line.lstrip("> ").strip())
        if not current:
            start = i + 1
        current.append(line)
    flush()
    return [(line, text) for line, text in units if text.strip()]
