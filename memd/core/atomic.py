"""Atomic file writes and careful reads.

A write goes to a temp file in the same folder, is fsynced, then renamed over
the target, and the folder is fsynced so the rename itself is durable. A crash
or a full disk at any point leaves either the old file or the new one, never a
mix, and never a stray temp file after a failure we can see.

A file the person made read-only (no write bit, e.g. ``chmod 444``) is left
alone: memd refuses to replace or append to it, with a message, even where
the operating system would let it (root, or a writable folder). Reads and
appends never follow a symbolic link, which might lead out of the vault.
Every failure is a one-line ``WriteError`` or ``DocumentError``.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from pathlib import Path

from memd.core.errors import DocumentError, WriteError

TEMP_SUFFIX = ".memd-tmp"


def atomic_write(
    path: Path, data: str | bytes, *, unless_changed: bytes | bool | None = False, derived: bool = False
) -> bool:
    """Write ``data`` to ``path`` atomically. With ``unless_changed`` (the
    bytes the caller last read, None for "did not exist"), the file is
    compared again right before the rename, so a program that wrote it
    meanwhile wins: nothing is replaced and False is returned. ``derived``:
    memd's own record of what the vault holds, so a pipe or a device in its
    place is replaced (the rename never opens it) instead of refusing every
    write that needs the record."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    if not (derived and _special(path)):
        refuse_read_only(path)
    # Short enough for any file system whatever the target's name (255 bytes).
    temp = path.with_name(f".{path.name[:100]}.{os.getpid()}{TEMP_SUFFIX}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
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
        with contextlib.suppress(OSError):
            temp.unlink(missing_ok=True)
        raise WriteError(f"could not write {path}: {_describe(err)}; the previous content is unchanged") from None
    _fsync_dir(path.parent)
    return True


def refuse_read_only(path: Path) -> None:
    """Raise ``WriteError`` when ``path`` is a file the person made read-only,
    or something memd must not replace (a folder, a pipe, a device)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return
    if stat.S_ISLNK(mode):
        return  # a rename replaces the link itself, an append refuses it: nothing is written through it
    if stat.S_ISDIR(mode):
        raise WriteError(f"could not write {path}: is a folder, expected a file")
    if not stat.S_ISREG(mode):
        raise WriteError(f"could not write {path}: not a regular file (a pipe or a device?); memd leaves it alone")
    if not mode & 0o222:
        raise WriteError(
            f"{path} is read-only (mode {stat.S_IMODE(mode):o}); memd leaves it alone: make it writable "
            f"(chmod u+w) to let memd change it"
        )


def refuse_read_only_folder(path: Path) -> None:
    """Raise ``WriteError`` when the folder ``path`` is (or would be) written in
    is one memd may not create files in (every write is a new file renamed
    into place): checked before anything is written, so nothing is half done."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        raise WriteError(
            f"could not write {path}: the folder {folder} is read-only; make it writable (chmod u+w) and memd goes on"
        )


def _special(path: Path) -> bool:
    """A pipe, a device or a socket (not a file, a folder or a link)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def own_folder(path: Path) -> Path:
    """``path``, a folder memd keeps under ``.memd/`` (the index, the journal),
    or a one-line ``WriteError`` when something else stands in its place: a
    symbolic link would carry what memd writes out of the vault."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return path
    except OSError as err:
        raise WriteError(f"could not use {path}: {_describe(err)}") from None
    if stat.S_ISLNK(mode):
        raise WriteError(f"{path} is a symbolic link; memd never writes through links under .memd/: remove it")
    if not stat.S_ISDIR(mode):
        raise WriteError(f"{path} is not a folder; memd keeps its own files there: remove it")
    return path


def _current_bytes(path: Path) -> bytes | None:
    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None


def append_bytes(path: Path, payload: bytes) -> None:
    """Append ``payload`` with one ``O_APPEND`` write and fsync it.

    The kernel places an O_APPEND write at the end of the file as it is at
    that moment, so bytes another program wrote meanwhile are kept. On a full
    disk the file is cut back to its old length: no torn entry is left.
    """
    fd = -1
    refuse_read_only(path)
    try:
        # O_NONBLOCK: a pipe put there since the check above must not make the open wait.
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe or a device?); memd leaves it alone")
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
    if err.errno == errno.EFBIG:
        return "file too large (the file-size limit was reached)"
    if err.errno == errno.EDQUOT:
        return "disk quota exceeded"
    if err.errno == errno.ELOOP:
        return "is a symbolic link (memd does not follow links)"
    if err.errno == errno.EISDIR:
        return "is a folder, expected a file"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if err.errno == errno.EROFS:
        return "read-only file system"
    return err.strerror or str(err)


def read_text(path: Path, display: str | None = None) -> str:
    """Read a Markdown file as UTF-8, with one-line errors for bad files."""
    name = display or str(path)
    try:
        data = read_bytes(path)
    except IsADirectoryError:
        raise DocumentError(name, 1, "is a folder, expected a Markdown file") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise DocumentError(name, 1, "is a symbolic link; memd does not follow links") from None
        raise DocumentError(name, 1, f"cannot read: {_describe(err)}") from None
    return decode_markdown(data, name)


def read_bytes(path: Path, *, follow_links: bool = False) -> bytes:
    """The bytes of ``path``, refusing (ELOOP) to follow a symbolic link at its
    end unless ``follow_links``, and refusing (EINVAL) anything but a file."""
    # O_NONBLOCK: opening a named pipe must not wait for a writer.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow_links else os.O_NOFOLLOW))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def decode_markdown(data: bytes, name: str) -> str:
    if b"\x00" in data:
        # The line of the first NUL: in a text file a stray one, there for a person to remove.
        raise DocumentError(
            name, data[: data.index(b"\x00")].count(b"\n") + 1, "binary file where a Markdown file is expected"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        message = f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start})"
        raise DocumentError(name, line, message) from None


def storable(text: str) -> str:
    """``text`` as UTF-8 can hold it: a lone surrogate (a terminal's undecodable
    bytes, or JSON spelling ``"\\ud800"``) becomes U+FFFD, so a write of it
    cannot fail half-way."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


# C0 controls but tab, newline and carriage return; DEL; C1 controls; and the
# Unicode line and paragraph separators (which some readers take as line breaks).
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    """``text`` with control characters spelled out (NUL -> ``\\x00``, ESC ->
    ``\\x1b``, U+2028 -> ``\\u2028``): the person's words are kept, visibly,
    and the file stays a text file every later read accepts (a NUL makes
    CURRENT.md read as binary). Tabs and line breaks are left as they are."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub(_spelled, text)


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
