"""One file of stored sentence vectors (``memd.index.vectors`` keeps a vault's in several).

A segment holds one unit vector per record worth a semantic match (every
entry, and every heading partition of plain prose: a partition that holds
entries is shown through its entries anyway), the record ids, the hash of
the text each vector was made from, and, for a record of several sentences
(``memd.index.sentences``), one vector per sentence with the row of the
record each belongs to.

The matrices are stored as float32 in an uncompressed ``.npz`` member whose
data is aligned, so a process maps it from the file instead of reading and
converting it: loading 100k vectors costs the record ids and one validating
pass, not a copy, and processes share the pages. Formats 1 (float16) and 2
(no sentences) are still read; their vectors are reused, never trusted as
complete.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from memd.core.atomic import atomic_write
from memd.index.records import Record

# 3: sentence vectors beside the records'. Formats 1 (float16) and 2 are still
# read: their record vectors are kept and the sentences embedded at the next sync.
FORMAT = 3
READABLE_FORMATS = (1, 2, FORMAT)
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


class Segment:
    """One file of stored vectors: record rows, their sentence rows, and the text hashes."""

    def __init__(self, path: Path, model: str, dim: int) -> None:
        self.path = path
        self.model = model
        self.dim = dim
        self.rids: list[str] = []
        self.matrix = np.zeros((0, dim), dtype=np.float32)
        # Sentence vectors, grouped by the record row each belongs to (ascending).
        self.parts = np.zeros((0, dim), dtype=np.float32)
        self.part_rows = np.zeros(0, dtype=np.int32)
        self.part_keys: list[bytes] = []
        self.files: dict[str, str] = {}
        self.damaged = False
        self.ident = ""  # names this file's version: the log of later segments is kept against it
        self.outdated = False  # stored in a form that cannot be mapped: rewritten at the next sync
        self.stamp: tuple[int, int, int] | None = None  # the file's (inode, mtime, size) when read
        self._keys: list[bytes] | None = []
        self._stored_keys: Any = None  # the file's text hashes, turned into ``keys`` when first needed
        self._row: dict[str, int] | None = {}

    # -- reading and writing ------------------------------------------------
    @classmethod
    def load(cls, path: Path, model: str, dim: int) -> Segment:
        """The stored vectors; empty (and ``damaged`` when a file was there) if unusable.

        The matrix is mapped from the file, not read: only the record ids are
        decoded now, the text hashes when a sync needs them."""
        index = cls(path, model, dim)
        try:
            stat = os.stat(path)  # before reading: a file replaced meanwhile gets another stamp next time
        except OSError:
            return index
        try:
            with np.load(path, allow_pickle=False) as data:
                meta = json.loads(str(data["meta"][()]))
                stored_rids = data["rids"]
                keys = data["keys"]
                version = meta.get("format")
                matrix = _mapped(path, data.zip, "vectors.npy") if version == FORMAT else None
                mapped = matrix is not None
                if matrix is None:
                    matrix = np.asarray(data["vectors"], dtype=np.float32)
                if version == FORMAT:
                    parts = _mapped(path, data.zip, "parts.npy")
                    part_rows, part_keys = data["part_rows"], data["part_keys"]
                    mapped = mapped and parts is not None
                    if parts is None:
                        parts = np.asarray(data["parts"], dtype=np.float32)
                else:
                    parts = np.zeros((0, dim), dtype=np.float32)
                    part_rows, part_keys = np.zeros(0, dtype=np.int32), np.zeros(0, dtype="S20")
            files = meta["files"]
            if (
                version not in READABLE_FORMATS
                or meta.get("model") != model
                or not isinstance(files, dict)
                or stored_rids.dtype.kind != "U"
                or matrix.shape != (len(stored_rids), dim)
                or keys.shape != (len(stored_rids),)
                or keys.dtype != np.dtype("S20")
                or not _parts_fit(parts, part_rows, part_keys, len(stored_rids), dim)
                # One product reads every value: a NaN or an infinity anywhere leaves its row's sum not finite.
                or not np.isfinite(matrix @ np.ones(dim, dtype=np.float32)).all()
                or not np.isfinite(parts @ np.ones(dim, dtype=np.float32)).all()
            ):
                raise ValueError("stored vectors do not match")
        except Exception:  # numpy, zipfile and json each raise their own kinds on a damaged file
            index.damaged = True
            return index
        index.rids, index.matrix = stored_rids.tolist(), matrix
        index._keys, index._stored_keys, index._row = None, keys, None
        index.parts, index.part_rows, index.part_keys = parts, part_rows.astype(np.int32), [_key(k) for k in part_keys]
        index.files = {str(rel): str(digest) for rel, digest in files.items()}
        index.ident = str(meta.get("id", ""))
        if version != FORMAT:
            index.files = {}  # every file is read again: record vectors are reused, sentences embedded
        index.outdated = not mapped  # an older format (or an unaligned matrix): rewritten at the next sync
        index.stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        return index

    @property
    def keys(self) -> list[bytes]:
        """The hash of the text each row was embedded from."""
        if self._keys is None:
            self._keys = [_key(key) for key in self._stored_keys]
            self._stored_keys = None
        return self._keys

    def save(self, path: Path | None = None) -> None:
        buffer = io.BytesIO()
        meta = {"format": FORMAT, "model": self.model, "files": self.files, "id": self.ident}
        members = {
            "meta": np.array(json.dumps(meta)),
            "rids": np.array(self.rids, dtype=str) if self.rids else np.zeros(0, dtype="<U1"),
            "keys": np.array(self.keys, dtype="S20") if self.keys else np.zeros(0, dtype="S20"),
            "part_rows": self.part_rows.astype(np.int32),
            "part_keys": np.array(self.part_keys, dtype="S20") if self.part_keys else np.zeros(0, dtype="S20"),
        }
        # What np.savez writes, but with the matrix last and its data aligned so it can be mapped.
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
            for name, array in members.items():
                archive.writestr(f"{name}.npy", _npy(array))
            archive.writestr(_aligned("vectors.npy", buffer.tell()), _npy(self.matrix.astype(np.float32)))
            archive.writestr(_aligned("parts.npy", buffer.tell()), _npy(self.parts.astype(np.float32)))
        atomic_write(path or self.path, buffer.getvalue())

    # -- searching ------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.rids)

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of every stored record to ``query`` (a unit vector), by row."""
        return self.matrix @ query.astype(np.float32, copy=False)

    def best_parts(self, rows: np.ndarray, query: np.ndarray) -> np.ndarray:
        """For each record row, its closest sentence's similarity to ``query``
        (NaN for a record of one sentence): one product over those sentences only."""
        rows = np.asarray(rows, dtype=np.int64)
        best = np.full(len(rows), np.nan, dtype=np.float32)
        starts = np.searchsorted(self.part_rows, rows)
        counts = np.searchsorted(self.part_rows, rows + 1) - starts
        has = counts > 0
        if not has.any():
            return best
        counts, starts = counts[has], starts[has]
        offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
        picked = np.repeat(starts - offsets, counts) + np.arange(int(counts.sum()))
        similarity = self.parts[picked] @ query.astype(np.float32, copy=False)
        best[has] = np.maximum.reduceat(similarity, offsets)
        return best

    def row(self, rid: str) -> int | None:
        if self._row is None:
            self._row = {rid: row for row, rid in enumerate(self.rids)}
        return self._row.get(rid)


