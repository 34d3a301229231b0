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
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.app.results import AddResult, Hits, JsonResult, Status
from memd.vault.vault import Vault, find_vault

if TYPE_CHECKING:
    from memd.app.clone import Cloned
    from memd.app.entries import Found, TopicDoc, Updated
    from memd.app.init import InitResult
    from memd.ask.offline import Answer
    from memd.consolidation import Outcome, Report
    from memd.consolidation.forget import Forgotten
    from memd.engine.base import Engine
    from memd.git.log import Commit
    from memd.index import IndexStore
    from memd.ingest import InboxJob, IngestResult
    from memd.review.asof import PastVault
    from memd.review.diff import MemoryDiff
    from memd.review.life import Life
    from memd.review.undo import UndoOutcome
    from memd.sync.report import SyncReport
    from memd.vault.lint import Problem

Warn = Callable[[str], None]
Progress = Callable[[int, int], None]


class Memory:
    """A vault and everything memd does with it."""

    def __init__(self, vault: Vault, *, warn: Warn | None = None) -> None:
        self.vault = vault
        self._warn = warn or (lambda message: None)
        self._store: IndexStore | None = None
        self._store_turn = threading.Lock()  # one search at a time uses the kept store

    def close(self) -> None:
        """Let go of the search index held open between searches (the next search opens it again)."""
        with self._store_turn:
            if self._store is not None:
                self._store.close()
                self._store = None

    # -- opening ----------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, *, warn: Warn | None = None) -> Memory:
        """The vault at ``path`` (else ``$MEMD_VAULT``, else the current folder or a parent)."""
        if path is not None:
            path = Path(path).expanduser()
        memory = cls(find_vault(path), warn=warn)
        memory.recover()
        return memory

    @staticmethod
    def init(path: str | os.PathLike[str]) -> InitResult:
        """Create a vault (idempotent: existing files are kept; ``.gitignore`` gains memd's missing patterns)."""
        from memd.app.init import init_vault

        return init_vault(Path(path).expanduser())

    def recover(self) -> str | None:
        """Finish or undo an interrupted consolidation or sync; says what it did, if anything."""
        from memd.consolidation import recover
        from memd.sync import apply as sync_journal
        from memd.vault.journal import pending

        notes = []
        if sync_journal.pending(self.vault):
            notes.append(sync_journal.recover(self.vault))
        if pending(self.vault):
            notes.append(recover(self.vault))
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
        from memd.vault.buffer import NewEntry, append_entries

        for key, value in meta:
            check_meta(key, value)
        self.recover()
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

    def forget(self, seqs: str) -> Forgotten:
        """Remove the entries holding ``seqs`` (e.g. ``12`` or ``12+41-43``) on purpose."""
        from memd.consolidation.forget import forget
        from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet

        self.recover()
        self.may_commit()
        return forget(self.vault, SeqSet.parse(seqs, MAX_SEQS_PER_ENTRY))

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

        self.recover()
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

        self.recover()
        return topic(self.vault, topic_id)

    def topics(self, *, offset: int = 0, limit: int = 100) -> JsonResult:
        """A page of the topics with their summaries (``total`` counts them all)."""
        from memd.app.entries import topics

        self.recover()
        return JsonResult(topics(self.vault, offset, limit))

    # -- several machines ---------------------------------------------------------
    def sync(self, remote: str | None = None, branch: str | None = None) -> SyncReport:
        """Commit what is pending, merge the remote's history, push (ARCHITECTURE.md §7).

        Follows the remote's branch the vault tracks; ``branch`` names another
        one to follow and track from now on. Raises ``SyncConflict`` (with its
        report) when a person must decide; nothing in the working tree is
        changed then."""
        from memd.sync.flow import sync

        self.recover()
        self.may_commit()
        return sync(self.vault, remote, branch=branch)

    @staticmethod
    def init_from(url: str, path: str | os.PathLike[str], branch: str | None = None) -> Cloned:
        """Clone the vault at ``url`` (its ``branch``, else the one holding its
        vault) onto this machine and register it as a device."""
        from memd.app.clone import clone_vault

        return clone_vault(url, Path(path).expanduser(), branch)

    # -- reading ----------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        since: str | None = None,
        until: str | None = None,
        source: str | None = None,
        as_of: str | None = None,
        progress: Progress | None = None,
        embedding: Progress | None = None,
        embed_seconds: float | None = None,
    ) -> Hits:
        """Ranked records for ``query``; ``since``/``until`` take ISO dates or times;
        ``as_of`` (a date or a revision) searches the vault as it was then, and
        each hit cites ``path:line@commit``.

        Vectors not yet embedded are embedded first (``embedding`` counts them),
        for at most ``embed_seconds`` of CPU time when given: past it the search
        ranks by words and the vectors there are, and ``Hits.note`` says so."""
        from memd.ask.tools import search
        from memd.core.timeutil import time_bound
        from memd.index import Filters

        self.recover()
        filters = Filters(since=time_bound(since), until=time_bound(until, end_of_day=True), source=source)
        if as_of:
            from memd.review.asof import search_as_of

            past = search_as_of(self.vault, query, as_of, limit, filters)
            return Hits(query, past.hits, past.past.to_json())
        with self._synced_store(progress, embedding, embed_seconds) as store:
            found = tuple(search(self.vault, query, limit, filters, store=store))
            behind, rate = store.vectors_behind, store.vectors_rate
            finish = (behind[1] - behind[0]) / rate if behind and rate else None
            return Hits(query, found, vectors=behind, finish_seconds=finish)

    @contextmanager
    def _synced_store(
        self, progress: Progress | None = None, embedding: Progress | None = None, seconds: float | None = None
    ) -> Iterator[IndexStore]:
        """The index store this ``Memory`` keeps, in step with the files (hand edits
        included; cheap when nothing changed), held for one reader at a time."""
        from memd.index import IndexStore

        with self._store_turn:
            if self._store is not None and self._store.settings_changed():
                self._store.close()
                self._store = None
            if self._store is None:
                self._store = IndexStore(self.vault)
            self._store.sync(progress, embedding=embedding, seconds=seconds)
            yield self._store

    def grep(
        self, pattern: str, *, doc: str | None = None, limit: int = 30, context: int = 3, ignore_case: bool = True
    ) -> JsonResult:
        """Lines matching a regular expression, in the whole vault or one document."""
        from memd.ask.tools import grep, grep_doc
        from memd.core.patterns import check_repeats

        check_repeats(pattern)  # a{1000000} would exhaust memory in the regex compiler
        self.recover()
        if doc is not None:
            return JsonResult(grep_doc(self.vault, doc, pattern, limit, context, ignore_case=ignore_case))
        return JsonResult(grep(self.vault, pattern, limit, context, ignore_case=ignore_case))

    def read(self, doc: str, start: int = 1, end: int | None = None) -> JsonResult:
        """Lines of one document (at most 100)."""
        from memd.ask.tools import read_lines

        self.recover()
        return JsonResult(read_lines(self.vault, doc, start, end))

    def list(self, *, offset: int = 0, limit: int = 50) -> JsonResult:
        """The catalog: CURRENT then each topic with id, tokens and summary."""
        from memd.ask.tools import list_docs

        self.recover()
        return JsonResult(list_docs(self.vault, offset, limit))

    def ask(
        self,
        question: str,
        *,
        budget: int = 1500,
        report: Callable[[Any], None] | None = None,
        embed_seconds: float | None = None,
    ) -> Answer:
        """Answer from memory with cited evidence, the way the vault's engine answers.
        ``embed_seconds`` as for ``search``: past it, evidence is found by words and the vectors there are."""
        from memd.app.replaced import with_replaced
        from memd.ask.answering import answer
        from memd.engine import get_engine

        self.recover()
        engine = get_engine(self.vault)
        if engine.client is not None:  # the model's agent searches with tools of its own
            return with_replaced(self.vault, answer(self.vault, question, budget=budget, report=report, engine=engine))
        with self._synced_store(seconds=embed_seconds) as store:
            found = answer(self.vault, question, budget=budget, report=report, engine=engine, store=store)
        return with_replaced(self.vault, found)

    def ask_as_of(
        self, question: str, when: str, *, budget: int = 1500, report: Callable[[Any], None] | None = None
    ) -> tuple[PastVault, Answer]:
        """``ask`` over the vault as it was at ``when`` (a date or a revision), read from git."""
        from memd.ask.answering import answer
        from memd.review.asof import past_vault

        past = past_vault(self.vault, when)
        return past, answer(past.vault, question, budget=budget, report=report)

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

    def reindex(self, progress: Progress | None = None, embedding: Progress | None = None) -> Any:
        """Rebuild the search index from the files alone (``embedding`` counts the records embedded)."""
        store = self.index()
        try:
            return store.rebuild(progress, embedding=embedding)
        finally:
            store.close()

    def index(self) -> IndexStore:
        from memd.index import IndexStore

        return IndexStore(self.vault)

    # -- state and history ------------------------------------------------------
    def status(self) -> Status:
        """The buffer against its thresholds, topics, seqs, consolidations."""
        from memd.app.status import vault_status

        self.recover()
        return vault_status(self.vault)

    def verify(self, *, full: bool = False) -> Report:
        """Account for every seq the vault ever held (``full``: walk all history again)."""
        from memd.consolidation import verify_vault

        self.recover()
        return verify_vault(self.vault, full=full)

    def log(self, limit: int = 20) -> builtins.list[Commit]:
        """Consolidations and hand edits, newest first."""
        from memd.git.log import log

        return log(self.vault, limit)

    def lint(self, paths: Sequence[Path] | None = None) -> builtins.list[Problem]:
        """Every problem in the vault's files (or the given ones)."""
        from memd.vault.lint import lint_vault

        return lint_vault(self.vault, builtins.list(paths) if paths is not None else None)
