"""An inbox file is ingested once it stands still, in bounded steps.

A file dropped in ``inbox/`` may still be being written, so it is taken only
once its size and mtime stood still for a debounce period. Ingesting runs in
steps of ``INGEST_STEP`` seconds each, with progress in the status, and goes
back on the queue between steps, so one huge file never starves the rest of
the inbox or people's edits. Once it added entries, the buffer is checked
against its thresholds at once.
"""

from __future__ import annotations

from memd.daemon.core import Core

# Seconds of ingest work per step: other files and people's edits go between.
INGEST_STEP = 1.0


class Inbox(Core):
    ingest_step = INGEST_STEP

    def _inbox(self, rel: str) -> None:
        path = self.vault.root / rel
        job = self.jobs.get(rel)
        if job is None:
            stat = self._stat(rel)
            if stat is None or not path.is_file() or path.is_symlink():
                self.inbox_stat.pop(rel, None)
                return
            if self.inbox_stat.get(rel) != stat:
                # Still being written (or just arrived): look again after a pause.
                self.inbox_stat[rel] = stat
                self.changes.touch(rel, self.clock())
                return
            del self.inbox_stat[rel]
            job = self.jobs[rel] = self.memory.inbox_job(path)
        outcome = job.step(self.ingest_step)
        if outcome is None:
            done, total = job.progress
            self.book.record("ingesting", name=path.name, done=done, total=total)
            if total and done // 5000 != (done - 1) // 5000:
                self.log(f"inbox/{path.name}: {done}/{total}")
            self.changes.touch(rel, self.clock(), 0.0)  # the next step, after whatever else is due
            return
        del self.jobs[rel]
        if not self.jobs:
            self.book.set("ingesting", None)
        entries = outcome.result.entries if outcome.result else 0
        self.book.record(
            "last_ingest",
            name=outcome.name,
            status=outcome.status,
            entries=entries,
            moved_to=outcome.moved_to,
            reason=outcome.reason,
        )
        self.log(f"inbox/{outcome.name}: {outcome.status}" + (f" ({outcome.reason})" if outcome.reason else ""))
        if outcome.status == "retry":
            self.changes.touch(rel, self.clock(), self.retry_after)
        if outcome.result is not None and not outcome.result.duplicate:
            self._remember("CURRENT.md")
            self._remember(outcome.result.source)
            self._sync()
            self.next_check = self.clock()
