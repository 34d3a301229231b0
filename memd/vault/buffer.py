"""The CURRENT.md buffer: appending entries (how full it is: buffer_status.py)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from memd.core import timeutil
from memd.core.atomic import append_bytes, atomic_write, escape_controls, read_bytes, read_text, storable
from memd.core.entry import make_entry
from memd.core.errors import DocumentError, FormatError, MemdError
from memd.core.layout import PENDING_JOURNAL
from memd.core.newlines import newline_of
from memd.core.redact import redact_all, redact_value
from memd.core.signature import Signature, check_meta, check_provenance
from memd.core.timeexpr import with_when
from memd.vault import acks
from memd.vault.state import allocate
from memd.vault.vault import CURRENT_TEMPLATE, Vault

_SIGNED = re.compile(r"^[-*+][ \t]+<seq=", re.MULTILINE)


@dataclass(frozen=True)
class NewEntry:
    """An entry before it has a seq."""

    text: str
    time: str | None = None
    source: str | None = "user"
    src: str | None = None
    extra: tuple[tuple[str, str], ...] = ()


def redact_fields(item: NewEntry) -> NewEntry:
    """``item`` with secrets taken out of its signature values (a key that is
    itself a secret becomes ``redacted``)."""
    extra: list[tuple[str, str]] = []
    for key, value in item.extra:
        clean_key, n = key, 1
        while redact_value(clean_key) != clean_key or any(clean_key == k for k, _ in extra):
            n += 1
            clean_key = "redacted" if n == 2 else f"redacted_{n - 1}"
        extra.append((clean_key, redact_value(value, key)))
    src = redact_value(item.src) if item.src is not None else None
    source = redact_value(item.source) if item.source is not None else None
    return replace(item, src=src, source=source, extra=tuple(extra))


def _one_word_time(time: str) -> str:
    """``2026-12-01 10:00 +02:00`` as a signature holds it (no spaces): ``2026-12-01T10:00+02:00``."""
    return _SPACE_ZONE.sub("", _DATE_SPACE_TIME.sub("T", time.strip(), count=1))


_DATE_SPACE_TIME = re.compile(r"(?<=^\d{4}-\d{2}-\d{2})\s+(?=\d)")
_SPACE_ZONE = re.compile(r"\s+(?=(?:Z|[+-]\d{2}(?::?\d{2})?)$)")


def _valid(item: NewEntry) -> NewEntry:
    """Text every later read accepts: a terminal's undecodable bytes arrive as
    lone surrogates, which would make the append fail half-way, and a control
    character (a NUL makes CURRENT.md a binary file) is spelled out."""

    def clean(value: str) -> str:
        return escape_controls(storable(value))

    extra = tuple((clean(k), clean(v)) for k, v in item.extra)
    for key, value in extra:
        check_meta(key, value)
    check_provenance(item.source, item.src)
    return replace(
        item,
        text=clean(item.text),
        time=clean(_one_word_time(item.time)) if item.time else item.time,
        source=clean(item.source) if item.source else item.source,
        src=clean(item.src) if item.src else item.src,
        extra=extra,
    )


@dataclass(frozen=True)
class Added:
    """One entry appended to CURRENT.md, as ``memd add`` and MCP ``memory_add`` report it."""

    seq: int
    line: int
    signature: str
    text: str
    path: str = "CURRENT.md"
    warning: str | None = None  # saved, but not guarded by the acknowledgement log (acks.record)

    def to_json(self) -> dict[str, Any]:
        found = {"seq": self.seq, "path": self.path, "line": self.line, "signature": self.signature, "text": self.text}
        return found if self.warning is None else {**found, "warning": self.warning}


@dataclass(frozen=True)
class AddResult:
    """The entries one ``Memory.add`` appended to CURRENT.md, in order (each durable and acknowledged)."""

    added: tuple[Added, ...]

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(item.seq for item in self.added)

    def to_json(self) -> dict[str, Any]:
        return {"added": [item.to_json() for item in self.added]}


def _buffer_text(vault: Vault) -> tuple[str, str | None]:
    """CURRENT.md's text as far as an append needs it, and what is wrong with it.
    A stray byte a person typed (not UTF-8, a NUL) is theirs to fix, and `memd
    lint` and consolidation name it; it is no reason to refuse a new entry, which
    goes after it untouched."""
    try:
        return read_text(vault.current, "CURRENT.md"), None
    except DocumentError as problem:
        try:
            data = read_bytes(vault.current)
        except OSError:
            raise problem from None  # a folder, a link, no permission: it says which
        said = f"saved; {problem} (consolidation waits until it is fixed)"
        return data.decode("utf-8", errors="surrogateescape"), said


def append_entries(vault: Vault, items: list[NewEntry]) -> list[Added]:
    """Append entries to CURRENT.md with fresh seqs; returns them once durable.

    The entries are appended with one ``O_APPEND`` write of whole lines and an
    fsync: earlier bytes are never rewritten, so a person or an editor
    changing CURRENT.md at the same moment loses nothing to memd. Then each
    entry is recorded in the acknowledgement log (acks.py) before returning.
    The vault lock is held only for these few milliseconds, so appends never
    wait for a consolidation's long steps.
    """
    # Secrets are replaced before anything reaches the file (memd/core/redact.py):
    # in the text, taken as a whole (a key given one line per entry), and in
    # every signature value (src, source, extra keys and their values).
    items = [_valid(item) for item in items]
    texts = redact_all([item.text for item in items])
    items = [replace(redact_fields(item), text=text.text) for item, text in zip(items, texts, strict=True)]
    items = [item for item in items if item.text.strip()]
    if not items:
        raise FormatError("nothing to add: the text is empty")
    for item in items:
        if item.time is not None:
            timeutil.parse_time(item.time)
    unfinished = None
    with vault.locked():
        if vault.interrupted(PENDING_JOURNAL):
            from memd.vault.journal import recover

            try:
                recover(vault)  # finished first where it can be
            except MemdError as err:
                # An add is never refused: recovery keeps what was appended since
                # (journal.py, ``_without_moved``), so the entry is safe on top.
                unfinished = f"an interrupted consolidation is not finished yet: {err} (finished on a later run)"
        if not vault.current.exists():
            atomic_write(vault.current, CURRENT_TEMPLATE)
        # Only what the append needs is read from the buffer (its newline style, its
        # length in lines, whether it holds an entry): no parse, so an add costs the
        # same with 10 or 10,000 entries waiting.
        text, problem = _buffer_text(vault)
        stamp = timeutil.format_time(timeutil.now())
        empty = _SIGNED.search(text) is None
        seqs = allocate(vault, len(items), buffer_was_empty=empty, at=stamp)
        newline = newline_of(text)
        lead = newline if text and not text.endswith(("\n", "\r")) else ""
        line = (text + lead).count("\n") + 1  # every line ends in "\n", whichever its ending
        added: list[Added] = []
        chunks: list[str] = []
        for seq, item in zip(seqs, items, strict=True):
            # A relative time ("yesterday") is recorded as a date beside the words (memd/core/timeexpr.py).
            extra = with_when(item.extra, item.text, item.time or stamp)
            signature = Signature.make(seq, item.time or stamp, item.source, item.src, extra)
            entry = make_entry(signature, item.text, link="")  # CURRENT.md is at the vault's root
            chunks.append(newline.join(entry.lines()) + newline)
            added.append(Added(seq, line, signature.render(), entry.full_text))
            line += len(entry.lines())
        append_bytes(vault.current, (lead + "".join(chunks)).encode("utf-8"))
        logged = acks.record(vault, [acks.Ack(a.seq, chunk, stamp) for a, chunk in zip(added, chunks, strict=True)])
    warning = "; ".join(filter(None, [unfinished, problem, logged])) or None
    return [replace(a, warning=warning) for a in added] if warning else added
