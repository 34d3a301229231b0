"""Keeping the index in step with the files, whoever wrote them.

``.memd/index/manifest.json`` (``memd.index.manifest``) records, per indexed file, its (mtime, size)
and content hash, and the mtime of every folder the vault walk enters.
Before every query the index is checked against the files: when no folder's
mtime moved (no file was created, deleted or renamed) one stat per known file
suffices; otherwise the vault is walked. Files whose stat changed are hashed,
and only those whose content changed are re-indexed.
Anything that makes the index untrustworthy (no manifest, another schema
version, a record count that disagrees, a folder Whoosh cannot open) triggers
a full rebuild from the files, so a stale index is never served.

Index writes take ``.memd/index/lock`` rather than the vault lock, so a
search never waits for a long consolidation and vice versa.

A store may live as long as its process (``Memory`` keeps one): the backend
and the vectors stay open between queries, and each ``sync`` costs the stats
above. When another process rewrote the manifest or the vectors since this
store last read or wrote them (the daemon indexing a hand edit, a
``memd reindex``), the store opens them afresh, as a new reader would.

When the vault's embedding model is installed, ``vectors.npz`` and the
segments under ``vectors/`` beside the lexical index hold sentence vectors
(``memd.index.vectors``); each sync brings them in step with the manifest's
file hashes, embedding only texts not seen before, chunk by chunk. A sync
given ``seconds`` embeds for about that much CPU time and leaves the rest:
the search then ranks by words and the vectors there are, and
``vectors_note`` says so. Embedding happens here, at index time, never when
an entry is appended. Without the model the index is lexical only.
"""

from __future__ import annotations

import functools
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from memd.core.atomic import _describe, own_folder
from memd.core.errors import LockTimeout, MemdError, VaultError
from memd.index import manifest as manifests
from memd.index.base import Backend
from memd.index.citations import cited
from memd.index.freshness import Scan, scan
from memd.index.records import Record, indexed_records
from memd.index.store_vectors import Stamp, VectorSide, file_stamp
from memd.index.sync_report import Cumulative, SyncReport
from memd.index.watch import Freshness
from memd.vault.vault import Vault

Progress = Callable[[int, int], None]
# CPU seconds of embedding `memd reindex` does under the index lock before it lets a
# waiting writer in (a search whose files changed, the daemon); a search of unchanged
# files never waits. Each slice plans again, from the records read once (``rebuild``).
REBUILD_SLICE = 10.0


def _one_line_errors(method: Callable[..., SyncReport]) -> Callable[..., SyncReport]:
    """A full disk, a file-size limit or a file where the index folder should be
    is one ``VaultError`` naming the index, never a traceback; the vault's own
    files are untouched (the index is derived: ARCHITECTURE.md §4.6)."""

    @functools.wraps(method)
    def wrapper(self: IndexStore, *args: Any, **kwargs: Any) -> SyncReport:
        try:
            return method(self, *args, **kwargs)
        except OSError as err:
            self.close()
            raise VaultError(
                f"{self.folder}: the search index cannot be written ({_describe(err)}); the vault's files are "
                f"unchanged (free some space, or remove {self.folder} and run `memd reindex`)"
            ) from None

    return wrapper


