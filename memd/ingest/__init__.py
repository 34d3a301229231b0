"""Ingestion: files (notes, chat transcripts, LoCoMo) become sources and entries.

``ingest_file`` runs the write pipeline for one file; ``process_inbox`` does it
for every file dropped in ``inbox/``. The modules, in pipeline order:
formats.py (with turns.py and chats.py) says what is recognised, scrub.py
redacts what was parsed, sources.py writes and matches the verbatim copies,
units.py cuts the input into what one engine call reads, pipeline.py runs an
import in bounded steps, and inbox.py drives it for dropped files.
"""

from __future__ import annotations

from memd.ingest.formats import Rejected
from memd.ingest.inbox import InboxJob, InboxOutcome, inbox_files, process_inbox, process_inbox_file
from memd.ingest.pipeline import MAX_BYTES, IngestJob, IngestResult, ingest_file

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
