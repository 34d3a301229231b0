"""Is the index still in step with the files? Answered cheaply before every query.

The manifest records each indexed file's (mtime, size) and each folder's
mtime. A file created, deleted or renamed changes its folder's mtime, so
when no folder stamp moved the set of files is the same and one stat per
file catches edits in place; otherwise the vault is walked again. Stamps
younger than ``vault.RACY_SECONDS`` are recorded as unknown and always re-checked.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.layout import DOCUMENT_KINDS, classify
from memd.vault.vault import Vault, stamps_hold, trusted_stamp


def indexed_files(vault: Vault) -> dict[str, tuple[int, int]]:
    """Vault-relative path -> (mtime_ns, size) of every file the index covers."""
    return scan(vault).files


@dataclass(frozen=True)
class Scan:
    """What one walk of the vault found: the indexed files and the folders it entered."""

    files: dict[str, tuple[int, int]]
    folders: dict[str, int]  # vault-relative folder ("" for the root) -> mtime_ns, -1 when too recent to trust


def scan(vault: Vault) -> Scan:
    """Stat every document in the folders ``Vault.listings`` enters, and note
    each folder's mtime (taken before it was listed)."""
    ignore = vault.ignore
    files: dict[str, tuple[int, int]] = {}
    folders: dict[str, int] = {}
    now = time.time_ns()
    for listing in vault.listings():
        folders[listing.prefix.rstrip("/")] = trusted_stamp(listing.mtime_ns, now)
        for entry in listing.entries:
            rel = listing.prefix + entry.name
            try:
                if (
                    not entry.is_symlink()
                    and entry.is_file(follow_symlinks=False)
                    and classify(rel, ignore) in DOCUMENT_KINDS
                ):
                    stat = entry.stat(follow_symlinks=False)
                    files[rel] = (stat.st_mtime_ns, stat.st_size)
            except OSError:
                continue
    return Scan(files, folders)


def unchanged(root: Path, manifest: dict[str, Any], ignore: Sequence[str]) -> bool:
    """True when the files the manifest vouches for are exactly the vault's
    indexed files, checked without walking the vault: a file created, deleted
    or renamed changes its folder's mtime, so unchanged folder stamps mean the
    same set of files, and one stat per file catches edits in place."""
    folders = manifest.get("folders")
    if not isinstance(folders, dict) or manifest.get("ignore") != list(ignore):
        return False
    # Paths by concatenation: at 100k entries this runs over thousands of files
    # before every query, and ``os.path.join`` cost as much as the stats.
    base = str(root) + os.sep
    try:
        if not stamps_hold(root, folders):
            return False
        for rel, entry in manifest["files"].items():
            stat = os.lstat(base + rel)
            if stat.st_mtime_ns != entry[0] or stat.st_size != entry[1]:
                return False
    except (OSError, TypeError, IndexError):
        return False
    return True
