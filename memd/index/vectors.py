"""Sentence vectors for the records, a derived index beside the lexical one.

``.memd/index/vectors.npz`` holds one unit vector per record worth a
semantic match (every entry, and every heading partition of plain prose: a
partition that holds entries is shown through its entries anyway), the
record ids, the hash of the text each vector was made from, and the content
hash of every file it covers. ``refresh`` compares those file hashes with
the lexical manifest's: only records of files that changed are looked at,
and only texts never embedded before are embedded, so a hand edit re-embeds
the lines it touched and a consolidation that moves entries between files
re-embeds nothing. A file that cannot be read back (damaged, another model,
another format) is set aside and rebuilt from the vault files.

Search is a brute-force product of the query vector with the whole matrix:
0.3 ms at 10k records, 40 ms at 100k (memory-bound: 154 MB of float32 per
query). Past ~50k records an approximate nearest-neighbour index is the next
step; the file format would not change.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import atomic_write
from .records import Record

FORMAT = 1
FILE_NAME = "vectors.npz"
# The most characters of a record given to the model: it reads 256 tokens at
# most, and a 40-line prose partition is cut there anyway.
TEXT_CHARS = 1500
ReadRecords = Callable[[str], list[Record]]


def wants_vector(record: Record) -> bool:
    return record.kind == "entry" or not record.seqs


def vector_text(record: Record) -> str:
    """What the model reads for a record: the text, after its heading for a partition."""
    text = record.text if record.kind == "entry" else "\n".join([*record.headings[-1:], record.text])
    return text[:TEXT_CHARS]


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


@dataclass(frozen=True)
class RefreshReport:
    embedded: int  # texts run through the model
    reused: int  # vectors kept from before
    records: int
    rebuilt: bool  # the stored vectors could not be used at all


class VectorIndex:
    """The stored vectors of one vault for one model."""

    def __init__(self, path: Path, model: str, dim: int) -> None:
        self.path = path
        self.model = model
        self.dim = dim
        self.rids: list[str] = []
        self.keys: list[bytes] = []
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        self.files: dict[str, str] = {}
        self.damaged = False
        self._row: dict[str, int] = {}

    # -- reading and writing ------------------------------------------------
    @classmethod
    def load(cls, path: Path, model: str, dim: int) -> VectorIndex:
        """The stored vectors; empty (and ``damaged`` when a file was there) if unusable."""
        index = cls(path, model, dim)
        if not path.exists():
            return index
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"][()]))
                rids = [str(rid) for rid in data["rids"]]
                keys = [bytes(key) for key in data["keys"]]
                matrix = np.asarray(data["vectors"], dtype=np.float32)
            files = meta["files"]
            if (
                meta.get("format") != FORMAT
                or meta.get("model") != model
                or not isinstance(files, dict)
                or matrix.shape != (len(rids), dim)
                or len(keys) != len(rids)
                or not np.isfinite(matrix).all()
            ):
                raise ValueError("stored vectors do not match")
        except Exception:  # numpy, zipfile and json each raise their own kinds on a damaged file
            index.damaged = True
            return index
        index.rids, index.keys, index.matrix = rids, keys, matrix
        index.files = {str(rel): str(digest) for rel, digest in files.items()}
        index._row = {rid: row for row, rid in enumerate(rids)}
        return index

    def save(self) -> None:
        buffer = io.BytesIO()
        meta = {"format": FORMAT, "model": self.model, "files": self.files}
        np.savez(
            buffer,
            meta=np.array(json.dumps(meta)),
            rids=np.array(self.rids, dtype=str) if self.rids else np.zeros(0, dtype="<U1"),
            keys=np.array(self.keys, dtype="S20") if self.keys else np.zeros(0, dtype="S20"),
            vectors=self.matrix.astype(np.float16),
        )
        atomic_write(self.path, buffer.getvalue())

    # -- keeping in step ------------------------------------------------------
    def stale(self, digests: Mapping[str, str]) -> bool:
        return self.damaged or self.files != dict(digests)

    def refresh(
        self,
        digests: Mapping[str, str],
        read: ReadRecords,
        embed: Callable[[Sequence[str]], Any],
        known: Mapping[str, list[Record]] | None = None,
    ) -> RefreshReport:
        """Bring the vectors in step with files whose content hashes are ``digests``.

        ``read(rel)`` gives a file's records; ``known`` may already hold them
        for files just re-read by the lexical index."""
        known = known or {}
        rebuilt = self.damaged
        changed = [rel for rel, digest in digests.items() if self.files.get(rel) != digest]
        gone = {rel for rel in self.files if rel not in digests} | set(changed)
        by_key = {key: row for row, key in enumerate(self.keys)}
        keep = [row for row, rid in enumerate(self.rids) if _path_of(rid) not in gone]
        rids = [self.rids[row] for row in keep]
        keys = [self.keys[row] for row in keep]
        blocks = [self.matrix[keep]]
        new_texts: dict[bytes, str] = {}
        added_rids: list[str] = []
        added_keys: list[bytes] = []
        for rel in changed:
            records = known[rel] if rel in known else read(rel)
            for record in records:
                if not wants_vector(record):
                    continue
                text = vector_text(record)
                key = text_key(text)
                if key not in by_key:
                    new_texts.setdefault(key, text)
                added_rids.append(record.rid)
                added_keys.append(key)
        fresh_keys = list(new_texts)
        fresh = embed([new_texts[key] for key in fresh_keys]) if fresh_keys else np.zeros((0, self.dim), np.float32)
        fresh_row = {key: row for row, key in enumerate(fresh_keys)}
        reused = 0
        rows = np.zeros((len(added_keys), self.dim), dtype=np.float32)
        for i, key in enumerate(added_keys):
            if key in fresh_row:
                rows[i] = fresh[fresh_row[key]]
            else:
                rows[i] = self.matrix[by_key[key]]
                reused += 1
        blocks.append(rows)
        self.rids = rids + added_rids
        self.keys = keys + added_keys
        self.matrix = np.ascontiguousarray(np.concatenate(blocks).astype(np.float32))
        self.files = dict(digests)
        self.damaged = False
        self._row = {rid: row for row, rid in enumerate(self.rids)}
        return RefreshReport(len(fresh_keys), reused, len(self.rids), rebuilt)

    # -- searching ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.rids)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every stored record to ``query`` (a unit vector), by row."""
        return self.matrix @ query.astype(np.float32)

    def row(self, rid: str) -> int | None:
        return self._row.get(rid)


def _path_of(rid: str) -> str:
    return rid.rsplit("#", 1)[0]
