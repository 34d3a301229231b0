"""The manifest that vouches for the index: ``.memd/index/manifest.json``.

Per indexed file it keeps a row (mtime, size, content hash, record count, and
the source places the file's entries name), and the mtime of every folder the
vault walk enters; with the schema version, the backend that built the index,
its record count and the vault's ignore patterns. ``memd.index.store`` reads
it before every query and writes it after every index change; anything here
that does not match (another version, another backend, a damaged file) makes
the index untrustworthy, and the store rebuilds it from the files.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from memd.core.atomic import atomic_write
from memd.core.layout import classify
from memd.index.citations import held_in
from memd.index.store_vectors import Stamp, file_stamp
from memd.vault.vault import RACY_SECONDS

SCHEMA_VERSION = 9  # 9: a block's seqs listed with commas; 8: the prose among entries; 7: cited places
# Parsed manifests by path, with the stamp they were read at.
_MANIFESTS: dict[str, tuple[Stamp, dict[str, Any]]] = {}


def load(path: Path, engine: str) -> dict[str, Any] | None:
    """The manifest at ``path`` when it vouches for an index built by ``engine``.

    Parsed once per version of the file in this process (a long-lived reader
    checks freshness before every query). The parsed value is shared: callers
    copy before changing it."""
    key = str(path)
    version = file_stamp(path)
    if version is None:
        return None
    cached = _MANIFESTS.get(key)
    if cached is not None and cached[0] == version:
        data = cached[1]
    else:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != SCHEMA_VERSION:
            return None
        if not isinstance(data.get("files"), dict) or not isinstance(data.get("records"), int):
            return None
        _MANIFESTS[key] = (version, data)
    # Checked on every use, cached or not: the backend may be switched while the manifest stays.
    if data.get("engine") != engine:
        return None  # built by another backend: rebuilt in this one's folder
    return data


def forget() -> None:
    """Parse every manifest again at its next use (what a new process meets)."""
    _MANIFESTS.clear()


def save(
    path: Path, engine: str, files: dict[str, list[Any]], records: int, folders: dict[str, int], ignore: Sequence[str]
) -> None:
    data = {
        "version": SCHEMA_VERSION,
        "engine": engine,
        "records": records,
        "files": files,
        "folders": folders,
        "ignore": list(ignore),
    }
    atomic_write(path, json.dumps(data, separators=(",", ":")))


def stale(manifest: dict[str, Any], files: dict[str, tuple[int, int]]) -> bool:
    """Whether the files' (mtime, size) stats differ from the manifest's, or the files do."""
    known = manifest["files"]
    if known.keys() != files.keys():
        return True
    return any(known[rel][0] != stat[0] or known[rel][1] != stat[1] for rel, stat in files.items())


def row(stat: tuple[int, int], digest: str, records: int, places: Sequence[str] = ()) -> list[Any]:
    """A file's row: mtime, size, digest, record count, and the source places
    the file's entries name (for a source copy: the anchors left out of its records).
    An mtime too recent to trust is kept as -1, so the next check reads the file again."""
    mtime = stat[0]
    if time.time() - mtime / 1e9 < RACY_SECONDS:
        mtime = -1
    return [mtime, stat[1], digest, records, list(places)]


def citation_order(
    files: Mapping[str, tuple[int, int]], rows: Callable[[], Mapping[str, Sequence[Any]]]
) -> Iterator[tuple[str, tuple[int, int], frozenset[str] | None]]:
    """The files to read, each with its stat, source copies last: by then
    ``rows()`` (the manifest rows of the files read so far) says which of a
    copy's places the others' entries name, and each copy comes with those
    anchors (None for a file that is not a source copy)."""
    source = {rel: classify(rel) == "source" for rel in files}
    held: dict[str, frozenset[str]] | None = None
    for rel in sorted(files, key=lambda rel: (source[rel], rel)):
        if not source[rel]:
            yield rel, files[rel], None
            continue
        if held is None:
            held = held_in(rows())
        yield rel, files[rel], held.get(rel, frozenset())
