"""Topic documents as consolidation sees them: sections of items.

An engine decides which items each section should hold; ``apply_sections``
maps that decision back onto the document, keeping every line it did not
decide about (prose, code, unsigned notes, formatting) exactly where it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from memd.core.document import Block, Document, Frontmatter, Heading, Line
from memd.core.entry import Entry, make_entry
from memd.core.signature import Signature
from memd.core.timeutil import format_time
from memd.core.tokens import count_tokens
from memd.engine.base import Item, Section


@dataclass(frozen=True)
class Topic:
    id: str
    path: Path
    text: str  # the file content as read (its hash guards against hand edits)
    document: Document

    @property
    def data(self) -> dict[str, Any]:
        """The frontmatter's mapping (parsed when first asked for)."""
        return self.document.frontmatter.data if self.document.frontmatter is not None else {}


def partitions(document: Document) -> list[tuple[int, int]]:
    """Block index ranges: the preamble (maybe empty), then one per heading."""
    bounds = [0] + [i for i, block in enumerate(document.blocks) if isinstance(block, Heading)]
    ends = [*bounds[1:], len(document.blocks)]
    return list(zip(bounds, ends, strict=True))


def sections_of(document: Document) -> list[Section]:
    result = []
    for start, end in partitions(document):
        first = document.blocks[start] if start < end else None
        title = first.title if isinstance(first, Heading) else ""
        items = tuple(
            Item(block.signature, block.full_text)
            for block in document.blocks[start:end]
            if isinstance(block, Entry) and block.signature is not None
        )
        result.append(Section(title, items))
    return result


def apply_sections(document: Document, sections: list[Section]) -> Document:
    """Rewrite the document so its sections hold exactly these items.

    Existing sections map by position; extra sections are appended as new
    headings (``##`` below the file's ``#`` title). An unchanged entry keeps its exact lines; an entry whose
    seqs were folded into a new item is replaced in place by it.
    """
    parts = partitions(document)
    blocks: list[Block] = []
    for (start, end), section in zip(parts, sections, strict=False):
        pending = list(section.items)
        region: list[Block] = []
        last_entry = -1
        for block in document.blocks[start:end]:
            if isinstance(block, Entry) and block.signature is not None:
                original = set(block.signature.seq)
                match = next((item for item in pending if original <= set(item.seqs)), None)
                if match is None:
                    continue  # moved, folded elsewhere or superseded
                pending.remove(match)
                same = match.signature == block.signature and match.text == block.full_text
                region.append(block if same else make_entry(match.signature, match.text))
                last_entry = len(region) - 1
            else:
                region.append(block)
                if isinstance(block, Entry):
                    last_entry = len(region) - 1
        if pending:
            at = last_entry + 1 if last_entry >= 0 else _after_heading(region)
            region[at:at] = [make_entry(item.signature, item.text) for item in pending]
        blocks.extend(region)
    for section in sections[len(parts) :]:
        if not section.items:
            continue
        if blocks and not (isinstance(blocks[-1], Line) and not blocks[-1].raw.strip()):
            blocks.append(Line(""))
        # One `#` title a file: sections below a title are `##`.
        titled = any(isinstance(block, Heading) and block.level == 1 for block in blocks)
        blocks.append(Heading.make(2 if titled else 1, section.title or "Notes"))
        blocks.extend(make_entry(item.signature, item.text) for item in section.items)
    return replace(document, blocks=tuple(blocks), final_newline=True)


def _after_heading(region: list[Block]) -> int:
    """Insert position in a section with no entries: after its heading and any
    prose, before trailing blank lines."""
    at = len(region)
    while at > 1:
        block = region[at - 1]
        if not (isinstance(block, Line) and not block.raw.strip()):
            break
        at -= 1
    return at


def adopt_unsigned(document: Document, next_seq: Callable[[], int], when: str) -> tuple[Document, list[int]]:
    """Give every unsigned list item a seq and ``source=hand`` (ARCHITECTURE.md §2)."""
    adopted: list[int] = []
    blocks: list[Block] = []
    for block in document.blocks:
        if isinstance(block, Entry) and block.signature is None:
            seq = next_seq()
            adopted.append(seq)
            block = replace(block, signature=Signature.make(seq, time=when, source="hand"), sep=" ")
        blocks.append(block)
    return replace(document, blocks=tuple(blocks)), adopted


def topic_tokens(document: Document) -> int:
    return sum(count_tokens(block.full_text) for block in document.blocks if isinstance(block, Entry))


def topic_text(document: Document) -> str:
    """Section titles and entry texts: what similarity is computed on."""
    parts = []
    for section in sections_of(document):
        parts.append(section.title)
        parts.extend(item.text for item in section.items)
    return "\n".join(p for p in parts if p)


def with_frontmatter(document: Document, topic_id: str, summary: str, moment: datetime, log: list[str]) -> Document:
    """Refresh memd's keys in place; any key a person added stays where it is."""
    moment = moment.replace(microsecond=0)
    data: dict[str, Any] = dict(document.frontmatter.data) if document.frontmatter is not None else {}
    fresh = {"id": topic_id, "summary": summary, "created": moment, "updated": moment, "tokens": topic_tokens(document)}
    for key, value in fresh.items():
        if key != "created" or "created" not in data:
            data[key] = value
    if log:
        previous = data.get("update_log")
        data["update_log"] = [
            *(previous if isinstance(previous, list) else []),
            *(f"{format_time(moment)} {line}" for line in log),
        ]
    return replace(document, frontmatter=Frontmatter.from_data(data))
