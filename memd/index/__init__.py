"""The search index: records cut from vault files, kept in step with them.

``IndexStore(vault).sync()`` brings the index up to date; ``retrieve`` runs
the one retrieval every reader uses (``memd search``, ``memd ask``, the
LoCoMo evaluation). The engine sits behind ``base.Backend``.
"""

from __future__ import annotations

from memd.index.base import Backend, Filters, Hit
from memd.index.records import Record
from memd.index.store import IndexStore, SyncReport

__all__ = ["Backend", "Filters", "Hit", "IndexStore", "Record", "SyncReport"]
