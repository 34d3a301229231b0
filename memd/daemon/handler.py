"""The daemon's logic: "this path may have changed" -> the right action, when it is due.

Plain synchronous code with an injected clock, so tests feed it synthetic
events and step time without sleeping. ``Runner`` (runner.py) feeds it real
watchdog events and calls ``run_due`` from the main thread.

This module is the intake and the schedule: which events matter, what is
due now, and what to reconcile after a time with no daemon running. The
actions live one idea to a module, all over the shared state in core.py:

- edits.py: a person's edit is indexed and checked at once, committed as
  theirs after a quiet period, then its unsigned items are adopted;
- held.py: a changed file with a possible secret is never committed;
- inbox.py: an inbox file is ingested once it stands still, in bounded steps;
- consolidating.py: the buffer is consolidated when due;
- remote.py: the vault is synced with ``[sync] remote``, backing off offline.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from memd.core.layout import DOCUMENT_KINDS
from memd.daemon.consolidating import Consolidating
from memd.daemon.core import Clock, Log, file_hash
from memd.daemon.edits import Edits
from memd.daemon.inbox import INGEST_STEP, Inbox
from memd.daemon.remote import MAX_SYNC_BACKOFF, RemoteSync

__all__ = ["INGEST_STEP", "MAX_SYNC_BACKOFF", "Clock", "Handler", "Log", "file_hash"]


class Handler(Edits, Inbox, Consolidating, RemoteSync):
    # -- input ------------------------------------------------------------------
    def notice(self, path: str | Path, is_dir: bool = False) -> None:
        """A watcher saw something at ``path`` (absolute or vault-relative)."""
        rel = self._rel(path)
        if rel is None:
            return
        if is_dir:
            if self.vault.kind(rel + "/x.md") is not None or rel in (".", "inbox"):
                self.next_rescan = min(self.next_rescan, self.clock() + self.changes.delay)
            return
        if self.vault.kind(rel) is None:
            return
        self.changes.touch(rel, self.clock())
        self.book.record("last_event", path=rel)

    def _rel(self, path: str | Path) -> str | None:
        candidate = Path(path)
        if not candidate.is_absolute():
            return candidate.as_posix()
        try:
            return candidate.relative_to(self.vault.root).as_posix()
        except ValueError:
            return None

    def next_deadline(self) -> float:
        deadlines = [self.next_check, self.next_rescan]
        if self.vectors_behind is not None:
            deadlines.append(self.clock())  # the next slice of vectors is due now
        if self._sync_remote() is not None:
            deadlines.append(self.next_sync)
        deadlines += [d for d in (self.changes.next_deadline(), self.settling.next_deadline()) if d is not None]
        return min(deadlines)

    # -- start ------------------------------------------------------------------
    def start(self) -> None:
        """Reconcile what changed while no daemon ran: finish an interrupted
        consolidation, re-index, treat uncommitted edits as fresh hand edits,
        and queue every waiting inbox file."""
        note = self._guard("recover", self.memory.recover)
        if note:
            self.book.note(str(note))
        self._guard("index", self._sync)
        for rel in self._documents():
            self._remember(rel)
            if self.vault.kind(rel) in ("current", "topic", "note") and self._readable(self.seen.get(rel)):
                self._check(rel)
                if self._has_unsigned(rel):
                    self.settling.touch(rel, self.clock())
        for rel in self.memory.changed_paths():
            if self.vault.kind(rel) in DOCUMENT_KINDS:
                self.settling.touch(rel, self.clock())
        for path in self._inbox_files():
            self.changes.touch(self.vault.rel(path), self.clock(), 0.0)
        self.next_check = self.clock()

    # -- work -------------------------------------------------------------------
    def run_due(self) -> int:
        """Do everything that is due now; returns how many actions ran."""
        done = 0
        now = self.clock()
        if now >= self.next_rescan:
            self.next_rescan = now + self.rescan_every
            self._guard("rescanning", self.rescan)
        for rel in self.changes.due(now):
            self._guard(f"looking at {rel}", partial(self._changed, rel))
            done += 1
        for rel in self.settling.due(self.clock()):
            self._guard(f"committing {rel}", partial(self._settled, rel))
            done += 1
        if self.clock() >= self.next_check:
            self.next_check = self.clock() + self.check_every
            if self._guard("consolidating", self._maybe_consolidate):
                done += 1
        if self._sync_remote() is not None and self.clock() >= self.next_sync:
            self._guard("syncing", self._sync_with_remote)
            done += 1
        if self.vectors_behind is not None and not done:
            self._guard("embedding", self._sync)
            done += 1
        if not done and not self.ready_to_search and self.vectors_behind is None:
            self.ready_to_search = True  # once: a failure is logged, and searches set it up themselves
            self._guard("preparing for searches", self.memory.prepare_searches)
            done += 1
        return done

    def rescan(self) -> None:
        """Find changes no event told us about (a lost watch, polling, a
        folder moved in): compare every file's stat with the last one seen."""
        present = set(self._documents())
        for rel in sorted(present | set(self.seen)):
            if self._stat(rel) != self.stats.get(rel):
                self.changes.touch(rel, self.clock(), 0.0)
        for path in self._inbox_files():
            rel = self.vault.rel(path)
            if rel not in self.changes:
                self.changes.touch(rel, self.clock(), 0.0)

    def _changed(self, rel: str) -> None:
        kind = self.vault.kind(rel)
        if kind == "inbox":
            self._inbox(rel)
        else:
            self._edited(rel, kind)
