"""``.memd/seq.local``: what seq allocation (``state.allocate``) keeps between adds.

Machine-local and never committed: the highest seq this machine handed out
(the mark), and each entry file's highest seq with its size and mtime, with
the folder stamps that vouch for the list of files. Two lines of JSON: what
every add changes, then each file's [mtime, size, highest seq]. The second
line is written back as read while no file changed, so an add in a large
vault does not parse and serialise a record of every file again. Anything
damaged reads as no cache: the add then walks the vault.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any, NamedTuple

from memd.core.atomic import atomic_write, read_bytes
from memd.vault.vault import Vault, stamps_hold

FILE = "seq.local"
# Which files an entry listing counts (``Vault.entry_listing``): raised when
# that rule changes, so a list another version made is walked again, not trusted.
LISTING = 1

Listed = tuple[list[str], dict[str, int]]  # the ignore patterns and folder stamps a file list was made under


class SeqCache(NamedTuple):
    mark: int
    files: dict[str, Any]  # as read: each value is checked where it is used (``stat_of``, ``unchanged``)
    files_text: bytes  # the second line, as read
    high: int | None  # the highest seq of ``files``; None: count them
    device: Any
    space: int  # the device space the highs were counted in
    listed: Listed | None  # what vouches for the file list: None to walk the vault


def load_cache(vault: Vault) -> SeqCache | None:
    try:
        head, _, files_text = read_bytes(vault.meta_dir / FILE).partition(b"\n")
        raw = json.loads(head)
        # One line: the record an earlier version wrote, its files inside it.
        files = json.loads(files_text) if files_text else raw["files"]
        if not isinstance(files, dict):  # (JSON's keys are strings)
            return None
        high = raw.get("high") if files_text else None
        listed: Listed | None = None
        # The file list is trusted only as made by these rules (another memd may
        # count other files) and as paths inside the vault: a damaged cache must
        # not send an add reading files elsewhere.
        if (
            raw.get("listing") == LISTING
            and isinstance(raw.get("folders"), dict)
            and isinstance(raw.get("ignore"), list)
            and _inside(files)
        ):
            listed = ([str(p) for p in raw["ignore"]], {str(k): int(v) for k, v in raw["folders"].items()})
        return SeqCache(
            mark=int(raw["mark"]),
            files=files,
            files_text=files_text,
            high=high if type(high) is int else None,
            device=raw.get("device"),
            space=int(raw.get("space", 0)),
            listed=listed,
        )
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def save_cache(
    vault: Vault,
    mark: int,
    high: int,
    listed: Listed,
    space: int,
    device: dict[str, Any],
    files: dict[str, list[int]],
    files_text: bytes | None,
) -> None:
    """Write the cache; ``files_text``: the files' record as read, when ``files`` is that record unchanged."""
    header: dict[str, Any] = {"mark": mark, "high": high, "listing": LISTING, "ignore": listed[0], "folders": listed[1]}
    if space or device:
        header.update(space=space, device=device)
    if files_text is None:
        files_text = json.dumps(files, separators=(",", ":")).encode("utf-8")
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    atomic_write(vault.meta_dir / FILE, head + b"\n" + files_text, derived=True)


def forget_cache(vault: Vault) -> None:
    """Drop the machine-local cache (this clone's device space changed). Call under the vault lock."""
    (vault.meta_dir / FILE).unlink(missing_ok=True)


def list_holds(vault: Vault, listed: Listed, ignore: list[str]) -> bool:
    """Whether a cached file list was made under these ignore patterns and no folder stamp moved since."""
    return bool(listed[1]) and listed[0] == ignore and stamps_hold(vault.root, listed[1])


def unchanged(vault: Vault, files: dict[str, Any]) -> bool:
    """Whether every file still has the mtime and size recorded (a damaged record: no)."""
    base = str(vault.root) + os.sep
    try:
        for rel, known in files.items():
            stat = os.stat(base + rel)
            if known[0] != stat.st_mtime_ns or known[1] != stat.st_size:
                return False
    except (OSError, TypeError, IndexError, KeyError):
        return False
    return True


def stat_of(value: Any) -> tuple[int, int, int] | None:
    """A cached [mtime, size, highest seq], or None where the cache is damaged."""
    if isinstance(value, list) and len(value) == 3 and all(type(n) is int for n in value):
        return value[0], value[1], value[2]
    return None


_OUTSIDE = re.compile(r"(?:^|/)\.\.(?:/|$)", re.M)


def _inside(rels: dict[str, Any]) -> bool:
    """Whether every path is vault-relative and stays inside (no leading /, no ..)."""
    text = "\n" + "\n".join(rels)
    if "\n/" in text or "\x00" in text:
        return False
    return ".." not in text or _OUTSIDE.search(text) is None
