"""The vault lock: one writer at a time (daemon and CLI alike).

An advisory ``flock`` on ``.memd/lock``: the kernel drops it when the holder
dies, so a crashed writer never leaves the vault locked. Re-entrant within a
process, so a command that holds it may call helpers that take it again.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import LockTimeout

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


def _acquire(path: Path, timeout: float) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def _holder(fd: int) -> str:
    try:
        return os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
