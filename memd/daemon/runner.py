"""The daemon process: watchdog feeds paths, the main thread does the work.

The observer thread only puts paths on a queue; all reading, indexing,
ingesting, committing and consolidating happens on the main thread, one step
at a time. SIGTERM and SIGINT only set a flag, so the step in progress
finishes (a consolidation's own journal covers a hard kill) before the
daemon releases its lock and exits.
"""

from __future__ import annotations

import errno
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any

from memd.core.errors import MemdError
from memd.core.heap import Heap
from memd.daemon.handler import Handler
from memd.daemon.status import DaemonLock, StatusBook

if TYPE_CHECKING:
    from memd.vault.vault import Vault

INOTIFY_HINT = (
    "the OS refused more file watches (inotify limit); falling back to polling every {interval:g}s. "
    "Raise the limit with: sudo sysctl fs.inotify.max_user_watches=524288 "
    "(and add 'fs.inotify.max_user_watches=524288' to /etc/sysctl.d/90-memd.conf to keep it)"
)
POLL_INTERVAL = 1.0
Event = tuple[str, bool]  # (path, is_dir)


def watched_folders(vault: Vault) -> list[tuple[str, bool]]:
    """(folder, recursive): the vault root alone for CURRENT.md and notes at
    the root, and the folders holding memory (topics, sources, the person's
    own folders), never .git/, .memd/ or other hidden folders (far fewer
    watches). A folder made later is found by the periodic rescan."""
    from memd.core.layout import skipped_dir

    for folder in (vault.topics_dir, vault.sources_dir, vault.inbox_dir):
        folder.mkdir(parents=True, exist_ok=True)
    own = sorted(
        entry
        for entry in vault.root.iterdir()
        if entry.is_dir()
        and not entry.is_symlink()
        and not skipped_dir(entry.name)
        and entry.name not in ("topics", "sources", "inbox")
    )
    return [
        (str(vault.root), False),
        (str(vault.topics_dir), True),
        (str(vault.sources_dir), True),
        (str(vault.inbox_dir), False),
        *((str(folder), True) for folder in own),
    ]


def start_observer(
    vault: Vault, put: Callable[[Event], None], *, poll: bool = False, factory: Callable[[], Any] | None = None
) -> tuple[Any, str, str | None]:
    """Start watching; returns (observer, "inotify"|"polling"|..., note)."""
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer
    from watchdog.observers.polling import PollingObserver

    class Forward(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type in ("opened", "closed_no_write"):
                return  # reads, including memd's own
            for path in (event.src_path, getattr(event, "dest_path", "")):
                if path:
                    put((os.fsdecode(path), event.is_directory))

    def schedule(observer: Any) -> Any:
        for folder, recursive in watched_folders(vault):
            observer.schedule(Forward(), folder, recursive=recursive)
        observer.start()
        return observer

    if poll:
        return schedule(PollingObserver(timeout=POLL_INTERVAL)), "polling", None
    observer = None
    try:
        observer = (factory or Observer)()
        return schedule(observer), _mode(observer), None
    except OSError as err:
        if err.errno not in (errno.ENOSPC, errno.EMFILE, errno.ENFILE):
            raise
        if observer is not None:
            with suppress(Exception):
                observer.stop()
        return schedule(PollingObserver(timeout=POLL_INTERVAL)), "polling", INOTIFY_HINT.format(interval=POLL_INTERVAL)


def _mode(observer: Any) -> str:
    name = type(observer).__name__.lower()
    for mode in ("inotify", "fsevents", "kqueue", "polling", "windows"):
        if mode in name:
            return mode
    return name


class Runner:
    """``memd daemon run``: one daemon for one vault, until told to stop."""

    def __init__(self, vault: Vault, *, quiet: float = 3.0, debounce: float = 0.5, poll: bool = False) -> None:
        self.vault = vault
        self.poll = poll
        self.events: queue.SimpleQueue[Event | None] = queue.SimpleQueue()
        self.stopping = threading.Event()
        self.book = StatusBook(vault)
        self.handler = Handler(vault, quiet=quiet, debounce=debounce, book=self.book, log=self._log)
        self.heap = Heap()

    def _log(self, message: str) -> None:
        print(f"memd daemon: {message}", file=sys.stderr, flush=True)

    def stop(self, *_: object) -> None:
        from memd.core import cancel

        cancel.request()  # a long step stops at its next safe point, leaving the vault as it was
        self.stopping.set()
        self.events.put(None)  # wake the loop

    def run(self) -> int:
        from memd.daemon.serve import Server

        lock = DaemonLock(self.vault)
        lock.acquire()
        observer = None
        server = Server(self.vault, self.handler.memory, self._log)
        previous = {sig: signal.signal(sig, self.stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            self.book.flush()
            observer, mode, note = start_observer(self.vault, self.events.put, poll=self.poll)
            self.book.set("watching", mode)
            if note:
                self.book.note(note)
                self._log(note)
            self.handler.start()
            if server.start():
                self.book.set("serving", str(server.path))
            self.book.set("state", "running")
            self.book.set("ready", True)
            self.book.flush()
            self._log(f"watching {self.vault.root} ({mode}); stop with SIGTERM or `memd daemon stop`")
            self._loop()
        finally:
            server.stop()
            self.book.set("serving", None)
            if observer is not None:
                with suppress(Exception):
                    observer.stop()
                    observer.join(timeout=5)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.book.set("state", "stopped")
            self.book.set("ready", False)
            with suppress(Exception):
                self.book.flush()
            lock.release()
        self._log("stopped")
        return 0

    def _loop(self) -> None:
        clock = self.handler.clock
        while not self.stopping.is_set():
            wait = max(0.0, min(self.handler.next_deadline() - clock(), 1.0))
            try:
                item = self.events.get(timeout=wait)
                while item is not None:
                    self.handler.notice(*item)
                    item = self.events.get_nowait()
            except queue.Empty:
                pass
            if self.stopping.is_set():
                break
            if not self.handler.run_due():
                # Idle: what the searches served meanwhile keep (their caches) is exempted from
                # full collections, which would otherwise walk it all in the middle of a search.
                self.heap.settle()
            try:
                self.book.flush()
            except MemdError as err:  # a full disk must not stop the watching
                self.book.error(f"status not written: {err}")
