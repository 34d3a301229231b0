"""Atomic file writes and careful reads.

A write goes to a temp file in the same folder, is fsynced, then renamed over
the target, and the folder is fsynced so the rename itself is durable. A crash
or a full disk at any point leaves either the old file or the new one, never a
mix, and never a stray temp file after a failure we can see.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from .errors import DocumentError, WriteError

TEMP_SUFFIX = ".memd-tmp"


def atomic_write(path: Path, data: str | bytes, *, unless_changed: bytes | bool | None = False) -> bool:
    """Write ``data`` to ``path`` atomically. With ``unless_changed`` (the
    bytes the caller last read, None for "did not exist"), the file is
    compared again right before the rename, so a program that wrote it
    meanwhile wins: nothing is replaced and False is returned."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}{TEMP_SUFFIX}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        if unless_changed is not False and _current_bytes(path) != unless_changed:
            temp.unlink(missing_ok=True)
            return False
        os.replace(temp, path)
    except OSError as err:
        temp.unlink(missing_ok=True)
        raise WriteError(f"could not write {path}: {_describe(err)}; the previous content is unchanged") from None
    _fsync_dir(path.parent)
    return True


def _current_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def append_bytes(path: Path, payload: bytes) -> None:
    """Append ``payload`` with one ``O_APPEND`` write and fsync it.

    The kernel places an O_APPEND write at the end of the file as it is at
    that moment, so bytes another program wrote meanwhile are kept. On a full
    disk the file is cut back to its old length: no torn entry is left.
    """
    fd = -1
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        start = os.fstat(fd).st_size
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):
                written = os.pread(fd, len(payload) + 1, start)
                if written and payload.startswith(written):  # only our own torn bytes follow
                    os.ftruncate(fd, start)
            raise
    except OSError as err:
        raise WriteError(f"could not append to {path}: {_describe(err)}; the previous content is unchanged") from None
    finally:
        if fd >= 0:
            os.close(fd)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse directory fsync; the rename is still atomic
    finally:
        os.close(fd)


def _describe(err: OSError) -> str:
    if err.errno == errno.ENOSPC:
        return "no space left on device"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if err.errno == errno.EROFS:
        return "read-only file system"
    return err.strerror or str(err)


def read_text(path: Path, display: str | None = None) -> str:
    """Read a Markdown file as UTF-8, with one-line errors for bad files."""
    name = display or str(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise DocumentError(name, 1, "is a folder, expected a Markdown file") from None
    except OSError as err:
        raise DocumentError(name, 1, f"cannot read: {_describe(err)}") from None
    return decode_markdown(data, name)


def decode_markdown(data: bytes, name: str) -> str:
    if b"\x00" in data:
        raise DocumentError(name, 1, "binary file where a Markdown file is expected")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        message = f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})"
        raise DocumentError(name, line, message) from None
