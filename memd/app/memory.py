"""``Memory``: one vault, opened once, and the verbs people and agents use.

Opening finds the vault and finishes or undoes an interrupted consolidation
(before anything reads or writes); every verb checks again, cheaply, because
a long-lived process (the daemon, the MCP server) may outlive a crash in
another one. The engine and settings are looked up per call, so a daemon sees
edits to ``.memd/config.toml`` without a restart. The search index is opened
once and kept for the object's life (``close`` lets it go): each search
brings it in step with the files first, reading only what changed.

Example::

    from memd import Memory

    memory = Memory.open("~/memory")
    memory.add("Dana takes her coffee with oat milk")
    for hit in memory.search("oat milk").results:
        print(hit["cite"], hit["snippet"])
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from memd.app.documents import Documents
from memd.app.forgetting import Forgetting
from memd.app.reading import Reading
from memd.app.watching import Watching
from memd.vault.vault import Vault, find_vault

if TYPE_CHECKING:
    from memd.app.clone import Cloned
    from memd.app.entries import Found, TopicDoc, Updated
    from memd.app.init import InitResult
    from memd.app.results import AddResult, JsonResult, Status
    from memd.consolidation import Outcome, Report
    from memd.engine.base import Engine
    from memd.git.log import Commit
    from memd.ingest import InboxJob, IngestResult
    from memd.review.diff import MemoryDiff
    from memd.review.life import Life
    from memd.review.undo import UndoOutcome
    from memd.sync.merge import Take
    from memd.sync.report import SyncReport
    from memd.vault.lint import Problem

Warn = Callable[[str], None]
Progress = Callable[[int, int], None]


class Memory(Reading, Documents, Watching, Forgetting):
    """A vault and everything memd does with it (finding and answering: ``Reading``;
    one document and the settings: ``Documents``; what a watcher asks: ``Watching``;
    forgetting on purpose: ``Forgetting``)."""

    def __init__(self, vault: Vault, *, warn: Warn | None = None) -> None:
        super().__init__()
        self.vault = vault
        self._warn = warn or (lambda message: None)

    # -- opening ----------------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        cwd: Path | None = None,
        warn: Warn | None = None,
        recover: bool = True,
    ) -> Memory:
        """The vault at ``path`` (else ``$MEMD_VAULT``, else ``cwd`` or the current
        folder, or a parent). ``recover=False`` leaves an interrupted consolidation
        for the next verb: for a caller that must not be held up (a hook)."""
        if path is not None:
            path = Path(path).expanduser()
        memory = cls(find_vault(path, cwd), warn=warn)
        if recover:
            memory.recover(reading=True)  # a verb that writes recovers again, and raises
        return memory

    @staticmethod
    def init(path: str | os.PathLike[str]) -> InitResult:
        """Create a vault (idempotent: existing files are kept; ``.gitignore`` gains memd's missing patterns)."""
        from memd.app.init import init_vault

        return init_vault(Path(path).expanduser())

    def recover(self, *, reading: bool = False) -> str | None:
        """Finish or undo an interrupted consolidation or sync; says what it did, if anything.

        ``reading``: for a verb that only reads, or only appends to the buffer
        (which recovery keeps): when recovery cannot write (a folder made
        read-only, a full disk), that is a warning and the verb goes on, so
        the vault is never stuck behind it; a verb that writes more raises."""
        from memd.core.errors import MemdError
        from memd.core.layout import PENDING_JOURNAL, SYNC_JOURNAL

        notes = []
        try:
            if self.vault.interrupted(SYNC_JOURNAL):
                from memd.sync import apply as sync_journal

                notes.append(sync_journal.recover(self.vault))
            if self.vault.interrupted(PENDING_JOURNAL):
                from memd.consolidation import recover

                notes.append(recover(self.vault))
        except MemdError as err:
            if not reading:
                raise
            notes.append(f"an interrupted consolidation is not finished yet: {err} (memd finishes it on a later run)")
        note = "; ".join(n for n in notes if n) or None
        if note:
            self._warn(note)
        return note

    def may_commit(self) -> None:
        """Raise ``VaultError`` before a verb that commits, when the vault must
        not commit into the repository it lies in (``[git] repository = "own"``):
        nothing is written then, so the enclosing checkout stays as it was."""
        from memd.core.errors import VaultError
        from memd.git.log import foreign_repository

        reason = foreign_repository(self.vault)
        if reason:
            raise VaultError(reason)

    @property
    def engine(self) -> Engine:
        from memd.engine import get_engine

        return get_engine(self.vault)

    # -- writing ----------------------------------------------------------------
    def add(
        self,
        text: str | Sequence[str],
        *,
        time: str | None = None,
        source: str = "user",
        src: str | None = None,
        meta: Sequence[tuple[str, str]] = (),
    ) -> AddResult:
        """Append entries to CURRENT.md: one per string given (a string is one entry).

        ``memory.add("Allergic to peanuts").added[0].seq`` is the new entry's seq.
        Raises ``FormatError`` for a ``meta`` key or value a signature cannot hold (a space)."""
        from memd.core.signature import check_meta
        from memd.vault.buffer import AddResult, NewEntry, append_entries

        for key, value in meta:
            check_meta(key, value)
        self.recover(reading=True)
        pieces = [text] if isinstance(text, str) else list(text)
        items = [NewEntry(piece, time, source, src, tuple(meta)) for piece in pieces if piece.strip()]
        return AddResult(tuple(append_entries(self.vault, items)))

    def ingest(self, path: Path, *, max_bytes: int | None = None, progress: Progress | None = None) -> IngestResult:
        """Ingest one file (note or transcript); raises ``Rejected`` when it cannot be."""
        from memd.ingest import MAX_BYTES, ingest_file

        self.recover()
        self.may_commit()
        return ingest_file(self.vault, path, max_bytes=max_bytes or MAX_BYTES, progress=progress)

    def inbox_job(self, path: Path) -> InboxJob:
        """Ingest one inbox file in bounded steps (``step(seconds)`` until it returns an outcome)."""
        from memd.ingest import InboxJob

        self.recover()
        return InboxJob(self.vault, path)

    def consolidate(
        self, *, if_due: bool = False, dry_run: bool = False, trigger: str = "manual", progress: Progress | None = None
    ) -> Outcome:
        """Move the buffer into topics, prove nothing was lost, commit."""
        from memd.consolidation import consolidate

        if not dry_run:
            self.may_commit()
        return consolidate(self.vault, trigger=trigger, dry_run=dry_run, if_due=if_due, progress=progress)

    def adopt(self, rel: str, expected: str | None = None) -> int:
        """Give unsigned list items in one managed file a seq; returns how many."""
        from memd.consolidation.adopt import adopt_file

        self.recover()
        return adopt_file(self.vault, rel, expected)

    def commit_hand_edits(self, hold: Collection[str] = ()) -> str | None:
        """Commit what people changed by hand, under their name (all but the paths in ``hold``)."""
        from memd.consolidation.restore import Unsettled, restore
        from memd.git.edits import commit_hand_edits
        from memd.git.log import blocked
        from memd.vault import acks
        from memd.vault.journal import finish_commit

        if blocked(self.vault) is not None:
            return None
        # A consolidation killed after writing its files owes its commit: made
        # first, so its moves are memd's, never committed as the person's edit.
        self.recover()
        if finish_commit(self.vault)[1] is not None:
            return None  # git refused memd's commit: the person's waits behind it
        try:
            with self.vault.locked():
                wiped = restore(self.vault)  # an editor's stale save is not the person's deletion
        except Unsettled:
            return None  # a save in progress: its edit is committed once it has settled
        if wiped.restored:
            self._warn(f"put back {len(wiped.restored)} entries an editor's save had removed")
        edits = commit_hand_edits(self.vault, wiped.removed_span, hold=hold)
        for warning in edits.warnings():
            self._warn(warning)
        sha = edits.sha
        if sha and wiped.removed:
            with self.vault.locked():
                acks.settle(self.vault, wiped.removed)
        return sha

    # -- one entry, one topic (agents keeping the memory in order) ------------------
    def get(self, seq: str) -> Found:
        """The live entry holding ``seq``: its words, signature, ``path:line``, topic,
        and any buffered update about to replace it."""
        from memd.app.entries import find

        self.recover(reading=True)
        return find(self.vault, seq)

    def update(
        self,
        seq: str,
        text: str,
        *,
        reason: str,
        time: str | None = None,
        source: str = "user",
        src: str | None = None,
        meta: Sequence[tuple[str, str]] = (),
    ) -> Updated:
        """Append ``text`` as a new entry that replaces the one holding ``seq``
        (``supersedes=SEQ`` and ``reason`` in its signature); the next
        consolidation records the old entry as superseded."""
        from memd.app.entries import update

        self.recover()
        return update(self.vault, seq, text, reason=reason, time=time, source=source, src=src, meta=meta)

    def topic(self, topic_id: str) -> TopicDoc:
        """One topic's Markdown, with its id, title and summary."""
        from memd.app.entries import topic

        self.recover(reading=True)
        return topic(self.vault, topic_id)

    def topics(self, *, offset: int = 0, limit: int = 100) -> JsonResult:
        """A page of the topics with their summaries (``total`` counts them all)."""
        from memd.app.entries import topics
        from memd.app.results import JsonResult

        self.recover(reading=True)
        return JsonResult(topics(self.vault, offset, limit))

    # -- several machines ---------------------------------------------------------
    def sync(self, remote: str | None = None, branch: str | None = None, take: str | None = None) -> SyncReport:
        """Commit what is pending, merge the remote's history, push (ARCHITECTURE.md §7).

        Follows the remote's branch the vault tracks; ``branch`` names another
        one to follow and track from now on. Raises ``SyncConflict`` (with its
        report) when a person must decide; nothing in the working tree is
        changed then. ``take`` ("here" or "remote") decides it for them: that
        version of each entry and line both devices changed is kept."""
        from memd.core.errors import FormatError
        from memd.sync.flow import sync

        if take not in ("here", "remote", None):
            raise FormatError(f"take must be 'here' or 'remote', not {take!r}")
        from memd.consolidation.purge import purged

        self.recover()
        self.may_commit()
        before = purged(self.vault)
        report = sync(self.vault, remote, branch=branch, take=cast("Take | None", take))
        if purged(self.vault) - before:  # another device purged words, and sync purged them here
            self._reindex_after_purge()
        return report

    @staticmethod
    def init_from(url: str, path: str | os.PathLike[str], branch: str | None = None) -> Cloned:
        """Clone the vault at ``url`` (its ``branch``, else the one holding its
        vault) onto this machine and register it as a device."""
        from memd.app.clone import clone_vault

        return clone_vault(url, Path(path).expanduser(), branch)

    # -- history review ---------------------------------------------------------
    def history(self, target: str) -> Life:
        """The life of one memory (a seq, or words picking the best-matching entry) across git history."""
        from memd.review.life import history

        return history(self.vault, target)

    def diff(self, revs: str | None = None) -> MemoryDiff:
        """What a consolidation (default: the last) or a range of commits changed, in memory terms."""
        from memd.review.diff import diff

        return diff(self.vault, revs)

    def undo(self, rev: str | None = None, *, dry_run: bool = False) -> UndoOutcome:
        """Revert one consolidation (default: the last) as a new commit; its buffer entries come back."""
        from memd.review.undo import undo

        self.recover()
        if not dry_run:
            self.may_commit()
        return undo(self.vault, rev, dry_run=dry_run)

    # -- state and history ------------------------------------------------------
    def status(self) -> Status:
        """The buffer against its thresholds, topics, seqs, consolidations."""
        from memd.app.status import vault_status

        self.recover(reading=True)
        return vault_status(self.vault)

    def due(self) -> str | None:
        """Why the buffer is due for consolidation ("tokens", "age"), or None: the
        buffer alone, not the rest of ``status`` (which walks every topic, the index
        and git), for a daemon that asks every few seconds."""
        from memd.vault.buffer_status import buffer_status

        self.recover(reading=True)
        return buffer_status(self.vault).due_reason

    def verify(self, *, full: bool = False) -> Report:
        """Account for every seq the vault ever held (``full``: walk all history again)."""
        from memd.consolidation import verify_vault

        self.recover(reading=True)
        return verify_vault(self.vault, full=full)

    def log(self, limit: int = 20, since: str | None = None) -> builtins.list[Commit]:
        """Consolidations and hand edits, newest first (``since``: an ISO date or time, the oldest shown)."""
        from memd.core.timeutil import time_bound
        from memd.git.log import log

        return log(self.vault, limit, time_bound(since))

    def lint(self, paths: Sequence[Path] | None = None) -> builtins.list[Problem]:
        """Every problem in the vault's files (or the given ones)."""
        from memd.vault.lint import lint_vault

        return lint_vault(self.vault, builtins.list(paths) if paths is not None else None)
