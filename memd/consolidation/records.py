"""What the catalog keeps of one topic, and how topic files are found and told apart."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISREG

from memd.consolidation.sections import topic_text
from memd.core.document import Document
from memd.core.entry import Entry
from memd.core.layout import IGNORED_DIRS, holds_entries, is_scratch, utf8_name
from memd.core.tokens import count_tokens
from memd.engine.text import speakers, term_pairs


@dataclass(frozen=True)
class Record:
    """What routing, merging and accounting need to know about one topic."""

    summary: str
    tokens: int
    text: str  # section titles and entry texts (``sections.topic_text``)
    seqs: Counter[int]  # live seq -> how many entries hold it
    unsigned: int
    speakers: frozenset[str]
    pairs: Counter[tuple[str, str]]  # (word, term) -> count, over summary and text
    named: str = ""  # the ``id`` its frontmatter gives: another file's name when a person renamed it

    @property
    def length(self) -> int:
        return sum(self.pairs.values())

    def counts(self, ignore: frozenset[str] = frozenset()) -> Counter[str]:
        """Term counts, leaving out the words in ``ignore`` (speakers' names)."""
        counts: Counter[str] = Counter()
        for (word, term), count in self.pairs.items():
            if word not in ignore:
                counts[term] += count
        return counts


def describe(document: Document, summary: str) -> Record:
    """A topic's record; ``summary`` is the one routing sees (its frontmatter's as read)."""
    seqs: Counter[int] = Counter()
    unsigned = tokens = 0
    for block in document.blocks:
        if isinstance(block, Entry):
            tokens += count_tokens(block.full_text)
            if block.signature is None:
                unsigned += 1
            else:
                seqs.update(block.signature.seq)
    text = topic_text(document)
    words = f"{summary}\n{text}"
    data = document.frontmatter.data if document.frontmatter is not None else {}
    named = data.get("id")
    return Record(
        summary,
        tokens,
        text,
        seqs,
        unsigned,
        speakers([words]),
        Counter(term_pairs(words)),
        named if isinstance(named, str) else "",
    )


def digest_of(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def topic_files(root: Path) -> list[tuple[str, os.stat_result]]:
    """Every topic file (vault-relative path and stat), as ``Vault.topic_files``
    lists them, without building a Path per file: a refresh stats them all."""
    found: list[tuple[str, os.stat_result]] = []
    seen: set[tuple[int, int]] = set()

    def walk(folder: str, prefix: str) -> None:
        try:
            here = os.stat(folder)
            if (here.st_dev, here.st_ino) in seen:  # a link back to a folder already listed
                return
            seen.add((here.st_dev, here.st_ino))
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            name = entry.name
            if not utf8_name(name):
                continue  # as Vault.listings: a name no database can hold is skipped (`memd lint` names it)
            with contextlib.suppress(OSError):
                if entry.is_symlink():
                    continue  # memd never follows a link: it may lead out of the vault
                if entry.is_dir():
                    if not name.startswith(".") and name not in IGNORED_DIRS:
                        walk(entry.path, f"{prefix}/{name}")
                    continue
                rel = f"{prefix}/{name}"
                # A file right in topics/ is a topic unless it is scratch; deeper ones ask the layout.
                if (name.endswith(".md") and not is_scratch(name)) if prefix == "topics" else holds_entries(rel):
                    stat = entry.stat()
                    if S_ISREG(stat.st_mode):
                        found.append((rel, stat))

    walk(str(root / "topics"), "topics")
    return sorted(found, key=lambda item: item[0].split("/"))
