"""Finishing or undoing an interrupted consolidation, as every writer does first.

Kept apart from ``run.py`` so that ``memd add`` (which recovers before it
appends) does not import the consolidation machinery and its engines.
"""

from __future__ import annotations

from memd.vault import journal
from memd.vault.vault import Vault


def recover(vault: Vault) -> str | None:
    """Finish or undo a consolidation that was interrupted (see journal.py)."""
    with vault.locked():
        note = journal.recover(vault)
    committed = journal.finish_commit(vault)[1]
    return "; ".join(filter(None, [note, committed])) or None
