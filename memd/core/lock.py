"""The vault lock: one writer at a time (daemon and CLI alike).

An advisory ``flock`` on ``.memd/lock``: the kernel drops it when the holder
dies, so a crashed writer never leaves the vault locked. A read-only lock
file still works (``flock`` needs no write access); a folder in its place is
a one-line ``VaultError``. Re-entrant within a
process, so a command that holds it may call helpers that take it again.
"""

from __future__ import annotations

import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memd.core.errors import LockTimeout, VaultError

_local = threading.local()


@contextmanager
def vault_lock(lock_path: Path, timeout: float) -> Iterator[None]:
    """Hold the vault lock; waits up to ``timeout`` seconds for another holder.

    Re-entrancy is per thread: another thread of this process waits like any
    other process would (flock conflicts between separate open files).
    """
    key = lock_path.resolve()
    held: dict[Path, list[int]] = _local.__dict__.setdefault("held", {})
    if key in held:
        held[key][1] += 1
        try:
            yield
        finally:
            held[key][1] -= 1
        return
    fd = _acquire(key, timeout)
    held[key] = [fd, 1]
    try:
        yield
    finally:
        del held[key]
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _open(path: Path) -> tuple[int, bool]:
    """The lock file's descriptor, and whether memd may write its pid in it.

    ``flock`` needs no write access, so a read-only lock file (or a vault on a
    read-only disk, where the file already exists) still serves; anything
    else that stops memd from holding the lock is one ``VaultError``.
    """
    from memd.core.atomic import _describe

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644), True
    except IsADirectoryError:
        raise VaultError(f"{path} is a folder; memd needs a lock file there (remove the folder)") from None
    except OSError as err:
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            try:
                return os.open(path, os.O_RDONLY | os.O_NOFOLLOW), False
            except OSError:
                pass
        raise VaultError(f"cannot use the vault lock {path}: {_describe(err)}") from None


def _acquire(path: Path, timeout: float) -> int:
    fd, writable = _open(path)
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = _holder(fd)
                os.close(fd)
                who = f" (held by pid {holder})" if holder else ""
                raise LockTimeout(
                    f"the vault is busy: another memd process is writing{who}; gave up after {timeout:g}s"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
    if writable:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass  # the pid is only a hint for "busy" messages; a full disk must not stop a write
    return fd


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
