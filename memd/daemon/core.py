"""What the daemon remembers of the vault between events, and the helpers every action shares.

The daemon is one thread doing one step at a time, so its parts (edits.py,
held.py, inbox.py, consolidating.py, remote.py) share one set of fields on one
object rather than passing state between objects: ``Core`` holds those fields
and ``Handler`` (handler.py) puts the parts together. Keeping the state here,
apart from any one action, lets each part read what the others last saw (a
content hash, a held file, an import in progress) without importing them.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from memd.app import Memory
from memd.core.errors import MemdError
from memd.daemon.status import StatusBook, stamp
from memd.daemon.watch import Debouncer

if TYPE_CHECKING:
    from memd.ingest import InboxJob
    from memd.vault.vault import Vault

Clock = Callable[[], float]
VECTOR_SLICE = 5.0  # CPU seconds of embedding per turn of the daemon's loop
Log = Callable[[str], None]


UNREADABLE = "unreadable: "


def file_hash(path: Path) -> str | None:
    """The content's hash; None when there is no file. A file that is there but
    cannot be read (its permissions) gets ``UNREADABLE`` and the reason, which
    no content hashes to: once it can be read, its hash is new and it is looked at."""
    try:
        return hashlib.sha1(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as err:
        return UNREADABLE + (err.strerror or type(err).__name__).lower()


class Core:
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
        self.memory = Memory(vault, warn=self._warned)
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
        # Vectors still to embed after the last index sync: built a slice per turn of the loop.
        self.vectors_behind: tuple[int, int] | None = None
        self.ready_to_search = False  # the kept index's watch and first pass, set up once idle

    def _warned(self, message: str) -> None:
        """What memd settled by itself (entries put back after a `git reset` or a stale
        save): logged, and kept in the status for `memd daemon status` and `memd status`."""
        self.log(message)
        self.book.note(f"{stamp()} {message}")

    def _guard(self, what: str, action: Callable[[], object]) -> object:
        """Run one action; a failure is counted and reported, never fatal."""
        from memd.core.cancel import Cancelled

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
        """Index the vault; vectors are embedded a slice at a time (``VECTOR_SLICE`` CPU
        seconds), so a long first build never holds up edits, commits or the inbox:
        ``run_due`` embeds the next slice whenever nothing else is due."""
        store = self.memory.index()
        behind, self.vectors_behind = self.vectors_behind, None  # a failed sync is not retried in a loop
        try:
            store.sync(seconds=VECTOR_SLICE)
            self.vectors_behind = store.vectors_behind
        finally:
            store.close()
        if self.vectors_behind is not None:
            done, wanted = self.vectors_behind
            self.log(f"vectors {done:,} / {wanted:,} (building in the background)")
        elif behind is not None:
            self.log("vectors complete")

    def _sync_remote(self) -> str | None:
        try:
            return self.vault.config.sync_remote
        except MemdError:
            return None  # a broken config file is reported where it is used

    def _check(self, rel: str) -> None:
        path = self.vault.root / rel
        if not path.exists() or path.is_symlink():
            self.book.invalid(rel, [])
            return
        problems = [p for p in self.memory.lint([path]) if p.severity == "error"]
        self.book.invalid(rel, [f"{p.line}: {p.message}" for p in problems])

    def _has_unsigned(self, rel: str) -> bool:
        from memd.core.document import parse_document

        try:
            text = (self.vault.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return False
        return any(e.entry.signature is None for e in parse_document(text).entries())

    def _remember(self, rel: str) -> None:
        self.seen[rel] = self._hash(rel)
        self.stats[rel] = self._stat(rel)

    def _hash(self, rel: str) -> str | None:
        """``file_hash``, saying once in the log when a file cannot be read."""
        digest = file_hash(self.vault.root / rel)
        if digest is not None and digest.startswith(UNREADABLE) and self.seen.get(rel) != digest:
            self.log(f"cannot read {rel} ({digest[len(UNREADABLE) :]}); left alone until it can be read")
        return digest

    @staticmethod
    def _readable(digest: str | None) -> bool:
        return digest is not None and not digest.startswith(UNREADABLE)

    def _stat(self, rel: str) -> tuple[int, int] | None:
        try:
            stat = (self.vault.root / rel).stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _documents(self) -> list[str]:
        return [self.vault.rel_of(path) for path in self.vault.documents()]

    def _inbox_files(self) -> list[Path]:
        return self.memory.inbox_files()
