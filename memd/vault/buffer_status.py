"""How full the CURRENT.md buffer is, against the thresholds that make a consolidation due."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memd.core import timeutil
from memd.core.document import Document, LocatedEntry, parse_document
from memd.core.errors import FormatError
from memd.vault.state import read_state
from memd.vault.vault import Vault


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


def buffer_status(vault: Vault, document: Document | None = None) -> BufferStatus:
    """Tokens of entry text (signatures excluded) and age of the buffer.

    Age runs from when the first entry arrived in an empty buffer (state.json
    ``buffer_since``), not from entry times: an import of last year's notes is
    not "a year old" in the buffer. Without that record, the oldest entry time.
    """
    from memd.core.tokens import count_tokens

    if document is None:
        document = vault.read(vault.current) if vault.current.exists() else parse_document("")
    entries = document.entries()
    signed = [e for e in entries if e.entry.signature is not None]
    tokens = sum(count_tokens(e.entry.full_text) for e in entries)
    since = _buffer_since(vault, signed)
    age = (timeutil.now() - since).total_seconds() if since is not None and entries else None
    config = vault.config
    return BufferStatus(
        entries=len(entries),
        unsigned=len(entries) - len(signed),
        tokens=tokens,
        token_threshold=config.buffer_tokens,
        since=since if entries else None,
        age_seconds=age,
        age_threshold_seconds=config.buffer_age.total_seconds(),
    )


def _buffer_since(vault: Vault, signed: list[LocatedEntry]) -> datetime | None:
    state, _ = read_state(vault)
    if state.buffer_since:
        try:
            return timeutil.parse_time(state.buffer_since)
        except FormatError:
            pass
    times = []
    for located in signed:
        value = located.entry.signature.time if located.entry.signature else None
        if value:
            try:
                times.append(timeutil.parse_time(value))
            except FormatError:
                continue
    return min(times) if times else None
