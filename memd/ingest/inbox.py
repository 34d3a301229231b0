"""The inbox: files dropped in ``inbox/`` are ingested, then moved.

An ingested file (or one ingested before) goes to ``inbox/done/``; a file
that cannot be ingested (binary, unknown format, too large, invalid UTF-8,
malformed JSON) goes to ``inbox/rejected/`` with ``<name>.reason.txt`` beside
it. A file that failed for a passing reason (the vault was busy) stays in
the inbox for the next try. Nothing a file contains can make this raise.

``InboxJob`` ingests one file in bounded steps (the daemon interleaves them
with everything else it does); ``process_inbox_file`` runs one to the end.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from pathlib import Path

from memd.core.errors import MemdError
from memd.core.layout import is_scratch
from memd.core.redact import MARK, redact_value
from memd.core.timeutil import format_time, now
from memd.ingest.formats import Rejected
from memd.ingest.pipeline import MAX_BYTES, IngestJob, IngestResult
from memd.vault.vault import Vault

DONE = "done"
REJECTED = "rejected"


@dataclass(frozen=True)
class InboxOutcome:
    name: str
    status: str  # "ingested" | "duplicate" | "rejected" | "retry"
    moved_to: str | None  # vault-relative, None when the file stayed in the inbox
    result: IngestResult | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "status": self.status,
            "moved_to": self.moved_to,
            "reason": self.reason,
            "result": self.result.to_json() if self.result else None,
        }


def inbox_files(vault: Vault) -> list[Path]:
    """Files waiting in the inbox (not in done/ or rejected/, no scratch files)."""
    if not vault.inbox_dir.is_dir():
        return []
    return sorted(p for p in vault.inbox_dir.iterdir() if p.is_file() and not is_scratch(p.name))


def process_inbox(vault: Vault, max_bytes: int = MAX_BYTES) -> list[InboxOutcome]:
    return [process_inbox_file(vault, path, max_bytes) for path in inbox_files(vault)]


def process_inbox_file(vault: Vault, path: Path, max_bytes: int = MAX_BYTES) -> InboxOutcome:
    job = InboxJob(vault, path, max_bytes)
    while (outcome := job.step()) is None:
        pass
    return outcome


class InboxJob:
    """One inbox file, ingested in steps of about ``seconds`` each."""

    def __init__(self, vault: Vault, path: Path, max_bytes: int = MAX_BYTES) -> None:
        self.vault = vault
        self.path = path
        self.max_bytes = max_bytes
        self.job: IngestJob | None = None

    @property
    def progress(self) -> tuple[int, int]:
        return (self.job.done, self.job.total) if self.job is not None else (0, 0)

    def step(self, seconds: float = float("inf")) -> InboxOutcome | None:
        """Work for about ``seconds``; the outcome once the file is done with, else None."""
        vault, path = self.vault, self.path
        try:
            if self.job is None:
                self.job = IngestJob.open(vault, path, max_bytes=self.max_bytes)
            if not self.job.step(seconds):
                return None
            result = self.job.result
            assert result is not None
        except Rejected as err:
            return _reject(vault, path, str(err))
        except MemdError as err:
            return InboxOutcome(path.name, "retry", None, reason=str(err))
        except Exception as err:  # a bug must not stop the inbox: the file is set aside with the trace
            detail = "".join(traceback.format_exception_only(type(err), err)).strip()
            return _reject(vault, path, f"could not be ingested ({detail}); please report this", traceback.format_exc())
        try:
            moved = _move(path, vault.inbox_dir / DONE)
        except OSError as err:
            return InboxOutcome(path.name, "retry", None, result, f"ingested, but could not move it: {err.strerror}")
        return InboxOutcome(path.name, "duplicate" if result.duplicate else "ingested", vault.rel(moved), result)


def _reject(vault: Vault, path: Path, reason: str, detail: str = "") -> InboxOutcome:
    try:
        moved = _move(path, vault.inbox_dir / REJECTED)
        note = f"{reason}\n\nrejected {format_time(now())} from inbox/{path.name}\n{detail}"
        moved.with_name(moved.name + ".reason.txt").write_text(note, encoding="utf-8")
    except OSError as err:
        return InboxOutcome(path.name, "retry", None, reason=f"{reason}; and could not move it: {err.strerror}")
    return InboxOutcome(path.name, "rejected", vault.rel(moved), reason=reason)


def _move(path: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    # A key in the dropped file's name does not live on in done/ or rejected/.
    name = Path(MARK.sub("redacted", redact_value(path.name)))
    target, n = folder / name.name, 2
    while target.exists():
        target, n = folder / f"{name.stem}-{n}{name.suffix}", n + 1
    os.replace(path, target)
    return target
