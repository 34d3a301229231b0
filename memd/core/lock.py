"""The vault lock: one writer at a time (daemon and CLI alike).

An advisory ``flock`` on ``.memd/lock``: the kernel drops it when the holder
dies, so a crashed writer never leaves the vault locked. A read-only lock
file still works (``flock`` needs no write access); a folder in its place is
a one-line ``VaultError``; a symbolic link in its place is replaced by a file
of memd's own (memd writes its pid in the lock, and must never write through a
link into the file it names). Re-entrant within a
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
    # The folder resolved, the name not: resolving the name would follow a link in the
    # lock's place to its target, which memd would then write its pid into.
    key = lock_path.parent.resolve() / lock_path.name
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
        if path.is_symlink():
            _replace_link(path)
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


def _replace_link(path: Path) -> None:
    """A fresh empty lock file where a symbolic link was (its target untouched).

    Renamed into place, so a process that opens the path meanwhile finds the
    link or the file, never nothing; two processes replacing it at once are
    told apart by ``_acquire``'s check that the file locked is still the one there."""
    spare = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
    os.close(os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
    try:
        os.replace(spare, path)
    except OSError:
        spare.unlink(missing_ok=True)
        raise


def _acquire(path: Path, timeout: float) -> int:
    for attempt in range(5):
        fd, writable = _lock(path, timeout)
        try:
            still_there = os.fstat(fd).st_ino == os.lstat(path).st_ino
        except OSError:
            still_there = False
        if still_there or attempt == 4:  # (a file system whose numbers do not hold still must not hang memd)
            break
        # Replaced after it was opened (a link swapped for a file by another process):
        # holding the old file would lock nothing the next process looks at.
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    if writable:
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:
            pass  # the pid is only a hint for "busy" messages; a full disk must not stop a write
    return fd


def _lock(path: Path, timeout: float) -> tuple[int, bool]:
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
    return fd, writable


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
