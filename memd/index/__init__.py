"""The search index: records cut from vault files, kept in step with them.

``IndexStore(vault).sync()`` brings the index up to date; ``retrieve`` runs
the one retrieval every reader uses (``memd search``, ``memd ask``, the
LoCoMo evaluation). The engine sits behind ``base.Backend``.
"""

from __future__ import annotations

from .base import Backend, Filters, Hit
from .records import Record
from .store import IndexStore, SyncReport

__all__ = ["Backend", "Filters", "Hit", "IndexStore", "Record", "SyncReport"]
