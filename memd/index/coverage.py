"""What the stored vectors cover, for ``memd status``.

Read from ``vectors/log.json`` when it names the base (a build or edits
since the last compaction: it counts, per file, the records with a vector
and those that want one), else from the two small members of
``vectors.npz`` (the record ids' array header and the metadata), with
``zipfile`` alone: status imports no numpy, no search engine and no model.
A file that cannot be read this way counts as no vectors (the next search
rebuilds a damaged one anyway).
"""

from __future__ import annotations

import ast
import json
import zipfile
from pathlib import Path
from typing import Any

FILE_NAME = "vectors.npz"  # memd.index.vectors.BASE (that module imports numpy)
LOG_NAME = "vectors/log.json"  # memd.index.vectors.SEGMENTS / LOG
MAGIC = b"\x93NUMPY"
HEADER_BYTES = 65_536  # a .npy header of these arrays is under a hundred bytes


def _npy(archive: zipfile.ZipFile, member: str) -> tuple[dict[str, Any], bytes]:
    """The header of one ``.npy`` member, and its data for the metadata."""
    with archive.open(member) as handle:
        start = handle.read(10)
        if start[:6] != MAGIC:
            raise ValueError(f"{member}: not a .npy array")
        size = int.from_bytes(start[8:10] if start[6] == 1 else start[8:10] + handle.read(2), "little")
        if size > HEADER_BYTES:
            raise ValueError(f"{member}: header too large")
        header = ast.literal_eval(handle.read(size).decode("latin-1"))
        if not isinstance(header, dict):
            raise ValueError(f"{member}: no header")
        data = handle.read() if member == "meta.npy" else b""  # a string: the format, model and files' hashes
    return header, data


def stored_vectors(index_dir: Path) -> tuple[int, dict[str, tuple[str, int, int]]] | None:
    """(how many record vectors, per file: its content hash, records with a vector,
    records that want one), or None. The per-file counts are -1 where only the base is read."""
    try:
        with zipfile.ZipFile(index_dir / FILE_NAME) as archive:
            rids, _ = _npy(archive, "rids.npy")
            meta_header, data = _npy(archive, "meta.npy")
        descr = str(meta_header["descr"])
        if not descr.startswith("<U"):
            return None
        meta = json.loads(data[: 4 * int(descr[2:])].decode("utf-32-le").rstrip("\0"))
        files = meta["files"]
        count = int(rids["shape"][0])
        ident = str(meta.get("id", ""))
    except FileNotFoundError:
        count, files, ident = 0, {}, ""
    except (OSError, ValueError, KeyError, IndexError, TypeError, SyntaxError, zipfile.BadZipFile):
        return None
    if not isinstance(files, dict):
        return None
    logged = _logged(index_dir, ident)
    if logged is not None:
        return sum(laid for _, laid, _ in logged.values()), logged
    if not (index_dir / FILE_NAME).exists():
        return None
    return count, {str(rel): (str(digest), -1, -1) for rel, digest in files.items()}


def _logged(index_dir: Path, ident: str) -> dict[str, tuple[str, int, int]] | None:
    """The log's files, when it is the log of this base."""
    try:
        log = json.loads((index_dir / LOG_NAME).read_text(encoding="utf-8"))
        if not isinstance(log, dict) or log.get("id") != ident or not isinstance(log.get("files"), dict):
            return None
        return {str(rel): (str(s[0]), int(s[2]), int(s[3])) for rel, s in log["files"].items()}
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def describe_vectors(index_dir: Path, digests: dict[str, str]) -> str:
    """A clause for ``memd status``: how many vectors, and how many indexed files (whose
    content hashes are ``digests``) have none yet."""
    stored = stored_vectors(index_dir)
    if stored is None:
        return "no vectors yet (embedded at the next search or by the daemon)"
    count, files = stored
    current = {rel: files[rel] for rel, digest in digests.items() if rel in files and files[rel][0] == digest}
    wanted = sum(state[2] for state in current.values())
    if wanted > count and all(state[2] >= 0 for state in current.values()):
        # A build under way (or stopped): counted in records.
        return f"vectors {count:,} / {wanted:,}, words-only search until done (memd reindex finishes it)"
    behind = sum(1 for rel in digests if rel not in current)
    if not behind:
        return f"{count:,} vectors"
    waiting = f"{behind:,} of {len(digests):,} files not embedded yet"
    return f"{count:,} vectors, {waiting} (at the next search or by the daemon)"
