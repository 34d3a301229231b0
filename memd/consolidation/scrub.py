"""Secrets typed into the buffer by hand are redacted before a consolidation
commits anything: memd's own appends pass through ``core.redact``, a line a
person typed into CURRENT.md did not, and git keeps what it is given for good."""

from __future__ import annotations

from memd.core.atomic import atomic_write
from memd.core.document import Document, parse_document
from memd.vault.journal import HandEditConflict
from memd.vault.vault import Vault


def without_secrets(vault: Vault, text: str, document: Document, warnings: list[str]) -> tuple[str, Document]:
    """CURRENT.md with what looks like a secret typed into it by hand replaced
    by ``[REDACTED:kind]``, as memd's own appends are, before anything is
    committed: a consolidation commits the buffer (the person's edit first),
    and git keeps what it is given for good. Called under the vault lock."""
    from memd.core.redact import redact_entries

    scrubbed = redact_entries(text, keep_lines=True)
    if not scrubbed.findings:
        return text, document
    if not atomic_write(vault.current, scrubbed.text.encode("utf-8"), unless_changed=text.encode("utf-8")):
        raise HandEditConflict("CURRENT.md changed while memd was reading it; starting over")
    lines = sorted({text.count("\n", 0, finding.start) + 1 for finding in scrubbed.findings})
    where = ", ".join(f"CURRENT.md:{line}" for line in lines[:5]) + (" …" if len(lines) > 5 else "")
    warnings.append(
        f"redacted {len(scrubbed.findings)} possible secret{'s' if len(scrubbed.findings) > 1 else ''} "
        f"({', '.join(scrubbed.kinds)}) typed into the buffer at {where}; nothing of it was committed"
    )
    return scrubbed.text, parse_document(scrubbed.text)


def redacted_copy(text: str, document: Document) -> tuple[str, Document]:
    """``without_secrets`` for a dry run: the same text, nothing written."""
    from memd.core.redact import redact

    scrubbed = redact(text, keep_lines=True)
    return (scrubbed.text, parse_document(scrubbed.text)) if scrubbed.findings else (text, document)