class IndexStore(VectorSide):
    """The vault's index folder: a backend plus the manifest that vouches for it."""

    def __init__(self, vault: Vault, backend: str | None = None) -> None:
        from memd.index.backends import require, resolve

        self.vault = vault
        config = vault.config
        # Which engine (memd/index/backends.py): the vault's [index] backend unless named.
        self.backend_name = resolve(backend or config.index_backend)
        require(self.backend_name)
        self._named_backend = backend
        self.embedding = config.embedding
        self.folder = own_folder(vault.index_dir)  # derived, but never written through a link
        self.manifest_path = self.folder / "manifest.json"
        self.engine_dir = own_folder(self.folder / self.backend_name)
        self.vectors_path = self.folder / "vectors.npz"
        self.vectors_log = self.folder / "vectors" / "log.json"
        self._backend: Backend | None = None
        self._embedder: Any = None
        self._vectors: Any = None  # VectorIndex once loaded
        self.semantic_off: str | None = None  # why retrieval is lexical only (None: hybrid)
        # Set for one search that asks for words alone (MEMD_EMBEDDING=none in the asking process):
        # nothing is embedded or loaded for it, and it is ranked by the lexical backend.
        self.words_only = False
        self._semantic_checked = False
        self._just_read: dict[str, list[Record]] = {}
        self._kept: Any = None
        # The manifest and vectors files as this store last read or wrote them: another
        # stamp means another process wrote since, and what is held open is stale.
        self._manifest_seen: Stamp | None = None
        self._vectors_seen: tuple[Stamp | None, Stamp | None] | None = None
        # Set by a sync that left vectors to embed: (records with a vector, records that want one).
        self.vectors_behind: tuple[int, int] | None = None
        self.vectors_rate: float | None = None  # records embedded per second by the last sync that embedded
        self.vectors_building = False  # the last sync found a writer building the vectors and went on
        self._freshness = Freshness(vault.root)  # the stats before each query, or a quiet watch

    # -- public -------------------------------------------------------------
    def backend(self) -> Backend:
        """The backend ``retrieve`` queries: lexical, plus vectors when the model is installed."""
        if self._backend is None:
            self.sync()
        assert self._backend is not None
        if not self.words_only and self._embedder is not None and self._vectors is not None:
            from memd.index.hybrid import HybridBackend

            return HybridBackend(self._backend, self._vectors, self._embedder)
        return self._backend

    def settings_changed(self) -> bool:
        """Whether the vault's settings now name another backend or embedding model
        than this store was opened with (a long-lived process sees config edits)."""
        config = self.vault.config
        from memd.index.backends import resolve

        backend = self.backend_name if self._named_backend else resolve(config.index_backend)
        return backend != self.backend_name or config.embedding != self.embedding

    @_one_line_errors
    def sync(
        self, progress: Progress | None = None, *, embedding: Progress | None = None, seconds: float | None = None
    ) -> SyncReport:
        """Bring the index up to date with the files (cheap when nothing changed).

        ``progress`` counts files read, ``embedding`` records embedded; with
        ``seconds``, a budget of CPU time for the whole sync: the words are
        always indexed, and vectors are embedded for what that left of it, at
        least one slice (``vectors_behind`` then says how far they are), so a
        first search after a large import answers from words without a wait for both."""
        started = time.monotonic()
        cpu = time.process_time()
        self.vectors_behind = None
        self.vectors_building = False  # set when a writer held the lock and this reader went on
        manifest = self._load_manifest()
        self._follow_others()
        if manifest is not None and self._backend is None:
            self._backend = self._open_backend()
            if self._backend is not None and not self._count_matches(manifest):
                manifest = None  # records lost or added behind the manifest's back
        in_step = manifest is not None and self._backend is not None
        if in_step and manifest is not None and self._freshness.unchanged(manifest, self.vault.ignore):
            unchanged_report = SyncReport(False, (), (), manifest["records"], time.monotonic() - started)
            if not self._vectors_stale(manifest):
                return unchanged_report
            # The words are in step; only vectors are behind (a daemon building them, a
            # search that must not wait): no walk of the vault, no manifest written again.
            return self._vectors_only(unchanged_report, started, embedding, seconds)
        found = scan(self.vault)
        if in_step and manifest is not None and not manifests.stale(manifest, found.files):
            report = SyncReport(False, (), (), manifest["records"], time.monotonic() - started)
            stale = self._vectors_stale(manifest)
            if manifest.get("folders") != found.folders or manifest.get("ignore") != list(self.vault.ignore):
                # The same files, but folder stamps moved (a temporary file came and
                # went, or a stamp was too recent to trust): record them, so the next
                # check is the cheap one again (a reader leaves that to the next one
                # when a writer holds the lock).
                try:
                    with self._locked(wait=seconds is None or not stale):
                        if self._load_manifest() is manifest:
                            self._save_manifest(manifest["files"], manifest["records"], found.folders)
                except LockTimeout:
                    pass
            return self._vectors_only(report, started, embedding, seconds) if stale else report
        with self._locked():
            manifest = self._load_manifest()
            self._follow_others()  # a writer may have come between the check above and the lock
            if self._backend is None and manifest is not None:
                self._backend = self._open_backend()
            if manifest is None or self._backend is None or not self._count_matches(manifest):
                report = self._rebuild(found, progress, started)
            else:
                report = self._update(manifest, found, started)
            left = seconds
            if seconds is not None and seconds > 0:  # some progress each time, however long the words took
                left = max(1e-9, seconds - (time.process_time() - cpu))
            return self._sync_vectors(report, started, embedding, left)

    def _vectors_only(
        self, report: SyncReport, started: float, embedding: Progress | None, seconds: float | None
    ) -> SyncReport:
        """``_sync_vectors`` when the words are in step. A reader (``seconds`` given) does
        not wait on a writer building vectors (a reindex, the daemon): it answers from
        the words and the vectors already laid, ``vectors_behind`` saying how far they are."""
        if seconds is None:
            with self._locked():
                return self._sync_vectors(report, started, embedding, seconds)
        try:
            with self._locked(wait=False):
                return self._sync_vectors(report, started, embedding, seconds)
        except LockTimeout:
            self.vectors_behind = self._laid()
            self.vectors_building = True
            return report

    @_one_line_errors
    def rebuild(self, progress: Progress | None = None, *, embedding: Progress | None = None) -> SyncReport:
        """Index every file anew; vectors are kept only for texts that did not change.

        The words are rebuilt under the index lock; the vectors after, a slice of
        ``REBUILD_SLICE`` CPU seconds at a time, each under the lock, so a search
        meanwhile answers from the words and the vectors laid so far."""
        started = time.monotonic()
        with self._locked():
            report = self._rebuild(scan(self.vault), progress, started)
        # Every slice plans from the records the words were indexed from (the files as this
        # rebuild read them), not from the files read again: a slice costs what it embeds.
        read = self._just_read
        counted = Cumulative(embedding) if embedding is not None else None
        if self.vault.config.grouping == "meaning":
            from memd.index.meaning import Meaning

            self._kept = Meaning(self.vault.config.embedding, self.folder)
        try:
            while True:
                self._just_read = read
                with self._locked():
                    report = self._sync_vectors(report, started, counted, REBUILD_SLICE)
                if counted is not None:
                    counted.next_slice()
                if self.vectors_behind is None:
                    return report
        finally:
            self._kept = None  # held for the rebuild only: a long-lived store stays small

    def prepare(self) -> None:
        """Set up now what a store that keeps searching sets up on the way (the files'
        watch, the vectors' first pass), so that no search of the daemon pays for it."""
        self._freshness.prepare()
        self.sync()
        if self._vectors is not None:
            self._vectors.prepare()

    def close(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        self._manifest_seen = None
        self._freshness.close()

    # -- internals ------------------------------------------------------------
    def _follow_others(self) -> None:
        """Let go of the open backend when another process rewrote the manifest
        since this store opened or wrote the index: reopened, it is counted
        against the manifest again, and tantivy's padding totals are read anew
        (a write from stale totals would skew every score). Vectors are
        followed the same way (``_load_vectors``)."""
        if self._backend is not None and file_stamp(self.manifest_path) != self._manifest_seen:
            self.close()

    @contextmanager
    def _locked(self, *, wait: bool = True) -> Iterator[None]:
        """The index lock; ``wait=False``: ``LockTimeout`` at once when another holds it."""
        from memd.core.lock import vault_lock

        self.folder.mkdir(parents=True, exist_ok=True)
        with vault_lock(self.folder / "lock", max(self.vault.config.lock_timeout, 30.0) if wait else 0.0):
            yield

    def _open_backend(self, create: bool = False) -> Backend | None:
        from memd.index.backends import open_backend

        # Stamped before opening: the backend is at least as new as the manifest noted.
        self._manifest_seen = file_stamp(self.manifest_path)
        try:
            return open_backend(self.backend_name, self.engine_dir, create=create)
        except MemdError:
            raise
        except Exception:
            if create:
                raise
            return None  # unreadable or half-written: the caller rebuilds

    def _load_manifest(self) -> dict[str, Any] | None:
        return manifests.load(self.manifest_path, self.backend_name)

    def _count_matches(self, manifest: dict[str, Any]) -> bool:
        assert self._backend is not None
        try:
            return self._backend.count() == manifest["records"]
        except Exception:
            return False

    def _read(self, rel: str, held: frozenset[str] = frozenset()) -> tuple[str, list[Record]]:
        return indexed_records(self.vault.root, rel, held)

    def _rebuild(self, walked: Scan, progress: Progress | None, started: float) -> SyncReport:
        if self._backend is not None:
            self._backend.close()
            self._backend = None
        self.manifest_path.unlink(missing_ok=True)
        from memd.index.backends import BACKENDS

        for name in BACKENDS:  # another backend's folder is stale from now on
            shutil.rmtree(self.folder / name, ignore_errors=True)
        backend = self._open_backend(create=True)
        assert backend is not None
        entries: dict[str, list[Any]] = {}
        records: list[Record] = []
        total = len(walked.files)
        for done, (rel, stat, anchors) in enumerate(manifests.citation_order(walked.files, lambda: entries), start=1):
            try:
                digest, found = self._read(rel, anchors or frozenset())
            except OSError:
                continue
            records.extend(found)
            entries[rel] = manifests.row(stat, digest, len(found), cited(found) if anchors is None else sorted(anchors))
            if progress is not None:
                progress(done, total)
        backend.replace_files((), records)
        self._backend = backend
        self._just_read = _by_path(records)
        self._save_manifest(entries, len(records), walked.folders)
        return SyncReport(True, tuple(sorted(entries)), (), len(records), time.monotonic() - started)

    def _update(self, manifest: dict[str, Any], walked: Scan, started: float) -> SyncReport:
        assert self._backend is not None
        files = walked.files
        known: dict[str, list[Any]] = dict(manifest["files"])
        removed = [rel for rel in known if rel not in files]
        changed: list[str] = []
        records: list[Record] = []

        def rows() -> dict[str, list[Any]]:  # asked when the first source copy comes, after every other file
            return {rel: row for rel, row in known.items() if rel not in removed}

        for rel, stat, anchors in manifests.citation_order(files, rows):
            old = known.get(rel)
            # A source copy whose named places changed is read again, though its bytes did not.
            same = old is not None and (anchors is None or sorted(anchors) == (old[4] if len(old) > 4 else []))
            if old is not None and same and old[0] == stat[0] and old[1] == stat[1]:
                continue
            try:
                digest, found = self._read(rel, anchors or frozenset())
            except OSError:
                removed.append(rel)
                continue
            places = cited(found) if anchors is None else sorted(anchors)
            if old is not None and old[2] == digest:
                known[rel] = manifests.row(stat, digest, old[3], places)
                continue
            changed.append(rel)
            records.extend(found)
            known[rel] = manifests.row(stat, digest, len(found), places)
        for rel in removed:
            known.pop(rel, None)
        if changed or removed:
            self._backend.replace_files([*removed, *changed], records)
        self._just_read = _by_path(records)
        total = sum(int(entry[3]) for entry in known.values())
        self._save_manifest(known, total, walked.folders)
        return SyncReport(False, tuple(changed), tuple(removed), total, time.monotonic() - started)

    def _save_manifest(self, files: dict[str, list[Any]], records: int, folders: dict[str, int]) -> None:
        manifests.save(self.manifest_path, self.backend_name, files, records, folders, self.vault.ignore)
        if self._backend is not None:
            self._manifest_seen = file_stamp(self.manifest_path)  # under the index lock: no other writer since


def _by_path(records: list[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for record in records:
        out.setdefault(record.path, []).append(record)
    return out
