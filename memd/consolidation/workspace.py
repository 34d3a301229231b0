"""The topics of one consolidation, held in memory until the journal is written."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from ..atomic import read_text, refuse_read_only
from ..document import Document, Frontmatter, parse_document
from ..engine.base import Engine, Section, TopicInfo
from ..engine.text import slugify
from ..errors import DocumentError, FormatError, WriteError
from ..vault import Vault
from .journal import FileChange
from .sections import Topic, adopt_unsigned, apply_sections, sections_of, topic_text, topic_tokens, with_frontmatter

_EMPTY = parse_document("")


@dataclass
class Workspace:
    vault: Vault
    originals: dict[str, Topic]
    docs: dict[str, Document]
    touched: set[str] = field(default_factory=set)
    created: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    adopted: list[int] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)
    on_disk: set[str] | None = None

    @classmethod
    def load(cls, vault: Vault, warnings: list[str]) -> Workspace:
        """Every readable topic; unreadable ones are reported and left alone."""
        originals: dict[str, Topic] = {}
        skipped: set[str] = set()
        for path in vault.topic_files():
            rel = vault.rel(path)
            topic_id = vault.doc_id(path)
            try:
                refuse_read_only(path)  # a file the person made read-only is left alone
                text = read_text(path, rel)
                document = parse_document(text)
                data = document.frontmatter.data if document.frontmatter is not None else {}
            except (DocumentError, WriteError) as err:
                warnings.append(f"skipped {err}")
                skipped.add(topic_id)
                continue
            except FormatError as err:
                warnings.append(f"skipped {rel}: {err}; fix it by hand, memd will not rewrite it")
                skipped.add(topic_id)
                continue
            originals[topic_id] = Topic(topic_id, path, text, document, data)
        return cls(vault, originals, {k: t.document for k, t in originals.items()}, skipped=skipped)

    def unsigned(self) -> int:
        """Unsigned list items in the loaded topics (seqs are reserved for them)."""
        return sum(1 for doc in self.docs.values() for e in doc.entries() if e.entry.signature is None)

    def texts(self) -> dict[str, str | None]:
        """Each loaded topic's text as read, by vault-relative path."""
        return {f"topics/{topic_id}.md": topic.text for topic_id, topic in self.originals.items()}

    def ids(self) -> Iterator[str]:
        return (topic_id for topic_id in self.docs if topic_id not in self.deleted)

    def live_seqs(self) -> list[int]:
        return [seq for topic_id in self.ids() for e in self.docs[topic_id].signed() for seq in e.entry.signature.seq]  # type: ignore[union-attr]

    def catalog(self) -> list[TopicInfo]:
        infos = []
        for topic_id in self.ids():
            document = self.docs[topic_id]
            original = self.originals.get(topic_id)
            summary = str(original.data.get("summary", "")) if original else ""
            infos.append(TopicInfo(topic_id, summary, topic_tokens(document), topic_text(document)))
        return infos

    def create(self, title: str, prefix: str = "") -> str:
        base = slugify(f"{prefix} {title}".strip()) or "topic"
        topic_id, n = base, 2
        if self.on_disk is None:  # every topic id in use, loaded or not (listed once per consolidation)
            self.on_disk = {self.vault.doc_id(p) for p in self.vault.topic_files()}
        taken = set(self.docs) | self.skipped | self.on_disk
        while topic_id in taken:
            topic_id, n = f"{base}-{n}", n + 1
        self.docs[topic_id] = _EMPTY
        self.created.add(topic_id)
        self.touched.add(topic_id)
        return topic_id

    def adopt(self, topic_id: str, counter: Iterator[int], stamp: str) -> None:
        document, seqs = adopt_unsigned(self.docs[topic_id], lambda: next(counter), stamp)
        self.docs[topic_id] = document
        self.adopted.extend(seqs)

    def apply(self, topic_id: str, sections: list[Section]) -> None:
        self.docs[topic_id] = apply_sections(self.docs[topic_id], sections)
        self.touched.add(topic_id)

    def set(self, topic_id: str, document: Document) -> None:
        self.docs[topic_id] = document
        self.touched.add(topic_id)

    def delete(self, topic_id: str) -> None:
        self.deleted.add(topic_id)
        self.touched.add(topic_id)

    def finish(self, engine: Engine, moment: datetime, logs: dict[str, list[str]], epoch: int) -> dict[str, Document]:
        """Every live topic as it will be written: touched ones get a fresh
        summary, token count and an ``update_log`` line for this consolidation."""
        touched = [topic_id for topic_id in self.ids() if topic_id in self.touched]
        # One call for all summaries: a model engine batches them (fewer, larger calls).
        summaries = dict(zip(touched, engine.summarise_many([sections_of(self.docs[t]) for t in touched]), strict=True))
        final = {}
        for topic_id in self.ids():
            document = self.docs[topic_id]
            if topic_id in summaries:
                log = [f"consolidation {epoch}: {', '.join(logs[topic_id])}"] if logs.get(topic_id) else []
                document = with_frontmatter(document, topic_id, summaries[topic_id], moment, log)
            final[topic_id] = document
        return final

    def changes(self, final: dict[str, Document]) -> list[FileChange]:
        changes = []
        for topic_id in sorted(self.touched):
            original = self.originals.get(topic_id)
            before = original.text if original else None
            after = None if topic_id in self.deleted else final[topic_id].render()
            if before != after:
                changes.append(FileChange(f"topics/{topic_id}.md", before, after))
        return changes

    def frontmatter_log(self, topic_id: str) -> list[str]:
        original = self.originals.get(topic_id)
        log = original.data.get("update_log") if original else None
        return [str(line) for line in log] if isinstance(log, list) else []

    def carry_log(self, survivor: str, absorbed: str) -> None:
        """Keep the absorbed topic's history (its supersession records) alive."""
        lines = self.frontmatter_log(absorbed)
        if not lines:
            return
        document = self.docs[survivor]
        data: dict[str, Any] = (
            dict(document.frontmatter.data) if document.frontmatter is not None else {"id": survivor}
        )
        previous = data.get("update_log")
        data["update_log"] = [*(previous if isinstance(previous, list) else []), *lines]
        self.docs[survivor] = replace(document, frontmatter=Frontmatter.from_data(data))
