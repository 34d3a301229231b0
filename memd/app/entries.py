"""One entry by its seq, and topics as whole documents: what an agent that
keeps a memory in order reads (``Memory.get``, ``Memory.topic``) and how it
replaces a fact that changed (``Memory.update``).

An update never rewrites the old entry in place. It appends a new entry to
CURRENT.md, acknowledged like any ``add``, whose signature names the entry
it replaces and why (``supersedes=12,reason=moved%20in%20May``); the next
consolidation takes the old entry out and records the supersession in a
topic's ``update_log`` (``memd/consolidation/supersessions.py``), so
``memd verify`` accounts for the old seq and ``memd history`` shows the
change.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.atomic import read_text
from memd.core.document import LocatedEntry, parse_document
from memd.core.errors import FormatError, MemdError, NotFound, VaultError
from memd.core.layout import doc_id, holds_entries
from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet, Signature
from memd.vault.buffer import Added, NewEntry, append_entries
from memd.vault.vault import Vault

# Keys memd sets itself on an update: the caller's ``meta`` may not.
RESERVED = frozenset(("seq", "time", "source", "src", "supersedes", "reason"))


@dataclass(frozen=True)
class Found:
    """One live entry, where it is, and what is about to replace it."""

    path: str
    located: LocatedEntry
    signature: Signature
    replaced_by: tuple[tuple[str, int], ...] = ()  # (seq, CURRENT.md line) of buffered updates naming it

    @property
    def seq(self) -> str:
        return str(self.signature.seq)

    @property
    def topic(self) -> str | None:
        return doc_id(self.path) if self.path.startswith("topics/") else None

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "seqs": list(self.signature.seq),
            "path": self.path,
            "line": self.located.line,
            "end_line": self.located.end_line,
            "cite": f"{self.path}:{self.located.line}",
            "doc": doc_id(self.path),
            "topic": self.topic,
            "headings": list(self.located.headings),
            "signature": self.signature.render(),
            "time": self.signature.time,
            "source": self.signature.source,
            "src": self.signature.src,
            "meta": dict(self.signature.extra),
            "text": self.located.entry.full_text,
            "replaced_by": [{"seq": seq, "path": "CURRENT.md", "line": line} for seq, line in self.replaced_by],
        }


@dataclass(frozen=True)
class Updated:
    """The new entry an update appended, and the entry it will replace."""

    added: Added
    replaces: Found
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"added": self.added.to_json(), "supersedes": self.replaces.to_json(), "reason": self.reason}


@dataclass(frozen=True)
class TopicDoc:
    """A topic as its Markdown file reads."""

    id: str
    path: str
    title: str | None
    summary: str
    markdown: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "title": self.title,
            "summary": self.summary,
            "markdown": self.markdown,
        }


def find(vault: Vault, value: str) -> Found:
    """The live entry holding the seqs ``value`` names (``12``, or ``12+41-43``
    as a result shows a merged entry)."""
    from memd.review.pattern import signature_pattern

    if "," in value:  # a block's seqs, as a search or an answer lists them
        raise FormatError(f"{value.strip()!r} lists several entries: ask for one of them at a time")
    seqs = SeqSet.parse(value.strip(), MAX_SEQS_PER_ENTRY)
    wanted = set(seqs)
    pattern = re.compile(signature_pattern(seqs))  # only files that hold such a signature are parsed
    hits: list[tuple[str, LocatedEntry]] = []
    pending: list[tuple[Signature, int]] = []
    unreadable: list[str] = []
    for path in vault.entry_files():
        rel = vault.rel_of(path)
        try:
            text = read_text(path, rel)
        except MemdError:
            unreadable.append(rel)  # one broken note does not hide every other entry
            continue
        holds = pattern.search(text) is not None
        if not holds and path != vault.current:
            continue
        signed = parse_document(text).signed()
        if path == vault.current:
            pending = _marks(signed)
        for located in signed if holds else ():
            if located.entry.signature and set(located.entry.signature.seq) & wanted:
                hits.append((rel, located))
    if not hits:
        unread = f"; {', '.join(unreadable[:3])} could not be read" if unreadable else ""
        raise NotFound(
            f"no live entry holds seq {seqs}: it was superseded or forgotten, or never existed{unread}",
            hints={
                "cli": f"`memd history {seqs}` tells which",
                "mcp": f"memory_history with target {seqs} tells which",
            },
        )
    places = {f"{rel}:{located.line}" for rel, located in hits}
    if len(places) > 1:
        raise FormatError(f"seq {seqs} names several entries ({', '.join(sorted(places))}); give one seq at a time")
    rel, located = hits[0]
    signature = located.entry.signature
    assert signature is not None  # only signed entries were kept
    held = set(signature.seq)
    replaced_by = tuple((str(mark.seq), line) for mark, line in pending if _names(mark, held))
    return Found(rel, located, signature, replaced_by)


def update(
    vault: Vault,
    value: str,
    text: str,
    *,
    reason: str,
    time: str | None = None,
    source: str = "user",
    src: str | None = None,
    meta: Sequence[tuple[str, str]] = (),
) -> Updated:
    from memd.consolidation.supersessions import encode_reason
    from memd.core.redact import redact_value

    # Redacted before it is encoded for the signature: "%20ghp_..." hides the token's
    # word boundary from the rules, and the reason went into the buffer whole.
    why = redact_value(" ".join(reason.split()), "reason")
    if not why:
        raise FormatError("give a reason: it is recorded with the change (e.g. 'she moved in May')")
    taken = sorted({key for key, _ in meta} & RESERVED)
    if taken:
        raise FormatError(f"meta cannot set {', '.join(taken)}: memd sets them on an update")
    old = find(vault, value)
    if not holds_entries(old.path):
        raise VaultError(
            f"{old.path}:{old.located.line}: seq {old.seq} is in a note of yours, which memd never rewrites; "
            "edit the note, or add the new fact as a new entry"
        )
    if old.replaced_by:
        newer, line = old.replaced_by[-1]
        raise VaultError(
            f"seq {old.seq} is already being replaced by seq {newer} (CURRENT.md:{line}) at the next "
            f"consolidation; update seq {newer} instead"
        )
    extra = (*meta, ("supersedes", old.seq), ("reason", encode_reason(why)))
    [added] = append_entries(vault, [NewEntry(text, time, source, src, tuple(extra))])
    return Updated(added, old, why)


def topic(vault: Vault, topic_id: str) -> TopicDoc:
    """The Markdown of the topic ``topic_id`` (``travel``, ``work/atlas``)."""
    cleaned = topic_id.strip().strip("/").removeprefix("topics/").removesuffix(".md")
    rel = f"topics/{cleaned}.md"
    parts = rel.split("/")
    if not cleaned or ".." in parts or "" in parts or vault.kind(rel) != "topic" or not _is_file(vault.root / rel):
        raise NotFound(
            f"no topic {topic_id!r} in the vault",
            hints={"cli": "try `memd list`", "mcp": "resources/list or memory_list names the topics"},
        )
    markdown = read_text(vault.root / rel, rel)  # refuses a symbolic link
    document = parse_document(markdown)
    summary = ""
    if document.frontmatter is not None:
        try:
            found = document.frontmatter.data.get("summary")
        except FormatError:
            found = None  # a topic whose frontmatter is broken still reads as its text
        summary = found if isinstance(found, str) else ""
    return TopicDoc(cleaned, rel, document.title(), summary, markdown)


def topics(vault: Vault, offset: int = 0, limit: int = 100) -> dict[str, Any]:
    """A page of the topics, each with its id, path, summary and size, as ``memd list`` shows them."""
    from memd.ask.tools import list_docs

    if offset < 0 or limit < 1:
        raise FormatError("offset must be 0 or more and limit at least 1")
    total = len(vault.topic_files())
    before = 1 if vault.current.exists() else 0  # the catalog lists CURRENT first, then the topics
    page = list_docs(vault, before + offset, min(limit, max(total - offset, 0)) or 1)["docs"] if offset < total else []
    return {"total": total, "offset": offset, "topics": [d for d in page if d["path"].startswith("topics/")]}


def _marks(entries: list[LocatedEntry]) -> list[tuple[Signature, int]]:
    """Buffered entries with a ``supersedes=`` mark, and their lines."""
    return [(e.entry.signature, e.line) for e in entries if e.entry.signature and e.entry.signature.get("supersedes")]


def _names(mark: Signature, seqs: set[int]) -> bool:
    try:
        return bool(set(SeqSet.parse(mark.get("supersedes") or "", MAX_SEQS_PER_ENTRY)) & seqs)
    except FormatError:
        return False


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name too long for the file system: no such topic
        return False
