"""The catalog's SQLite file (``catalog.py``): its tables, what makes a
catalog of other rules stale, opening it and deleting it."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.consolidation.records import digest_of
from memd.core.tokens import count_tokens
from memd.engine.text import STOPWORDS, speakers, term_pairs

if TYPE_CHECKING:
    from memd.vault.vault import Vault

FILE = "catalog.sqlite"
SCHEMA = 5  # 5: the id a topic's frontmatter gives (``renamed``), the summaries memd wrote
_PROBE = "Caroline: Runs running planned studies tiles 東京タワー 1234 42 don't x-ray"

TABLES = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE topics(
    n INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime INTEGER NOT NULL,
    seen INTEGER NOT NULL,
    digest TEXT NOT NULL,
    problem TEXT,
    tokens INTEGER NOT NULL DEFAULT 0,
    length INTEGER NOT NULL DEFAULT 0,
    unsigned INTEGER NOT NULL DEFAULT 0,
    named TEXT NOT NULL DEFAULT ''
);
CREATE TABLE texts(n INTEGER PRIMARY KEY, summary TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE written(id TEXT PRIMARY KEY, summary TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE terms(term TEXT PRIMARY KEY, df INTEGER NOT NULL, small INTEGER NOT NULL,
                   topics BLOB NOT NULL, counts BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE words(topic INTEGER NOT NULL, word TEXT NOT NULL, term TEXT NOT NULL, count INTEGER NOT NULL,
                   PRIMARY KEY(topic, word, term)) WITHOUT ROWID;
CREATE INDEX words_by_word ON words(word);
CREATE TABLE speakers(name TEXT NOT NULL, topic INTEGER NOT NULL, PRIMARY KEY(name, topic)) WITHOUT ROWID;
CREATE INDEX speakers_by_topic ON speakers(topic);
CREATE TABLE seqs(seq INTEGER NOT NULL, topic INTEGER NOT NULL, count INTEGER NOT NULL,
                  PRIMARY KEY(seq, topic)) WITHOUT ROWID;
CREATE INDEX seqs_by_topic ON seqs(topic);
"""


def rules(small_below: int) -> str:
    """Changes when the schema, the term rules or the merge size change (then rows are rebuilt)."""
    probe = f"{SCHEMA}|{small_below}|{sorted(STOPWORDS)}|{term_pairs(_PROBE)}|{speakers([_PROBE])}"
    return digest_of(f"{probe}|{count_tokens(_PROBE)}".encode())


def chunks(values: list[Any], size: int = 500) -> Iterator[list[Any]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def connect(where: str) -> sqlite3.Connection:
    if where != ":memory:":
        Path(where).parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(where, timeout=30, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA temp_store = MEMORY")
    return db


def remove(vault: Vault) -> None:
    """Delete the catalog (it is rebuilt from the files when next opened). Call under the vault lock."""
    remove_file(vault.index_dir / FILE)


def remove_file(path: Path) -> None:
    for suffix in ("", "-journal", "-wal", "-shm"):
        with contextlib.suppress(OSError):
            Path(f"{path}{suffix}").unlink()
