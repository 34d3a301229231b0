"""Consolidate when the buffer is due, and never while that would commit the wrong thing.

The buffer is checked every ``check_every`` seconds (at once after CURRENT.md
changes or an import added entries). A consolidation commits the whole vault,
so it waits while a file is held for a possible secret (held.py) or an inbox
file is half appended (inbox.py); a failed one is retried after
``retry_after`` seconds rather than at every check. Afterwards every document
is remembered by hash, so the consolidation's own writes are not taken for a
person's edits, and a configured remote is synced at once to share the new
topics.
"""

from __future__ import annotations

from memd.daemon.held import Holding


class Consolidating(Holding):
    def _maybe_consolidate(self) -> bool:
        if self.held:
            self._hold_secrets()  # the person may have removed the secret, or committed the file themselves
        if self.clock() < self.consolidate_after or self.memory.due() is None:
            return False
        if self.held or self.jobs:
            return False  # a held file would ride in the consolidation's commit; an import is half appended
        self.consolidate_after = self.clock() + self.retry_after  # until it succeeds
        outcome = self.memory.consolidate(trigger="daemon", if_due=True)
        if outcome.skipped:
            return False
        for rel in self._documents():
            self._remember(rel)
        for rel in list(self.seen):
            if not (self.vault.root / rel).exists():
                self.seen.pop(rel)
        self._sync()
        self.consolidate_after = 0.0
        self.book.record(
            "last_consolidation",
            trigger=outcome.trigger,
            entries=outcome.entries,
            commit=outcome.commit,
            topics=list(outcome.touched_topics),
        )
        for warning in outcome.warnings:
            self.book.note(warning)
        committed = ""
        if outcome.commit:
            files = self.memory.files_of_commit(outcome.commit)
            shown = ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
            committed = f": committed {outcome.commit[:10]} ({shown})"
        self.log(f"consolidated {outcome.entries} entries ({outcome.trigger}){committed}")
        if self._sync_remote() is not None and self.sync_failures == 0:
            self.next_sync = self.clock()  # share the new topics at once
        return True
