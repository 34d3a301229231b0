"""Derived routing state: what a consolidation knows of topics it does not read.

A consolidation reads only the topics it changes or routes to. What routing,
merging and the no-loss proof need to know about every other topic (its
summary, token count, text, term counts, speakers, live seqs, unsigned items)
is kept in ``.memd/index/catalog.sqlite``: machine-local, git-ignored and
derived like the search index beside it, so deleting it loses nothing
(ARCHITECTURE.md §4.6).

It is never trusted blindly. Each topic's row carries its file's size, mtime
and content digest; a refresh (under the vault lock, at every consolidation's
snapshot) stats every topic file and rebuilds the rows of files that are new,
changed or gone. A file whose mtime is too close to when its row was made to
tell a later write apart is read again and compared by digest. A different
schema, other term rules (``engine/text.py``), another merge size or an
unreadable database rebuild everything from the files.

Each term's holders are one row (``postings.py``), so scoring a block reads
one row per word instead of one per topic.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from memd.consolidation.catalog_db import FILE, TABLES, chunks, connect, remove_file, rules
from memd.consolidation.postings import TermEdits
from memd.consolidation.records import Record, describe, digest_of, topic_files
from memd.core.atomic import decode_markdown
from memd.core.document import parse_document
from memd.core.errors import DocumentError, FormatError
from memd.core.layout import doc_id
from memd.core.signature import MAX_SEQ
from memd.vault.vault import Vault

# A row is trusted by size and mtime only when the file's mtime is this much
# older than the moment the row was made (coarse clocks, same-tick rewrites).
RACY_NS = 2_000_000_000


class Known(NamedTuple):
    """A catalog row's file identity and size, read at every refresh."""

    n: int
    size: int
    mtime: int
    seen: int
    digest: str
    problem: str | None
    tokens: int = 0  # the topic's size, for merges (what is small)
    length: int = 0  # its terms, speakers' names included


