"""The topics of one consolidation, held in memory until the journal is written.

Only the topics a consolidation needs are read: the ones it routes entries
to, splits or merges, and the ones holding seqs the buffer also holds. Every
other topic is known through the catalog (``catalog.py``), refreshed under
the vault lock when the workspace is loaded: that refresh is the snapshot of
the topics. A topic read later is compared with it (by content digest), and
one that changed since means a person is editing: the run starts over.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memd.consolidation.catalog import Catalog
from memd.consolidation.records import Record, describe, digest_of
from memd.consolidation.related import related, tags_of, with_links
from memd.consolidation.routing import RoutingIndex
from memd.consolidation.sections import Topic, adopt_unsigned, apply_sections, sections_of, with_frontmatter
from memd.core.atomic import decode_markdown, read_bytes, refuse_read_only
from memd.core.document import Document, Frontmatter, Heading, linked, parse_document
from memd.core.errors import DocumentError, MemdError, WriteError
from memd.core.layout import doc_id
from memd.core.summary import written_by_memd
from memd.engine.base import Engine, Item, Section, TopicInfo
from memd.engine.subjects import talking
from memd.engine.text import slugify
from memd.vault.journal import FileChange, HandEditConflict
from memd.vault.state import seqs_in_files
from memd.vault.vault import Vault

_EMPTY = parse_document("")


@dataclass
class Workspace:
    vault: Vault
    catalog: Catalog
    originals: dict[str, Topic] = field(default_factory=dict)  # topics read, as read
    docs: dict[str, Document] = field(default_factory=dict)  # topics read or created, as they stand
    touched: set[str] = field(default_factory=set)
    created: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    adopted: list[int] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)
    summaries: dict[str, str] = field(default_factory=dict)  # every touched topic's, once finished
    made: dict[str, str] = field(default_factory=dict)  # those memd made (the rest a person wrote)
    _records: dict[str, tuple[Document, Record]] = field(default_factory=dict)

    @classmethod
    def load(cls, vault: Vault, warnings: list[str]) -> Workspace:
        """The catalog of every topic, in step with the files; unreadable
        topics are reported and left alone. Call under the vault lock."""
        catalog = Catalog.open(vault)
        skipped = set()
        for topic_id, problem in catalog.problems():
            warnings.append(problem)
            skipped.add(topic_id)
        for topic_id in catalog.readable():
            try:
                refuse_read_only(vault.root / f"topics/{topic_id}.md")  # a file the person made read-only stays
            except WriteError as err:
                warnings.append(str(err))  # it says memd leaves the file alone
                skipped.add(topic_id)
        return cls(vault, catalog, skipped=skipped)

    def close(self) -> None:
        self.catalog.close()

    # --- reading ----------------------------------------------------------------------

    def doc(self, topic_id: str) -> Document:
        """A topic as it stands in this consolidation (read on first use)."""
        if topic_id not in self.docs:
            self._read(topic_id)
        return self.docs[topic_id]

    def holding(self, seqs: Iterable[int]) -> dict[str, Document]:
        """The topics holding any of these seqs."""
        return {
            topic_id: self.doc(topic_id) for topic_id in sorted(self.catalog.holders(seqs)) if self.exists(topic_id)
        }

    def _read(self, topic_id: str) -> None:
        known = self.catalog.known.get(topic_id)
        if known is None or known.problem is not None:
            raise KeyError(topic_id)
        rel = f"topics/{topic_id}.md"
        path = self.vault.root / rel
        try:
            data = read_bytes(path)
        except OSError:
            data = None
        if data is None or digest_of(data) != known.digest:
            raise HandEditConflict(f"{rel} changed while memd was consolidating; starting over")
        try:
            text = decode_markdown(data, rel)
        except DocumentError as err:  # the catalog read these very bytes without trouble
            raise HandEditConflict(f"{rel} changed while memd was consolidating ({err}); starting over") from err
        document = parse_document(text)
        self.originals[topic_id] = Topic(topic_id, path, text, document)
        self.docs[topic_id] = document

    def exists(self, topic_id: str) -> bool:
        if topic_id in self.deleted:
            return False
        known = self.catalog.known.get(topic_id)
        return topic_id in self.created or (known is not None and known.problem is None)

    def ids(self) -> list[str]:
        """Every live topic: those on disk in path order, then the new ones."""
        on_disk = [t for t in self.catalog.readable() if t not in self.deleted and t not in self.skipped]
        return on_disk + [t for t in self.docs if t in self.created and t not in self.deleted]

    def unsigned(self) -> int:
        """Unsigned list items in the topics (seqs are reserved for them)."""
        read = sum(_unsigned(doc) for doc in self.docs.values())
        # A topic set aside as unwritable cannot be signed in: no seqs are reserved for it.
        return self.catalog.unsigned(besides=[*self.docs, *self.skipped]) + read

    def texts(self) -> dict[str, str | None]:
        """Each topic read so far, as read, by vault-relative path."""
        return {f"topics/{topic_id}.md": topic.text for topic_id, topic in self.originals.items()}

    def read_documents(self) -> list[Document]:
        """The topics read, as they were read."""
        return [topic.document for topic in self.originals.values()]

    def read_seqs(self) -> list[int]:
        """Live seqs of the topics read, as they were read."""
        return [
            seq
            for topic in self.originals.values()
            for e in topic.document.signed_entries()
            for seq in e.signature.seq  # type: ignore[union-attr]
        ]

    def held(self, seqs: set[int]) -> set[int]:
        """Which of these seqs any topic holds (an unreadable one too: its lines are still there)."""
        found = self.catalog.held(seqs, besides=())
        unreadable = [self.vault.root / f"topics/{topic_id}.md" for topic_id in self.skipped]
        return found | (seqs_in_files(unreadable) & seqs if unreadable else set())

    def changed_since_load(self) -> list[str]:
        """Topic files (vault-relative) that differ from what the snapshot read of them."""
        return [f"topics/{topic_id}.md" for topic_id in self.catalog.changed_since_refresh()]

    def elsewhere(self, seqs: Iterable[int]) -> set[int]:
        """Which of these seqs are live in topics this consolidation did not read."""
        return self.catalog.held(seqs, besides=self.originals)

    # --- what routing and merging see ------------------------------------------------

    def index(self) -> RoutingIndex:
        """Every live topic as word statistics: the ones in memory as they stand now."""
        live = [t for t in self.docs if t not in self.deleted]
        overlay = {topic_id: self.record(topic_id) for topic_id in live}
        return RoutingIndex(self.catalog, self.ids(), overlay, set(self.originals) | self.deleted | self.skipped)

    def infos(self, ids: Iterable[str]) -> list[TopicInfo]:
        return self.index().infos(ids)

    def record(self, topic_id: str) -> Record:
        document = self.docs[topic_id]
        cached = self._records.get(topic_id)
        if cached is None or cached[0] is not document:
            summary = self.catalog.summary(topic_id) if topic_id in self.originals else ""
            cached = self._records[topic_id] = (document, describe(document, summary))
        return cached[1]

    # --- changing -----------------------------------------------------------------------

    def create(self, title: str, prefix: str = "") -> str:
        base = slugify(f"{prefix} {title}".strip()) or "topic"
        topic_id, n = base, 2
        taken = set(self.docs) | self.skipped | self.catalog.known.keys()  # every id in use, read or not

        def occupied(candidate: str) -> bool:
            # Anything already at the path (a folder named like a topic, a link) is no place
            # for a new topic: writing there failed every consolidation until it was moved.
            path = self.vault.topics_dir / f"{candidate}.md"
            return candidate in taken or path.exists() or path.is_symlink()

        while occupied(topic_id):
            topic_id, n = f"{base}-{n}", n + 1
        self.docs[topic_id] = _EMPTY
        self.created.add(topic_id)
        self.touched.add(topic_id)
        return topic_id

    def adopt(self, topic_id: str, counter: Iterator[int], stamp: str) -> None:
        document, seqs = adopt_unsigned(self.doc(topic_id), lambda: next(counter), stamp)
        self.docs[topic_id] = document
        self.adopted.extend(seqs)

    def adopt_everywhere(self, counter: Iterator[int], stamp: str) -> dict[str, int]:
        """Sign the unsigned items of every topic (seqs were reserved for all of
        them at the snapshot): topic id -> items signed."""
        holders = {*self.catalog.with_unsigned(), *(t for t, doc in self.docs.items() if _unsigned(doc))}
        signed: dict[str, int] = {}
        for topic_id in sorted(holders):
            if not self.exists(topic_id) or topic_id in self.skipped:
                continue
            before = len(self.adopted)
            self.adopt(topic_id, counter, stamp)
            if len(self.adopted) > before:
                signed[topic_id] = len(self.adopted) - before
                self.touched.add(topic_id)
        return signed

    def apply(self, topic_id: str, sections: list[Section]) -> None:
        self.docs[topic_id] = apply_sections(self.doc(topic_id), sections)
        self.touched.add(topic_id)

    def set(self, topic_id: str, document: Document) -> None:
        self.doc(topic_id)  # read first: the write is compared against the file as read
        self.docs[topic_id] = document
        self.touched.add(topic_id)

    def delete(self, topic_id: str) -> None:
        self.doc(topic_id)
        self.deleted.add(topic_id)
        self.touched.add(topic_id)

    def finish(self, engine: Engine, moment: datetime, logs: dict[str, list[str]], epoch: int) -> dict[str, Document]:
        """Every topic read or created, as it will be written: touched ones get
        a fresh summary, token count and an ``update_log`` line for this
        consolidation (the rest are as they were read)."""
        live = [topic_id for topic_id in self.docs if topic_id not in self.deleted]
        touched = [topic_id for topic_id in live if topic_id in self.touched]
        # A summary a person wrote stays; the rest are made in one call (a model engine batches them).
        theirs = {t: summary for t in touched if (summary := self._persons_summary(t)) is not None}
        mine = [t for t in touched if t not in theirs]
        summaries = dict(zip(mine, engine.summarise_many([sections_of(self.docs[t]) for t in mine]), strict=True))
        self.made = dict(summaries)
        summaries.update(theirs)
        links = related(self.index(), touched) if touched else {}
        final = {}
        for topic_id in live:
            document = self.docs[topic_id]
            if topic_id in summaries:
                log = [f"consolidation {epoch}: {', '.join(logs[topic_id])}"] if logs.get(topic_id) else []
                document = with_frontmatter(document, topic_id, summaries[topic_id], moment, log)
                document = _with_obsidian(document, topic_id, links.get(topic_id, []))
                # Links to sources are written from topics/ (entries moved out of CURRENT.md linked from the root).
                document = linked(document, "../" * (1 + topic_id.count("/")))
            final[topic_id] = document
        self.summaries = summaries
        return final

    def _persons_summary(self, topic_id: str) -> str | None:
        """The summary a person wrote in a topic read here (None: memd's to make)."""
        if topic_id not in self.originals:
            return None
        summary = self.catalog.summary(topic_id)
        texts = (e.entry.full_text for e in self.doc(topic_id).signed())  # read only if it comes to quotes
        if written_by_memd(summary, self.catalog.written_summary(topic_id), texts):
            return None
        # This machine did not write it: another clone's consolidation may have (a model's summary
        # quotes nothing), or this catalog was built anew. History says which.
        from memd.git.versions import as_consolidated

        before = as_consolidated(self.vault, f"topics/{topic_id}.md", "summary")
        try:
            wrote = before.frontmatter.data.get("summary") if before and before.frontmatter else None
        except MemdError:  # a frontmatter broken in that commit says nothing of this one
            wrote = None
        return None if isinstance(wrote, str) and written_by_memd(summary, wrote, ()) else summary

    def changes(self, final: dict[str, Document]) -> list[FileChange]:
        changes = []
        for topic_id in sorted(self.touched):
            original = self.originals.get(topic_id)
            before = original.text if original else None
            after = None if topic_id in self.deleted else final[topic_id].render()
            if before != after:
                changes.append(FileChange(f"topics/{topic_id}.md", before, after))
        return changes

    def wrote(self, final: dict[str, Document], changes: list[FileChange]) -> None:
        """Tell the catalog what was written, so the next run need not read it again."""
        written: dict[str, tuple[str, Record] | None] = {}
        for change in changes:
            topic_id = doc_id(change.path)
            if change.after is None or topic_id not in final:
                written[topic_id] = None
                continue
            summary = self.summaries.get(topic_id, self.catalog.summary(topic_id))
            written[topic_id] = (change.after, describe(final[topic_id], summary))
        self.catalog.wrote(written, {t: summary for t, summary in self.made.items() if t in written})

    def frontmatter_log(self, topic_id: str) -> list[str]:
        original = self.originals.get(topic_id)
        log = original.data.get("update_log") if original else None
        return [str(line) for line in log] if isinstance(log, list) else []

    def carry_log(self, survivor: str, absorbed: str) -> None:
        """Keep the absorbed topic's history (its supersession records) alive."""
        lines = self.frontmatter_log(absorbed)
        if not lines:
            return
        document = self.doc(survivor)
        data: dict[str, Any] = dict(document.frontmatter.data) if document.frontmatter is not None else {"id": survivor}
        previous = data.get("update_log")
        data["update_log"] = [*(previous if isinstance(previous, list) else []), *lines]
        self.docs[survivor] = replace(document, frontmatter=Frontmatter.from_data(data))


def _with_obsidian(document: Document, topic_id: str, related_ids: list[str]) -> Document:
    """``related``, ``aliases`` and ``tags`` for Obsidian (``related.py``)."""
    assert document.frontmatter is not None  # with_frontmatter wrote it
    # A file with several `#` headings uses them as its sections ("# People", "# Deadlines"):
    # none of them names the topic, so none becomes its alias.
    tops = sum(1 for block in document.blocks if isinstance(block, Heading) and block.level == 1)
    title = document.title() if tops < 2 else None
    signed = [located.entry for located in document.signed()]
    text = "\n".join(entry.text for entry in signed)
    speaking = talking(Item(entry.signature, entry.text) for entry in signed if entry.signature is not None)
    data = with_links(
        document.frontmatter.data, title if title and title != topic_id else None, related_ids, tags_of(text, speaking)
    )
    return replace(document, frontmatter=Frontmatter.from_data(data))


def _unsigned(document: Document) -> int:
    """Unsigned list items in a topic as it stands."""
    return sum(1 for e in document.entries() if e.entry.signature is None)
