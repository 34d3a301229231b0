"""Journaled multi-file changes: all of them happen, or none.

A consolidation first writes every file's old and new content to
``.memd/journal/pending.json`` (atomically), then writes the files, commits,
and deletes the journal. If the process dies on the way, the next memd
command finds the journal and finishes the change (roll forward) — unless a
person edited one of the files since, in which case the change is undone
(roll back) and their edit is left alone. Before each write the file on disk
must still be what consolidation read: a hand edit made meanwhile aborts the
change rather than being overwritten.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TypeVar

from ..atomic import atomic_write
from ..errors import MemdError
from ..vault import Vault


class HandEditConflict(MemdError):
    """A file changed on disk while memd was about to rewrite it."""


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the vault root
    before: str | None  # None: the file did not exist
    after: str | None  # None: delete the file


@dataclass(frozen=True)
class Journal:
    changes: tuple[FileChange, ...]
    message: str

    @property
    def paths(self) -> list[str]:
        return [change.path for change in self.changes]


T = TypeVar("T")
_crash_count = 0


def crashpoint() -> None:
    """Die here on the Nth call when ``MEMD_CRASH_AT=N`` (crash-safety tests)."""
    global _crash_count
    target = os.environ.get("MEMD_CRASH_AT")
    if not target:
        return
    _crash_count += 1
    if _crash_count == int(target):
        os.kill(os.getpid(), signal.SIGKILL)


def _on_disk(vault: Vault, rel: str) -> str | None:
    path = vault.root / rel
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None


def _put(vault: Vault, rel: str, content: str | None) -> None:
    path = vault.root / rel
    if content is None:
        path.unlink(missing_ok=True)
    else:
        atomic_write(path, content.encode("utf-8", errors="surrogateescape"))


def apply(vault: Vault, journal: Journal, commit: Callable[[Journal], T]) -> T:
    """Write the journal, then each file (hash-checked), commit, clean up.
    Returns what ``commit`` returned."""
    path = vault.meta_dir / "journal" / "pending.json"
    crashpoint()  # planned in memory, nothing written yet
    atomic_write(path, json.dumps({"message": journal.message, "changes": [asdict(c) for c in journal.changes]}))
    crashpoint()
    done: list[FileChange] = []
    for change in journal.changes:
        if _on_disk(vault, change.path) != change.before:
            _undo(vault, done)
            path.unlink(missing_ok=True)
            raise HandEditConflict(
                f"{change.path} was edited while memd was consolidating; nothing was changed "
                "(your edit is kept; consolidation will run again later)"
            )
        _put(vault, change.path, change.after)
        done.append(change)
        crashpoint()
    result = commit(journal)
    crashpoint()
    path.unlink(missing_ok=True)
    crashpoint()
    return result


def _undo(vault: Vault, done: list[FileChange]) -> None:
    for change in reversed(done):
        if _on_disk(vault, change.path) == change.after:
            _put(vault, change.path, change.before)


def pending(vault: Vault) -> bool:
    """Whether an interrupted change waits to be finished or undone (a stat, cheap)."""
    return (vault.meta_dir / "journal" / "pending.json").exists()


def load(vault: Vault) -> Journal | None:
    path = vault.meta_dir / "journal" / "pending.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        # A journal is written atomically, so a broken one was not written by
        # memd; nothing was applied from it.
        path.rename(path.with_suffix(".broken"))
        raise MemdError(f"ignored an unreadable consolidation journal ({err}); kept it as pending.broken") from None
    return Journal(tuple(FileChange(**c) for c in raw["changes"]), raw["message"])


def recover(vault: Vault, commit: Callable[[Journal], object]) -> str | None:
    """Finish or undo an interrupted change. Returns what was done, if anything."""
    try:
        journal = load(vault)
    except MemdError as err:
        return str(err)  # set aside; nothing had been applied from it
    if journal is None:
        return None
    path = vault.meta_dir / "journal" / "pending.json"
    states = {c.path: _on_disk(vault, c.path) for c in journal.changes}
    edited = [c.path for c in journal.changes if states[c.path] not in (c.before, c.after)]
    if edited:
        _undo(vault, list(journal.changes))
        path.unlink(missing_ok=True)
        return f"rolled back an interrupted consolidation (kept hand edits in {', '.join(edited)})"
    for change in journal.changes:
        if states[change.path] != change.after:
            _put(vault, change.path, change.after)
    commit(journal)
    path.unlink(missing_ok=True)
    return "completed an interrupted consolidation"