class Catalog:
    """The derived state of one vault, refreshed against the files when opened."""

    def __init__(self, vault: Vault, db: sqlite3.Connection) -> None:
        self.vault = vault
        self.db = db
        self.small_below = vault.config.merge_tokens  # the ``small`` counts are of topics below this size
        self.known: dict[str, Known] = {}  # every topic file, readable or not, in path order
        self.fresh: dict[str, str] = {}  # topics the last refresh read from their files: id -> path
        self._edits = TermEdits()

    @classmethod
    def open(cls, vault: Vault) -> Catalog:
        """The catalog, up to date with every topic file. Call under the vault
        lock. Trouble with the database itself is never an error: it is
        rebuilt, in memory if the disk will not hold it."""
        path = vault.index_dir / FILE
        tries: tuple[str | None, ...] = (str(path), None, str(path), ":memory:")
        if vault.index_dir.is_symlink() or path.is_symlink():
            tries = (":memory:",)  # never written through a link (it may lead out of the vault)
        for where in tries:
            if where is None:  # the file is damaged: start again from the files
                remove_file(path)
                continue
            db = None
            try:
                db = connect(where)
                catalog = cls(vault, db)
                catalog.refresh()
                return catalog
            except (sqlite3.Error, OSError):
                if db is not None:
                    db.close()
                if where == ":memory:":
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()

    # --- keeping in step with the files ---------------------------------------

    def refresh(self) -> None:
        self._check_rules()
        rows = {
            row[0]: Known(*row[1:])
            for row in self.db.execute("SELECT id, n, size, mtime, seen, digest, problem, tokens, length FROM topics")
        }
        now = time.time_ns()
        files = {doc_id(rel): (rel, stat) for rel, stat in topic_files(self.vault.root)}
        stale = [
            topic_id
            for topic_id, (_, stat) in files.items()
            if (row := rows.get(topic_id)) is None
            or (row.size, row.mtime) != (stat.st_size, stat.st_mtime_ns)
            or stat.st_mtime_ns >= row.seen - RACY_NS
        ]
        gone = [topic_id for topic_id in rows if topic_id not in files]
        if stale or gone:
            with self._writing():
                for topic_id in gone:
                    self._drop(rows.pop(topic_id).n)
                for topic_id in stale:
                    rel, stat = files[topic_id]
                    rows[topic_id] = self._read(topic_id, rel, stat, rows.get(topic_id), now)
        self.known = {topic_id: rows[topic_id] for topic_id in files if topic_id in rows}
        self.fresh = {topic_id: files[topic_id][0] for topic_id in stale}

    def changed_since_refresh(self) -> list[str]:
        """Topics the last refresh read from their files that read differently
        now. An editor that saves in place truncates the file before it writes:
        a read in between sees a topic without its entries, and what a
        consolidation concluded from that (entries gone, free to file again)
        must not be written. Rows trusted by size and mtime are not read, so
        they cannot hold such a half-saved view."""
        changed = []
        for topic_id, rel in self.fresh.items():
            row = self.known.get(topic_id)
            if row is None or row.problem is not None:
                continue  # unreadable topics are left alone and read directly where it matters
            try:
                data = (self.vault.root / rel).read_bytes()
            except OSError:
                changed.append(topic_id)
                continue
            if digest_of(data) != row.digest:
                changed.append(topic_id)
        return changed

    def _check_rules(self) -> None:
        wanted = rules(self.small_below)
        try:
            found = dict(self.db.execute("SELECT key, value FROM meta"))
        except sqlite3.OperationalError:
            found = {}
        if found.get("rules") == wanted:
            return
        with self._writing():
            names = [r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for name in names:
                self.db.execute(f'DROP TABLE IF EXISTS "{name}"')
            for statement in filter(str.strip, TABLES.split(";")):
                self.db.execute(statement)
            self.db.execute("INSERT INTO meta VALUES ('rules', ?)", (wanted,))

    def _read(self, topic_id: str, rel: str, stat: os.stat_result, row: Known | None, now: int) -> Known:
        problem: str | None
        try:
            data = (self.vault.root / rel).read_bytes()
        except OSError as err:
            data, problem = b"", f"skipped {DocumentError(rel, 1, f'cannot read: {err.strerror or err}')}"
        else:
            problem = None
        digest = digest_of(data)
        identity = (stat.st_size, stat.st_mtime_ns, now, digest)
        if row is not None and problem is None and row.problem is None and row.digest == digest:
            self.db.execute("UPDATE topics SET size = ?, mtime = ?, seen = ? WHERE n = ?", (*identity[:3], row.n))
            return Known(row.n, *identity, None, row.tokens, row.length)
        record = None
        if problem is None:
            try:
                document = parse_document(decode_markdown(data, rel))
                fields = document.frontmatter.data if document.frontmatter is not None else {}
                summary = fields.get("summary")  # `summary:` left empty reads as None: no summary
                record = describe(document, summary if isinstance(summary, str) else "")
            except DocumentError as err:
                problem = f"skipped {err}"
            except FormatError as err:
                problem = f"skipped {rel}: {err}; fix it by hand, memd will not rewrite it"
        n = self._put(topic_id, identity, record, problem, row)
        return Known(n, *identity, problem, record.tokens if record else 0, record.length if record else 0)

    def _put(
        self,
        topic_id: str,
        identity: tuple[int, int, int, str],
        record: Record | None,
        problem: str | None,
        row: Known | None,
    ) -> int:
        """Write one topic's rows (a topic keeps its number: the holders stay sorted)."""
        tokens, length, unsigned = (record.tokens, record.length, record.unsigned) if record else (0, 0, 0)
        named = record.named if record else ""
        if row is None:
            cursor = self.db.execute(
                "INSERT INTO topics(id, size, mtime, seen, digest, problem, tokens, length, unsigned, named)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (topic_id, *identity, problem, tokens, length, unsigned, named),
            )
            n = int(cursor.lastrowid or 0)
        else:
            n = row.n
            self._clear(n)
            self.db.execute(
                "UPDATE topics SET size = ?, mtime = ?, seen = ?, digest = ?, problem = ?, tokens = ?, length = ?,"
                " unsigned = ?, named = ? WHERE n = ?",
                (*identity, problem, tokens, length, unsigned, named, n),
            )
        if record is not None:
            self.db.execute("INSERT INTO texts VALUES (?, ?, ?)", (n, record.summary, record.text))
            self.db.executemany(
                "INSERT INTO words VALUES (?, ?, ?, ?)", ((n, w, t, c) for (w, t), c in record.pairs.items())
            )
            self.db.executemany("INSERT INTO speakers VALUES (?, ?)", ((name, n) for name in record.speakers))
            self.db.executemany("INSERT INTO seqs VALUES (?, ?, ?)", ((s, n, c) for s, c in record.seqs.items()))
            self._edits.add(n, record.counts(), record.tokens < self.small_below)
        return n

    def _clear(self, n: int) -> None:
        """Remove a topic's words, speakers, seqs and text (its row stays)."""
        tokens = self.db.execute("SELECT tokens FROM topics WHERE n = ?", (n,)).fetchone()
        terms = [t for (t,) in self.db.execute("SELECT DISTINCT term FROM words WHERE topic = ?", (n,))]
        self._edits.remove(n, terms, tokens is not None and tokens[0] < self.small_below)
        for table in ("words", "speakers", "seqs"):
            self.db.execute(f"DELETE FROM {table} WHERE topic = ?", (n,))
        self.db.execute("DELETE FROM texts WHERE n = ?", (n,))

    def _drop(self, n: int) -> None:
        self._clear(n)
        self.db.execute("DELETE FROM topics WHERE n = ?", (n,))

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._edits.flush(self.db)
        except BaseException:
            self._edits = TermEdits()
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def wrote(self, written: dict[str, tuple[str, Record] | None], summaries: dict[str, str] | None = None) -> None:
        """Topic files this process has just written (text and record; None:
        deleted), so the next refresh need not parse them again. A file that
        differs from what was written by now is left for that refresh.
        ``summaries``: those memd made for them (``written_summary``)."""
        now = time.time_ns()
        try:
            with self._writing():
                self.db.executemany("INSERT OR REPLACE INTO written VALUES (?, ?)", (summaries or {}).items())
                for topic_id, change in written.items():
                    row = self.known.get(topic_id)
                    path = self.vault.root / f"topics/{topic_id}.md"
                    if change is not None:
                        stat = path.stat()  # before reading: a later write shows as a newer mtime
                        data = path.read_bytes()
                    if change is None or data != change[0].encode("utf-8", errors="surrogateescape"):
                        if row is not None:
                            self._drop(row.n)
                        self.known.pop(topic_id, None)
                        continue
                    identity = (stat.st_size, stat.st_mtime_ns, now, digest_of(data))
                    n = self._put(topic_id, identity, change[1], None, row)
                    self.known[topic_id] = Known(n, *identity, None, change[1].tokens, change[1].length)
        except (sqlite3.Error, OSError):
            return  # derived state: the next refresh reads these files again

    # --- questions -----------------------------------------------------------------

    def problems(self) -> list[tuple[str, str]]:
        """Unreadable topics and why, in path order."""
        return [(topic_id, row.problem) for topic_id, row in self.known.items() if row.problem is not None]

    def readable(self) -> list[str]:
        return [topic_id for topic_id, row in self.known.items() if row.problem is None]

    def holders(self, seqs: Iterable[int]) -> set[str]:
        """Topics holding any of these seqs."""
        found: set[int] = set()
        for chunk in chunks(sorted(set(seqs))):
            marks = ",".join("?" * len(chunk))
            found.update(n for (n,) in self.db.execute(f"SELECT topic FROM seqs WHERE seq IN ({marks})", chunk))
        return {topic_id for topic_id, row in self.known.items() if row.n in found}

    def shared(self) -> dict[int, list[str]]:
        """Seqs that more than one entry holds (in two topics, or twice in one),
        with their topics in path order (one scan of a narrow table: a few
        milliseconds at 100k seqs)."""
        rows = self.db.execute(
            "SELECT seq, topic FROM seqs WHERE seq IN (SELECT seq FROM seqs GROUP BY seq HAVING SUM(count) > 1)"
        )
        names = {row.n: topic_id for topic_id, row in self.known.items() if row.problem is None}
        found: dict[int, list[str]] = {}
        for seq, n in rows:
            if n in names:
                found.setdefault(seq, []).append(names[n])
        return {seq: sorted(ids) for seq, ids in found.items()}

    def held(self, seqs: Iterable[int], besides: Iterable[str]) -> set[int]:
        """Which of these seqs topics other than ``besides`` hold."""
        skip = {self.known[t].n for t in besides if t in self.known}
        found: set[int] = set()
        # No topic holds a seq out of range, and SQLite cannot even be asked about one past 2**63.
        for chunk in chunks(sorted(s for s in set(seqs) if 0 < s <= MAX_SEQ)):
            marks = ",".join("?" * len(chunk))
            rows = self.db.execute(f"SELECT seq, topic FROM seqs WHERE seq IN ({marks})", chunk)
            found.update(seq for seq, n in rows if n not in skip)
        return found

    def summary(self, topic_id: str) -> str:
        """The summary in a topic's frontmatter, as the file was read."""
        row = self.db.execute(
            "SELECT x.summary FROM topics t JOIN texts x ON x.n = t.n WHERE t.id = ?", (topic_id,)
        ).fetchone()
        return str(row[0]) if row else ""

    def renamed(self) -> dict[str, str]:
        """Topics a person renamed by hand, old id -> new: the file's frontmatter
        still gives the ``id`` memd wrote, and no file of that name is left. A
        name two files claim (a copy, then a rename) is no one's rename."""
        rows = self.db.execute("SELECT id, named FROM topics WHERE named != '' AND named != id AND problem IS NULL")
        claims: dict[str, list[str]] = {}
        for topic_id, named in rows:
            claims.setdefault(str(named), []).append(str(topic_id))
        return {old: new[0] for old, new in claims.items() if len(new) == 1 and old not in self.known}

    def renamed_written(self, old: str, new: str) -> None:
        """What memd wrote into ``old`` it wrote into ``new``, a person's new name for it."""
        with contextlib.suppress(sqlite3.Error):
            self.db.execute("UPDATE OR REPLACE written SET id = ? WHERE id = ?", (new, old))

    def written_summary(self, topic_id: str) -> str | None:
        """The summary memd last wrote into a topic (None: not known here; the
        catalog is this machine's, so a sync's or a rebuilt one's are not)."""
        row = self.db.execute("SELECT summary FROM written WHERE id = ?", (topic_id,)).fetchone()
        return str(row[0]) if row else None

    def with_unsigned(self) -> list[str]:
        """Readable topics holding unsigned list items, in path order."""
        rows = self.db.execute("SELECT id FROM topics WHERE unsigned > 0 AND problem IS NULL ORDER BY id")
        return [str(topic_id) for (topic_id,) in rows]

    def unsigned(self, besides: Iterable[str]) -> int:
        """Unsigned list items in the topics, leaving out ``besides``."""
        left = {self.known[t].n for t in besides if t in self.known}
        rows = self.db.execute("SELECT n, unsigned FROM topics WHERE unsigned > 0 AND problem IS NULL")
        return sum(count for n, count in rows if n not in left)
