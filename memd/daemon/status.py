"""The daemon's pid lock and status file (both machine-local, git-ignored).

``.memd/daemon.lock`` holds an advisory lock for as long as a daemon runs
(one daemon per vault; the kernel releases it if the daemon dies) and its
pid. ``.memd/daemon.json`` says what the daemon is doing::

    {"pid": 4242, "state": "running", "ready": true, "watching": "inotify",
     "started": "...", "updated": "...", "last_event": {"time", "path"},
     "last_ingest": {...}, "last_consolidation": {...}, "last_commit": {...},
     "last_sync": {"time", "ok", "remote", "pulled", "pushed", ...},
     "errors": 0, "last_error": null, "invalid_files": {"topics/x.md": ["..."]},
     "held_files": {"topics/x.md": ["3: possible secret (openai-key)"]},
     "ingesting": {"time", "name", "done", "total"},
     "notes": ["inotify watch limit reached ..."]}

``held_files`` lists edits memd will not commit because lint finds a possible
secret in them (the person removes it, or commits the file themselves).
``read_status`` adds ``endpoint``, the model endpoint's health, when a model
was ever called (see ``memd.engine.breaker``); ``daemon_state`` adds what the
lock says (running or not, and ``ended`` for a daemon that never wrote that it
stopped).
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.core.atomic import atomic_write
from memd.core.errors import VaultError
from memd.core.timeutil import format_time, now

if TYPE_CHECKING:
    from memd.vault.vault import Vault

MAX_NOTES = 20


def lock_path(vault: Vault) -> Path:
    return vault.meta_dir / "daemon.lock"


def status_path(vault: Vault) -> Path:
    return vault.meta_dir / "daemon.json"


def log_path(vault: Vault) -> Path:
    return vault.meta_dir / "logs" / "daemon.log"


class DaemonLock:
    """Held for the daemon's life; a second daemon for the vault is refused."""

    def __init__(self, vault: Vault) -> None:
        self.path = lock_path(vault)
        self.fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
            os.close(fd)
            raise VaultError(f"a memd daemon is already running for this vault (pid {holder or '?'})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def running_pid(vault: Vault) -> int | None:
    """The pid of the vault's running daemon, None when none runs."""
    path = lock_path(vault)
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 32, 0).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def read_status(vault: Vault) -> dict[str, Any] | None:
    try:
        data = json.loads(status_path(vault).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    from memd.app.status import endpoint_health  # (a search asks running_pid: it needs none of it)

    endpoint = endpoint_health(vault)
    if endpoint is not None:
        data["endpoint"] = endpoint
    return data


def daemon_state(vault: Vault) -> dict[str, Any]:
    """The daemon's status as a reader should see it: its record plus ``running``
    and ``pid`` from the lock, and ``state: ended`` for a daemon that was killed or
    crashed (its record still says it runs, yet nothing holds the lock)."""
    pid = running_pid(vault)
    data = read_status(vault) or {}
    data["running"] = pid is not None
    if pid is not None:
        data["pid"] = pid
    elif data.get("state") not in (None, "stopped"):
        data["state"] = "ended"
    return data


def stamp() -> str:
    return format_time(now())


@dataclass
class StatusBook:
    """What the daemon reports; written to daemon.json when something changed."""

    vault: Vault
    data: dict[str, Any] = field(default_factory=dict)
    dirty: bool = True

    def __post_init__(self) -> None:
        self.data = {
            "pid": os.getpid(),
            "vault": str(self.vault.root),
            "state": "starting",
            "ready": False,
            "watching": None,
            "started": stamp(),
            "updated": None,
            "last_event": None,
            "last_ingest": None,
            "last_consolidation": None,
            "last_commit": None,
            "last_sync": None,
            "errors": 0,
            "last_error": None,
            "invalid_files": {},
            "held_files": {},
            "ingesting": None,
            "notes": [],
        }

    def set(self, key: str, value: Any) -> None:
        self.data[key] = value
        self.dirty = True

    def record(self, key: str, **values: Any) -> None:
        self.set(key, {"time": stamp(), **values})

    def error(self, message: str) -> None:
        self.data["errors"] += 1
        self.record("last_error", message=message)

    def note(self, message: str) -> None:
        self.data["notes"] = [*self.data["notes"], message][-MAX_NOTES:]
        self.dirty = True

    def invalid(self, rel: str, problems: list[str]) -> None:
        files = dict(self.data["invalid_files"])
        if problems:
            files[rel] = problems
        else:
            files.pop(rel, None)
        if files != self.data["invalid_files"]:
            self.set("invalid_files", files)

    def flush(self) -> None:
        if not self.dirty:
            return
        self.data["updated"] = stamp()
        atomic_write(status_path(self.vault), json.dumps(self.data, indent=2, ensure_ascii=False) + "\n")
        self.dirty = False
