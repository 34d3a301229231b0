"""How full the CURRENT.md buffer is, against the thresholds that make a consolidation due.

Counting the buffer means parsing it, and a buffer of tens of thousands of
entries takes a second to parse; ``memd status`` and a daemon asking every
few seconds need it at once. What a count found is kept in
``.memd/index/buffer.json`` (machine-local, rebuilt when missing) with the
size of the bytes it counted and their hash: when the file still begins with
exactly those bytes, only what was appended since is parsed and added on.
Any other change (an edit, a consolidation) counts the whole file again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from memd.core import timeutil
from memd.core.document import MAX_SEQS_PER_DOCUMENT, Document, parse_document
from memd.core.errors import FormatError, MemdError
from memd.vault.state import read_state
from memd.vault.vault import Vault

CACHE = "buffer.json"
VERSION = 1  # raised when what a count holds changes, so an older count is not trusted


@dataclass(frozen=True)
class BufferStatus:
    entries: int
    unsigned: int
    tokens: int
    token_threshold: int
    since: datetime | None
    age_seconds: float | None
    age_threshold_seconds: float

    @property
    def due_reason(self) -> str | None:
        if self.entries == 0:
            return None
        if self.tokens >= self.token_threshold:
            return "tokens"
        if self.age_seconds is not None and self.age_seconds >= self.age_threshold_seconds:
            return "age"
        return None


@dataclass(frozen=True)
class Count:
    """What the first ``size`` bytes of CURRENT.md hold (``head``: their SHA-1)."""

    size: int
    head: str
    entries: int
    unsigned: int
    tokens: int
    named: int  # seqs the signed entries name (a document's budget, ``MAX_SEQS_PER_DOCUMENT``)
    oldest: str | None  # the earliest entry time, as written
    plain: bool  # no fence and no frontmatter: what follows can be parsed on its own

    def plus(self, more: Count) -> Count:
        oldest = min((t for t in (self.oldest, more.oldest) if t), key=_time_key, default=None)
        return Count(
            more.size,
            more.head,
            self.entries + more.entries,
            self.unsigned + more.unsigned,
            self.tokens + more.tokens,
            self.named + more.named,
            oldest,
            self.plain and more.plain,
        )


def buffer_status(vault: Vault, document: Document | None = None) -> BufferStatus:
    """Tokens of entry text (signatures excluded) and age of the buffer.

    Age runs from when the first entry arrived in an empty buffer (state.json
    ``buffer_since``), not from entry times: an import of last year's notes is
    not "a year old" in the buffer. Without that record, the oldest entry time.
    """
    if document is not None:
        count = count_document(document, 0, "", plain=False)
    elif vault.current.exists():
        count = counted(vault)
    else:
        count = count_document(parse_document(""), 0, "", plain=True)
    since = _buffer_since(vault, count.oldest)
    entries = count.entries
    age = (timeutil.now() - since).total_seconds() if since is not None and entries else None
    config = vault.config
    return BufferStatus(
        entries=entries,
        unsigned=count.unsigned,
        tokens=count.tokens,
        token_threshold=config.buffer_tokens,
        since=since if entries else None,
        age_seconds=age,
        age_threshold_seconds=config.buffer_age.total_seconds(),
    )


def counted(vault: Vault) -> Count:
    """CURRENT.md's count, adding on only what was appended since the kept one."""
    from memd.core.atomic import decode_markdown, read_bytes

    rel = vault.rel(vault.current)
    try:
        data = read_bytes(vault.current)
    except OSError:
        vault.read(vault.current)  # raises the one-line error memd gives for this file
        raise
    kept = _load(vault)
    count = None
    if kept is not None and kept.plain and kept.size <= len(data) and (kept.size == 0 or data[kept.size - 1] == 10):
        hasher = hashlib.sha1(data[: kept.size])
        if hasher.hexdigest() == kept.head:
            tail = data[kept.size :]
            hasher.update(tail)
            count = kept if not tail else _tail(kept, tail, hasher.hexdigest(), rel)
    if count is None:
        text = decode_markdown(data, rel)
        plain = not text.lstrip("\ufeff").startswith("---") and "```" not in text and "~~~" not in text
        count = count_document(parse_document(text), len(data), hashlib.sha1(data).hexdigest(), plain=plain)
    if count != kept:
        _save(vault, count)
    return count


def count_document(document: Document, size: int, head: str, *, plain: bool) -> Count:
    from memd.core.tokens import count_tokens

    entries = document.entries()
    signed = [e.entry.signature for e in entries if e.entry.signature is not None]
    times = [s.time for s in signed if s.time]
    return Count(
        size=size,
        head=head,
        entries=len(entries),
        unsigned=len(entries) - len(signed),
        tokens=sum(count_tokens(e.entry.full_text) for e in entries),
        named=sum(len(s.seq) for s in signed),
        oldest=min(times, key=_time_key, default=None),
        plain=plain,
    )


def _tail(kept: Count, tail: bytes, head: str, rel: str) -> Count | None:
    """``kept`` with the appended ``tail`` added; None when the tail cannot be
    read apart from what precedes it (it continues the last entry, opens a
    fence, or is not clean UTF-8): then the whole file is counted."""
    from memd.core.atomic import decode_markdown

    try:
        text = decode_markdown(tail, rel)
    except MemdError:
        return None
    if text[:1] in (" ", "\t") or text.startswith("---") or "```" in text or "~~~" in text:
        return None
    more = count_document(parse_document(text), kept.size + len(tail), head, plain=True)
    if kept.named + more.named > MAX_SEQS_PER_DOCUMENT:
        return None  # past the budget entries are not read: the whole parse decides which
    return kept.plus(more)


def _time_key(value: str) -> tuple[int, datetime | str]:
    try:
        # memd writes UTC times (2026-11-20T09:12:00Z), which the standard parser reads fast.
        parsed = datetime.fromisoformat(value)
        if parsed.tzinfo is not None:
            return (0, parsed)
    except ValueError:
        pass
    try:
        return (0, timeutil.parse_time(value))
    except FormatError:
        return (1, value)  # an unreadable time is never the oldest


def _load(vault: Vault) -> Count | None:
    try:
        raw = json.loads((vault.index_dir / CACHE).read_text(encoding="utf-8"))
        if raw.pop("version", None) != VERSION:
            return None
        return Count(**raw)
    except (OSError, ValueError, TypeError):
        return None  # no count, or a damaged one: counted again


def _save(vault: Vault, count: Count) -> None:
    from memd.core.atomic import atomic_write, own_folder

    data: dict[str, Any] = {"version": VERSION, **asdict(count)}
    try:
        own_folder(vault.index_dir)  # never written through a link that carries it out of the vault
        vault.index_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(vault.index_dir / CACHE, json.dumps(data), derived=True)
    except (OSError, MemdError):
        pass  # a count not kept is counted again next time


def _buffer_since(vault: Vault, oldest: str | None) -> datetime | None:
    state, _ = read_state(vault)
    if state.buffer_since:
        try:
            return timeutil.parse_time(state.buffer_since)
        except FormatError:
            pass
    if oldest is None:
        return None
    try:
        return timeutil.parse_time(oldest)
    except FormatError:
        return None
