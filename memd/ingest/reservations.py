"""Where a new source copy goes, held while its import runs.

A copy's path (``sources/YYYY/MM/<slug>.md``) is reserved in ``.memd/reserved/``
before the import appends any entry, so two imports running at once never
pick the same one. The reservation also records how far its import got: an
import stopped before its copy was written (Ctrl-C, a crash) is resumed by
the next import of the same input, at the same path its first entries link to.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from memd.vault.vault import Vault

# A reservation older than this was left by a process that died mid-import.
_STALE_RESERVATION = 24 * 3600.0


def reserve_path(vault: Vault, name: str, stamp: str) -> str:
    """A fresh ``sources/YYYY/MM/<slug>.md`` for an input called ``name``.

    The name is held (``.memd/reserved/``) until ``release`` so that two
    imports running at once never pick the same copy; ``name`` must already
    be redacted (a key in a file name must not become a path).
    """
    from memd.core.redact import find_secrets
    from memd.engine.text import slugify

    year, month = stamp[:4], stamp[5:7]
    slug = slugify(Path(name).stem, max_length=60) or "source"
    if find_secrets(slug) or find_secrets(name):
        # Redaction missed it in the name, or the slug (lowercased, cut at 60) made one:
        # a path is committed for good, so it is named for none of its words.
        slug = "source"
    folder = vault.sources_dir / year / month
    held = vault.meta_dir / "reserved"
    held.mkdir(parents=True, exist_ok=True)
    _clean_reservations(held)
    n = 1
    while True:
        candidate = f"{slug}.md" if n == 1 else f"{slug}-{n}.md"
        n += 1
        rel = f"sources/{year}/{month}/{candidate}"
        if (folder / candidate).exists() or (folder / candidate).is_symlink():
            continue
        try:
            os.close(os.open(held / _reservation(rel), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        return rel


def release(vault: Vault, rel: str) -> None:
    (vault.meta_dir / "reserved" / _reservation(rel)).unlink(missing_ok=True)


def mark_progress(vault: Vault, rel: str, digest: str, done: int) -> None:
    """Record in ``rel``'s reservation that the import of the input with SHA-256
    ``digest`` has appended the entries of its first ``done`` units: an import
    stopped before its copy is written (Ctrl-C, a crash) resumes from there."""
    from memd.core.atomic import atomic_write

    record = json.dumps({"rel": rel, "sha256": digest, "done": done})
    atomic_write(vault.meta_dir / "reserved" / _reservation(rel), record)


def interrupted(vault: Vault, digest: str) -> tuple[str, int] | None:
    """The reserved copy path of an import of the input ``digest`` that was stopped
    before its copy was written, and the units it had appended; None if none."""
    folder = vault.meta_dir / "reserved"
    if not folder.is_dir():
        return None
    for entry in sorted(folder.iterdir()):
        try:
            record = json.loads(entry.read_text(encoding="utf-8") or "{}")
            mine = record.get("sha256") == digest and entry.name == _reservation(record["rel"])
            if mine and not (vault.root / record["rel"]).exists():
                return str(record["rel"]), int(record["done"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue  # an empty reservation (an import that appended nothing yet) or damage
    return None


def _reservation(rel: str) -> str:
    return hashlib.sha1(rel.encode("utf-8")).hexdigest()


def _clean_reservations(folder: Path) -> None:
    cutoff = time.time() - _STALE_RESERVATION
    for entry in folder.iterdir():
        try:
            if entry.stat().st_mtime < cutoff:
                entry.unlink()
        except OSError:
            continue