def _key(stored: Any) -> bytes:
    """A text hash as stored: numpy's S20 drops a hash's trailing zero bytes, which
    left one text in 256 never matching its own vector (embedded again at every change)."""
    return bytes(stored).ljust(20, b"\0")


def _parts_fit(parts: np.ndarray, rows: np.ndarray, keys: np.ndarray, records: int, dim: int) -> bool:
    """Sentence vectors that belong to stored records, grouped by record row."""
    return (
        parts.shape == (len(rows), dim)
        and keys.shape == rows.shape
        and keys.dtype == np.dtype("S20")
        and rows.dtype.kind == "i"
        and bool(np.all(rows[1:] >= rows[:-1]))
        and (len(rows) == 0 or (int(rows[0]) >= 0 and int(rows[-1]) < records))
    )


def path_of(rid: str) -> str:
    """The vault-relative file of a record id (``topics/x.md#L12``)."""
    return rid.rsplit("#", 1)[0]


ALIGN = 64  # bytes; a .npy header is padded to a multiple of this too


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, array, allow_pickle=False)
    return out.getvalue()


def _aligned(name: str, offset: int) -> zipfile.ZipInfo:
    """An archive member to be written at ``offset`` whose data starts on an ``ALIGN``
    boundary: its local header's extra field is padding (as zipalign does)."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    start = offset + 30 + len(name.encode("utf-8")) + 4  # the local header, the name, the padding's own header
    pad = -start % ALIGN
    info.extra = struct.pack("<HH", 0xD935, pad) + bytes(pad)
    return info


def _mapped(path: Path, archive: zipfile.ZipFile, member: str) -> np.ndarray | None:
    """A read-only view of an array stored uncompressed in the ``.npz`` at ``path``,
    mapped from the file; None when the member is compressed or not plain float32."""
    info = archive.getinfo(member)
    if info.compress_type != zipfile.ZIP_STORED:
        return None
    with path.open("rb") as handle:
        handle.seek(info.header_offset)
        header = handle.read(30)  # the local file header: its name and extra field lengths sit at 26
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise ValueError(f"{member}: no local header")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            return None
        offset = handle.tell()
    if fortran or dtype != np.dtype("<f4") or len(shape) != 2 or offset % ALIGN:
        return None  # read and copied instead: BLAS works only on aligned data
    if offset - (info.header_offset + 30 + name_length + extra_length) + shape[0] * shape[1] * 4 != info.file_size:
        raise ValueError(f"{member}: size does not match its header")
    if shape[0] == 0:
        return np.zeros(shape, dtype=np.float32)
    return np.memmap(path, dtype=np.float32, mode="r", offset=offset, shape=shape).view(np.ndarray)
