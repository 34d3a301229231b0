"""Adoption: unsigned list items a person wrote in CURRENT.md or a topic get a
seq and ``source=hand`` in place, with one compare-and-swap write and memd's
own commit. The person's words and every other line stay byte for byte."""

from __future__ import annotations

import hashlib

from memd.consolidation.sections import adopt_unsigned
from memd.core.atomic import atomic_write, read_bytes
from memd.core.document import parse_document
from memd.core.layout import holds_entries
from memd.core.timeutil import format_time, now
from memd.git.log import commit_as_memd
from memd.vault.state import allocate
from memd.vault.vault import Vault


def adopt_file(vault: Vault, rel: str, expected: str | None = None) -> int:
    """Adopt the unsigned items of ``rel``; returns how many were adopted.

    ``expected`` is the sha1 of the content the caller checked: if the file
    changed since, nothing is written (the next quiet period decides).
    """
    if not holds_entries(rel):
        return 0
    path = vault.root / rel
    with vault.locked():
        try:
            data = read_bytes(path)
        except OSError:
            return 0
        if expected is not None and hashlib.sha1(data).hexdigest() != expected:
            return 0
        document = parse_document(data.decode("utf-8"))
        unsigned = [e for e in document.entries() if e.entry.signature is None]
        if not unsigned:
            return 0
        stamp = format_time(now())
        seqs = iter(allocate(vault, len(unsigned), buffer_was_empty=not document.signed(), at=stamp))
        adopted, _ = adopt_unsigned(document, lambda: next(seqs), stamp)
        atomic_write(path, adopted.render())
        count = len(unsigned)
        commit_as_memd(vault, f"adopt: {count} hand-written entr{'y' if count == 1 else 'ies'} in {rel}", [rel])
    return count
