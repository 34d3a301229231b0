"""Ingestion: files (notes, chat transcripts, LoCoMo) become sources and entries.

``ingest_file`` runs the write pipeline for one file; ``process_inbox`` does it
for every file dropped in ``inbox/``. See formats.py for what is recognised
and sources.py for how the verbatim copies look.
"""

from __future__ import annotations

from .formats import Rejected
from .inbox import InboxJob, InboxOutcome, inbox_files, process_inbox, process_inbox_file
from .pipeline import MAX_BYTES, IngestJob, IngestResult, ingest_file

__all__ = [
    "MAX_BYTES",
    "InboxJob",
    "InboxOutcome",
    "IngestJob",
    "IngestResult",
    "Rejected",
    "inbox_files",
    "ingest_file",
    "process_inbox",
    "process_inbox_file",
]
