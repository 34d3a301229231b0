"""The daemon's logic: "this path may have changed" -> the right action.

Plain synchronous code with an injected clock, so tests feed it synthetic
events and step time without sleeping. ``Runner`` (runner.py) feeds it real
watchdog events and calls ``run_due`` from the main thread.

- A document (CURRENT, a topic, a source) whose content hash differs from the
  one last seen is re-indexed at once and checked; invalid files are listed in
  the status and never rewritten. After a quiet period with no further change
  its edit is committed as the person's own commit, then unsigned list items
  in it are adopted (seq, ``source=hand``) with one atomic write, under the
  vault lock, only if the file is still exactly what was checked.
- memd's own writes are known by hash: after each write the daemon records the
  new content's hash, so the event that write causes finds nothing new.
- A person's note anywhere else in the vault (``Untitled.md``,
  ``people/sam.md``) is memory too: indexed, checked and committed as their
  edit, never rewritten (no adoption outside CURRENT.md and topics).
- A changed file in which lint finds a possible secret is never committed:
  it is held (status ``held_files``, the log, stderr) until the person removes
  the secret or commits the file themselves; while any file is held the
  daemon does not consolidate either (that would commit it too).
- An inbox file is ingested once its size and mtime stood still for a
  debounce period, in bounded steps (``INGEST_STEP`` seconds each, with
  progress in the status), so one huge file never starves the rest of the
  inbox or people's edits; then the buffer is checked against its thresholds.
- Symbolic links are never followed: a link where memory would be is ignored.
- With ``[sync] remote`` set, the vault is synced every ``[sync] interval``
  and right after each consolidation; while the remote cannot be reached the
  wait doubles (up to an hour), and local work goes on as ever: sync holds
  no lock while it talks to the network.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..app import Memory
from ..errors import MemdError
from ..vault import Vault
from .status import StatusBook
from .watch import DOCUMENT_KINDS, Debouncer

if TYPE_CHECKING:
    from ..ingest import InboxJob

Clock = Callable[[], float]
Log = Callable[[str], None]
# Seconds of ingest work per step: other files and people's edits go between.
INGEST_STEP = 1.0
MAX_SYNC_BACKOFF = 3600.0  # seconds between tries while the remote stays unreachable


def file_hash(path: Path) -> str | None:
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


class Handler:
    def __init__(
        self,
        vault: Vault,
        *,
        clock: Clock = time.monotonic,
        debounce: float = 0.5,
        quiet: float = 3.0,
        check_every: float = 5.0,
        rescan_every: float = 30.0,
        retry_after: float = 60.0,
        book: StatusBook | None = None,
        log: Log | None = None,
    ) -> None:
        self.vault = vault
        self.memory = Memory(vault)
        self.clock = clock
        self.changes = Debouncer(debounce)  # paths to look at
        self.settling = Debouncer(quiet)  # edited documents waiting for quiet
        self.seen: dict[str, str | None] = {}  # rel -> content hash last seen
        self.stats: dict[str, tuple[int, int] | None] = {}  # rel -> (mtime_ns, size) last seen
        self.inbox_stat: dict[str, tuple[int, int]] = {}
        self.check_every = check_every
        self.rescan_every = rescan_every
        self.retry_after = retry_after
        self.next_check = clock()
        self.next_rescan = clock() + rescan_every
        self.consolidate_after = 0.0  # back-off after a failed consolidation
        self.next_sync = clock()  # when the vault syncs with its remote next ([sync] remote)
        self.sync_failures = 0
        self.book = book or StatusBook(vault)
        self.log = log or (lambda message: None)
        self.jobs: dict[str, InboxJob] = {}  # inbox files being ingested, step by step
        self.held: dict[str, list[str]] = {}  # rel -> possible secrets: not committed until the person acts
        self.ingest_step = INGEST_STEP

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
        if self._sync_remote() is not None:
            deadlines.append(self.next_sync)
        deadlines += [d for d in (self.changes.next_deadline(), self.settling.next_deadline()) if d is not None]
        return min(deadlines)

    # -- start ------------------------------------------------------------------
    def start(self) -> None:
        """Reconcile what changed while no daemon ran: finish an interrupted
        consolidation, re-index, treat uncommitted edits as fresh hand edits,
        and queue every waiting inbox file."""
        from ..history import blocked, changed_paths

        note = self._guard("recover", self.memory.recover)
        if note:
            self.book.note(str(note))
        self._guard("index", self._sync)
        for rel in self._documents():
            self._remember(rel)
            if self.vault.kind(rel) in ("current", "topic", "note"):
                self._check(rel)
                if self._has_unsigned(rel):
                    self.settling.touch(rel, self.clock())
        if blocked(self.vault) is None:
            for rel in changed_paths(self.vault):
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
        return done

    def _sync_remote(self) -> str | None:
        try:
            return self.vault.config.sync_remote
        except MemdError:
            return None  # a broken config file is reported where it is used

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
            self.book.record("last_sync", ok=False, remote=remote, error=str(err).splitlines()[0], retry_in=round(wait))
            self.log(f"sync with {remote} failed ({str(err).splitlines()[0]}); next try in {wait:g}s")
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
            return
        if (self.vault.root / rel).is_symlink():
            return  # never followed: it may lead out of the vault (`memd lint` says so)
        digest = file_hash(self.vault.root / rel)
        self.stats[rel] = self._stat(rel)
        if rel in self.seen and self.seen[rel] == digest:
            return  # memd's own write, or touched without a change
        self.seen[rel] = digest
        self._sync()
        if digest is None:
            self.book.invalid(rel, [])
            self.seen.pop(rel, None)
        elif kind in ("current", "topic", "note"):
            self._check(rel)
        self.settling.touch(rel, self.clock())
        if kind == "current":
            self.next_check = self.clock()

    def _settled(self, rel: str) -> None:
        if file_hash(self.vault.root / rel) != self.seen.get(rel):
            self.changes.touch(rel, self.clock())  # changed again: not quiet yet
            return
        self._hold_secrets()
        sha = self.memory.commit_hand_edits(hold=set(self.held))
        if sha:
            self.book.record("last_commit", commit=sha, kind="edit", path=rel)
            self.log(f"committed hand edit {sha[:10]} ({rel})")
        if self.vault.kind(rel) in ("current", "topic") and self.seen.get(rel) is not None and rel not in self.held:
            self._adopt(rel)

    def _hold_secrets(self) -> None:
        """Hold back every changed file in which lint finds a possible secret:
        memd never commits one (git history keeps it for good); the person
        removes the secret, or commits the file themselves if it is none."""
        from ..atomic import read_text
        from ..history import blocked, changed_paths
        from ..redact import find_secrets

        if blocked(self.vault) is not None:
            return
        held: dict[str, list[str]] = {}
        for rel in changed_paths(self.vault):
            if self.vault.kind(rel) not in DOCUMENT_KINDS:
                continue
            try:
                found = find_secrets(read_text(self.vault.root / rel, rel))
            except Exception:
                continue  # unreadable: `memd lint` reports it
            if found:
                held[rel] = [f"{line}: possible secret ({kind})" for line, kind in found]
        for rel in sorted(held.keys() - self.held.keys()):
            where = ", ".join(f"{rel}:{item}" for item in held[rel][:3])
            self.log(f"not committing {rel}: {where}; remove it, or commit the file yourself if it is no secret")
        for rel in sorted(self.held.keys() - held.keys()):
            self.log(f"{rel}: no possible secret left; committing it")
        self.held = held
        if held != self.book.data.get("held_files"):
            self.book.set("held_files", held)

    def _adopt(self, rel: str) -> None:
        if rel in self.book.data["invalid_files"]:
            return  # never rewrite a file that does not parse
        adopted = self.memory.adopt(rel, expected=self.seen.get(rel))
        if not adopted:
            return
        self._remember(rel)
        self._sync()
        self.log(f"adopted {adopted} hand-written entries in {rel}")

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

    def _maybe_consolidate(self) -> bool:
        if self.held:
            self._hold_secrets()  # the person may have removed the secret, or committed the file themselves
        if self.clock() < self.consolidate_after or self.memory.status().buffer.due is None:
            return False
        if self.held or self.jobs:
            return False  # a held file would ride in the consolidation's commit; an import is half appended
        self.consolidate_after = self.clock() + self.retry_after  # until it succeeds
        outcome = self.memory.consolidate(trigger="daemon", if_due=True)
        if outcome.skipped:
            return False
        for rel in [*self._documents()]:
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
        self.log(f"consolidated {outcome.entries} entries ({outcome.trigger})")
        if self._sync_remote() is not None and self.sync_failures == 0:
            self.next_sync = self.clock()  # share the new topics at once
        return True

    # -- helpers ----------------------------------------------------------------
    def _guard(self, what: str, action: Callable[[], object]) -> object:
        """Run one action; a failure is counted and reported, never fatal."""
        from ..cancel import Cancelled

        try:
            return action()
        except Cancelled:
            return None  # asked to stop: nothing was left half-done, and it is not an error
        except Exception as err:
            message = f"{what}: {err}"
            self.book.error(message)
            self.log(f"error: {message}")
            return None

    def _sync(self) -> None:
        store = self.memory.index()
        try:
            store.sync()
        finally:
            store.close()

    def _check(self, rel: str) -> None:
        from ..lint import lint_vault

        path = self.vault.root / rel
        if not path.exists() or path.is_symlink():
            self.book.invalid(rel, [])
            return
        problems = [p for p in lint_vault(self.vault, [path]) if p.severity == "error"]
        self.book.invalid(rel, [f"{p.line}: {p.message}" for p in problems])

    def _has_unsigned(self, rel: str) -> bool:
        from ..document import parse_document

        try:
            text = (self.vault.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return any(e.entry.signature is None for e in parse_document(text).entries())

    def _remember(self, rel: str) -> None:
        self.seen[rel] = file_hash(self.vault.root / rel)
        self.stats[rel] = self._stat(rel)

    def _stat(self, rel: str) -> tuple[int, int] | None:
        try:
            stat = (self.vault.root / rel).stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _documents(self) -> list[str]:
        return [self.vault.rel_of(path) for path in self.vault.documents()]

    def _inbox_files(self) -> list[Path]:
        from ..ingest import inbox_files

        return inbox_files(self.vault)
