"""Knowing that no indexed file changed without a stat per file, in a process that keeps searching.

Before every query the index is checked against the files
(``memd.index.freshness.unchanged``): one stat per indexed file, 2,000 at
100,000 entries, about 5 ms of CPU. A store checked more than ``WARM_CHECKS``
times (the daemon's, the MCP server's, an evaluation's) also asks the kernel:
an inotify watch on each folder the index reads. The kernel queues an event
as part of every change to a file in a watched folder (a write, a truncation,
a new mtime, a creation, a deletion, a rename), before the call that made the
change returns; so when the queue is empty at a check, nothing in those
folders changed since the queue was last emptied, and if the stats passed
then, they would pass now. Any event, a lost watch or a full queue means the
stats decide again. The queue is emptied *before* the stats run, so a change
made while they run is still queued for the next check.

Only on Linux, and only where the vault lies on a local file system: a
network share changed from another machine queues nothing here, so there the
stats decide every time, as they do in a one-off ``memd search``.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import sys
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from memd.index.freshness import unchanged

WARM_CHECKS = 2  # a one-off search never sets up a watch
# File systems whose changes all pass through this kernel.
LOCAL = frozenset("ext2 ext3 ext4 xfs btrfs tmpfs ramfs overlay zfs f2fs jfs reiserfs bcachefs nilfs2".split())
_MODIFY, _ATTRIB, _CLOSE_WRITE, _MOVED_FROM, _MOVED_TO, _CREATE, _DELETE = 0x2, 0x4, 0x8, 0x40, 0x80, 0x100, 0x200
_DELETE_SELF, _MOVE_SELF, _OVERFLOW, _IGNORED = 0x400, 0x800, 0x4000, 0x8000
_ONLYDIR, _DONT_FOLLOW = 0x1000000, 0x2000000
_MASK = _MODIFY | _ATTRIB | _CLOSE_WRITE | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _DELETE_SELF | _MOVE_SELF
_LOST = _DELETE_SELF | _MOVE_SELF | _OVERFLOW | _IGNORED  # the watch no longer covers what it did
_NONBLOCK, _CLOEXEC = os.O_NONBLOCK, os.O_CLOEXEC
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, name length


class Watch:
    """An inotify queue over some folders of a vault."""

    def __init__(self, fd: int, folders: frozenset[str]) -> None:
        self.fd = fd
        self.folders = folders
        self.lost = False

    @classmethod
    def open(cls, root: Path, folders: Sequence[str]) -> Watch | None:
        """A watch on ``folders`` (vault-relative, "" for the root), or None where the
        kernel cannot vouch for them (not Linux, not a local file system, no watch left)."""
        libc = _libc()
        if libc is None or not local(root):
            return None
        fd = libc.inotify_init1(_NONBLOCK | _CLOEXEC)
        if fd < 0:
            return None  # the per-user limit of inotify instances: the stats serve
        base = str(root)
        for folder in folders:
            path = os.fsencode(os.path.join(base, folder) if folder else base)
            if libc.inotify_add_watch(fd, path, _MASK | _ONLYDIR | _DONT_FOLLOW) < 0:
                os.close(fd)
                return None
        return cls(fd, frozenset(folders))

    def quiet(self) -> bool:
        """Empty the queue: True when it held nothing."""
        if self.fd < 0 or self.lost:
            return False
        quiet = True
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return quiet
            except OSError:
                self.lost = True
                return False
            quiet = False
            offset = 0
            while offset + _HEADER.size <= len(data):
                _, mask, _, size = _HEADER.unpack_from(data, offset)
                if mask & _LOST:
                    self.lost = True
                offset += _HEADER.size + size

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            self.close()


class Freshness:
    """``unchanged`` for one long-lived store: the stats, or the watch while it is quiet."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.checks = 0
        self._watch: Watch | None = None
        self._failed: frozenset[str] | None = None  # folders a watch could not be set on
        self._vouched: Mapping[str, Any] | None = None  # the manifest the stats last passed, under this watch

    def unchanged(self, manifest: dict[str, Any], ignore: Sequence[str]) -> bool:
        """Whether the files are the ones ``manifest`` vouches for (see the module doc)."""
        self.checks += 1
        watch = self._watching(manifest) if self.checks > WARM_CHECKS else None
        # quiet() first: it empties the queue whatever the rest says.
        if watch is not None and watch.quiet() and self._vouched is manifest and manifest.get("ignore") == list(ignore):
            return True
        passed = unchanged(self.root, manifest, ignore)
        self._vouched = manifest if passed and watch is not None else None
        return passed

    def prepare(self) -> None:
        """Set up the watch at the next check rather than after ``WARM_CHECKS`` of them."""
        self.checks = max(self.checks, WARM_CHECKS)

    def close(self) -> None:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        self._vouched = None

    def _watching(self, manifest: Mapping[str, Any]) -> Watch | None:
        """The watch over the manifest's folders, set up anew when they changed or it was lost."""
        folders = manifest.get("folders")
        if not isinstance(folders, dict):
            return None
        wanted = frozenset(folders)
        watch = self._watch
        if watch is not None and watch.folders == wanted and not watch.lost:
            return watch
        self.close()  # a new watch vouches only for what the stats check after it
        if self._failed == wanted:
            return None
        self._watch = Watch.open(self.root, sorted(wanted))
        self._failed = None if self._watch is not None else wanted
        return self._watch


def local(root: Path) -> bool:
    """Whether ``root`` lies on a file system of ``LOCAL`` (by the mount table)."""
    try:
        path = os.path.realpath(root)
        with open("/proc/self/mounts", encoding="utf-8", errors="surrogateescape") as table:
            mounts = [line.split() for line in table]
    except OSError:
        return False
    best, kind = "", ""
    for fields in mounts:
        if len(fields) < 3:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1])
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind in LOCAL


@lru_cache(maxsize=1)
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only in a process that keeps searching

    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the C library this interpreter runs on
        libc.inotify_init1.argtypes = [ctypes.c_int]
        libc.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    except (OSError, AttributeError):
        return None
    return libc
