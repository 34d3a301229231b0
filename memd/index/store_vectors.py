"""The index store's vectors: the embedding model and the stored vectors,
loaded once and followed when another process rewrites them, and brought in
step with the lexical index after each sync (``IndexStore`` keeps both)."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.core.layout import classify
from memd.index.records import Record

if TYPE_CHECKING:
    from memd.index.sync_report import SyncReport
    from memd.vault.vault import Vault

Progress = Callable[[int, int], None]
Stamp = tuple[int, int, int, int]  # a file's (inode, mtime, ctime, size): any rewrite changes it


class VectorSide:
    """What ``IndexStore`` does with vectors; its attributes are set by ``IndexStore.__init__``."""

    vault: Vault
    folder: Path
    embedding: str
    vectors_path: Path
    vectors_log: Path
    semantic_off: str | None
    words_only: bool
    vectors_behind: tuple[int, int] | None
    vectors_rate: float | None
    _embedder: Any
    _vectors: Any
    _semantic_checked: bool
    _just_read: dict[str, list[Record]]
    _kept: Any  # consolidation's sentence vectors (``Meaning``) a reindex reuses over its slices
    _vectors_seen: tuple[Stamp | None, Stamp | None] | None
    _stale_seen: tuple[dict[str, Any], Any, int, bool] | None = None

    def _load_manifest(self) -> dict[str, Any] | None:
        raise NotImplementedError

    def _read(self, rel: str, held: frozenset[str] = frozenset()) -> tuple[str, list[Record]]:
        raise NotImplementedError

    def _semantic(self) -> bool:
        """Load the embedding model and stored vectors once; False when lexical only."""
        if not self._semantic_checked:
            self._semantic_checked = True
            from memd.index.embedding import load_embedder
            from memd.index.model_files import ModelUnavailable

            try:
                self._embedder = load_embedder(self.embedding)
            except ModelUnavailable as err:
                self.semantic_off = str(err)
                return False
            from memd.index.embedding import one_blas_thread_from_now

            one_blas_thread_from_now()
        if self._embedder is not None:
            self._load_vectors()
        return self._embedder is not None

    def _load_vectors(self) -> None:
        """The stored vectors, read again only when their files changed since this store read or wrote them."""
        seen = self._vectors_stamp()  # before reading: a write meanwhile is seen next time
        if self._vectors is None or seen != self._vectors_seen:
            from memd.index.vectors import VectorIndex

            before = self._vectors
            self._vectors = VectorIndex.load(self.folder, self._embedder.name, self._embedder.dim)
            if before is not None:
                self._vectors.carry_over(before)
            self._vectors_seen = seen

    def _laid(self) -> tuple[int, int] | None:
        """(records with a vector, records that want one) as the stored vectors say now,
        read without the index lock (a writer is building them); None when complete."""
        if not self._semantic() or self._vectors is None:
            return None
        done, wanted = self._vectors.coverage()
        return (done, wanted) if done < wanted or self._vectors.damaged else None

    def _vectors_stamp(self) -> tuple[Stamp | None, Stamp | None]:
        return file_stamp(self.vectors_path), file_stamp(self.vectors_log)

    def _vectors_stale(self, manifest: dict[str, Any]) -> bool:
        if self.words_only or not self._semantic():
            return False
        # Asked before every query; comparing 2,000 files' hashes cost about 1 ms at
        # 100k. The answer holds while the manifest and the vectors are the same objects
        # (both are read anew when their files change) and the vectors did not move.
        seen = self._stale_seen
        vectors = self._vectors
        if seen is not None and seen[0] is manifest and seen[1] is vectors and seen[2] == vectors.assembled:
            return seen[3]
        stale = bool(vectors.stale(_digests(manifest)))
        self._stale_seen = (manifest, vectors, vectors.assembled, stale)
        return stale

    def _sync_vectors(
        self, report: SyncReport, started: float, progress: Progress | None = None, seconds: float | None = None
    ) -> SyncReport:
        """Called under the index lock, after the lexical index is in step."""
        known, self._just_read = self._just_read, {}
        self.vectors_behind = None
        if self.words_only or not self._semantic():
            return report
        manifest = self._load_manifest()
        if manifest is None:
            return report
        digests = _digests(manifest)
        if not self._vectors.stale(digests):
            return report
        rows = manifest["files"]

        def read(rel: str) -> list[Record]:
            # A source copy is read leaving out what the manifest says its records leave out.
            row = rows.get(rel)
            held = frozenset(row[4]) if row is not None and len(row) > 4 and classify(rel) == "source" else frozenset()
            return self._read_or_empty(rel, held)

        if seconds is not None and seconds <= 0:
            # A reader that must not wait: nothing embedded, but what is left is counted.
            try:
                self._vectors.register(digests, read, known)
            except BaseException:
                self._vectors = self._vectors_seen = None
                raise
            self._vectors_seen = self._vectors_stamp()
            done_, wanted = self._vectors.coverage()
            self.vectors_behind = (done_, max(done_, wanted))
            return report
        from memd.index.embedding import embed_many
        from memd.index.meaning import Meaning

        def embed(texts: Sequence[str]) -> Any:
            return embed_many(self._embedder, texts)

        if self.vault.config.grouping == "meaning":
            # What consolidation embedded (the same texts, mostly) is not embedded again; a
            # reindex reads it once for all its slices (``_kept``), a sync for itself.
            kept = self._kept or Meaning(self.vault.config.embedding, self.folder)
            embed = functools.partial(kept.reuse, embed=embed)
        try:
            done = self._vectors.refresh(
                digests,
                read,
                embed,
                known,
                progress,
                seconds,
            )
        except BaseException:
            # A stopped build (Ctrl-C, a full disk) keeps the chunks it wrote; this
            # store reads them back rather than trust what it held mid-write.
            self._vectors = self._vectors_seen = None
            raise
        self._vectors_seen = self._vectors_stamp()  # under the index lock: no other writer since
        if not done.complete:
            self.vectors_behind = (done.records, done.wanted)
        if done.laid and done.wall > 0:
            self.vectors_rate = done.laid / done.wall
        return replace(report, embedded=done.embedded, seconds=time.monotonic() - started)

    def _read_or_empty(self, rel: str, held: frozenset[str]) -> list[Record]:
        try:
            return self._read(rel, held)[1]
        except OSError:
            return []


def file_stamp(path: Path) -> Stamp | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)


def _digests(manifest: dict[str, Any]) -> dict[str, str]:
    return {rel: str(entry[2]) for rel, entry in manifest["files"].items()}
