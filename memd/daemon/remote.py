"""Sync the vault with its remote on a timer, backing off while the remote cannot be reached.

With ``[sync] remote`` set, the vault is synced every ``[sync] interval`` and
right after each consolidation (consolidating.py). While the remote cannot be
reached the wait doubles (up to an hour), so a machine that is offline does
not try again at every interval, and local work goes on as ever: sync holds
no lock while it talks to the network. What a pull brought in is remembered by hash,
so it is not taken for a person's edit.
"""

from __future__ import annotations

from memd.core.errors import MemdError
from memd.daemon.core import Core

MAX_SYNC_BACKOFF = 3600.0  # seconds between tries while the remote stays unreachable


class RemoteSync(Core):
    def _sync_with_remote(self) -> None:
        """One ``memd sync``; a failure (offline, a conflict for the person) doubles the wait."""
        remote = self._sync_remote()
        interval = self.vault.config.sync_interval.total_seconds()
        self.next_sync = self.clock() + interval  # even if something unforeseen goes wrong below
        try:
            report = self.memory.sync(remote)
        except MemdError as err:
            self.sync_failures += 1
            wait = min(interval * 2**self.sync_failures, max(interval, MAX_SYNC_BACKOFF))
            self.next_sync = self.clock() + wait
            # Whole, on one line: a conflict's message names its files and how to decide below its first line.
            error = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
            self.book.record("last_sync", ok=False, remote=remote, error=error, retry_in=round(wait))
            self.log(f"sync with {remote} failed ({error}); next try in {wait:g}s")
            return
        self.sync_failures = 0
        self.next_sync = self.clock() + interval
        if report.pulled:
            for rel in self._documents():
                self._remember(rel)
            self._sync()
        self.book.record(
            "last_sync",
            ok=True,
            remote=remote,
            pulled=report.pulled,
            pushed=report.pushed,
            received=report.received,
            resolved=len(report.resolved),
            commit=report.head,
        )
        if report.pulled or report.pushed:
            self.log(f"synced with {remote}: pulled {report.pulled}, pushed {report.pushed} commit(s)")
