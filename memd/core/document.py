"""Topic documents and CURRENT.md: a lossless line model of a Markdown file.

A document is optional YAML frontmatter plus body blocks, one per line except
that an entry owns its indented continuation lines. Every block keeps what is
needed to write it back byte for byte, so ``render(parse(text)) == text`` for
any text, and hand edits (odd spacing, prose, code, unsigned lists, unknown
keys) survive every read/write cycle. Parsing is line by line, no Markdown
library: it must be fast on big vaults and must know exact line numbers.

Parsing is linear in the size of the text whatever it holds (no regular
expression here can backtrack over a long line), and one document names at
most ``MAX_SEQS_PER_DOCUMENT`` seqs: signed entries past that budget are read
as plain lines and reported, so no file can make every reader expand
billions of seqs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

from memd.core.errors import FormatError
from memd.core.signature import SIGNATURE_AT_START, Signature

_ITEM = re.compile(r"^(?P<marker>[-*+])(?P<pad>[ \t]+)(?P<rest>\S.*)$")
# ATX heading: 1-6 hashes, then nothing or a space/tab and the title. The
# title is cut with string operations (``_heading_title``): a regular
# expression with a lazy title and an optional closing run backtracks
# quadratically over a long line of spaces.
_HEADING = re.compile(r"^#{1,6}(?:[ \t].*)?$")
# Far more seqs than any real document names (one per entry, a few per merged one).
MAX_SEQS_PER_DOCUMENT = 1_000_000
OVER_BUDGET = f"this file names more than {MAX_SEQS_PER_DOCUMENT} seqs; entry not read"
_FENCE = re.compile(r"^(```|~~~)")
_CONTINUATION = re.compile(r"^[ \t]+\S")


@dataclass(frozen=True)
class Frontmatter:
    """The YAML between the ``---`` lines, kept as written."""

    lines: tuple[str, ...]
    close: str = "---"

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Frontmatter:
        from memd.core.yamlio import dump_frontmatter

        return cls(tuple(dump_frontmatter(data).splitlines()))

    @property
    def raw(self) -> str:
        return "\n".join(self.lines)

    @cached_property
    def data(self) -> dict[str, Any]:
        """Parsed mapping; raises FormatError (with a line) when invalid."""
        from memd.core.yamlio import load_frontmatter

        return load_frontmatter(self.raw)


@dataclass(frozen=True)
class Line:
    """Any line memd does not interpret: prose, blank, code, malformed items."""

    raw: str

    def lines(self) -> tuple[str, ...]:
        return (self.raw,)


@dataclass(frozen=True)
class Heading:
    raw: str

    @property
    def level(self) -> int:
        return len(self.raw) - len(self.raw.lstrip("#"))

    @property
    def title(self) -> str:
        return _heading_title(self.raw) if _HEADING.match(self.raw) else ""

    @classmethod
    def make(cls, level: int, title: str) -> Heading:
        return cls("#" * level + " " + " ".join(title.split()))

    def lines(self) -> tuple[str, ...]:
        return (self.raw,)


@dataclass(frozen=True)
class Entry:
    """A list item at column 0; signed when its text starts with ``<seq=``.

    ``link``: where the ``src`` link after the text points from (``""`` from
    the vault's root, ``"../"`` from ``topics/``), None when it has none. The
    link is part of the line, not of the text: it is written from the
    signature's ``src`` (``source_link``), so it always says what ``src`` says."""

    text: str
    signature: Signature | None = None
    continuation: tuple[str, ...] = ()
    marker: str = "-"
    pad: str = " "
    sep: str = " "
    link: str | None = None

    def head(self) -> str:
        signature = "" if self.signature is None else self.signature.render()
        tail = ""
        if self.link is not None and self.signature is not None:
            tail = source_link(self.signature.src, self.link) or ""
        return f"{self.marker}{self.pad}{signature}{self.sep}{self.text}{tail}"

    def lines(self) -> tuple[str, ...]:
        return (self.head(), *self.continuation)

    @property
    def full_text(self) -> str:
        """Entry text with continuation lines joined by newlines (indent removed)."""
        return "\n".join([self.text, *(line.strip() for line in self.continuation)]).strip()


Block = Line | Heading | Entry

LINK_LABEL = "source"
# What a link's target may hold as written; anything else is percent-encoded,
# so the link is one CommonMark link destination (no space, no parenthesis).
_LINK_SAFE = "/#^.-_~:%"


def source_link(src: str | None, base: str) -> str | None:
    """The Markdown link written after an entry's text for its ``src``
    (`` [source](../sources/chat.md#^t12)``): a file under ``sources/`` from
    the folder ``base`` leads out of, or a web address. None for any other
    ``src`` (an id such as ``D1:3`` is no place a link could open)."""
    from urllib.parse import quote

    if not src:
        return None
    if src.startswith(("https://", "http://")):
        target = quote(src, safe=_LINK_SAFE + "?&=+@!$*,;")
    elif src.startswith("sources/") and ".." not in src.split("#", 1)[0].split("/"):
        target = base + quote(src, safe=_LINK_SAFE)
    else:
        return None
    return f" [{LINK_LABEL}]({target})"


def _split_link(text: str, signature: Signature) -> tuple[str, str | None]:
    """``text`` without the ``src`` link memd wrote after it, and that link's
    base; a link that is not exactly what memd writes for this ``src`` stays
    part of the text (a person may have written it)."""
    if not text.endswith(")") or f"[{LINK_LABEL}](" not in text:
        return text, None
    for depth in range(4):
        base = "../" * depth
        link = source_link(signature.src, base)
        if link is not None and text.endswith(link) and len(text) > len(link):
            return text[: -len(link)], base
    return text, None


def linked(document: Document, base: str) -> Document:
    """``document`` with every signed entry that can have a ``src`` link
    linking from ``base`` (memd's own files: CURRENT.md, topics)."""
    blocks = tuple(with_link(b, base) if isinstance(b, Entry) else b for b in document.blocks)
    return document if blocks == document.blocks else replace(document, blocks=blocks)


def with_link(entry: Entry, base: str) -> Entry:
    """``entry`` with the link to its ``src`` as seen from ``base``, where it can have one."""
    if entry.signature is None or entry.link == base or source_link(entry.signature.src, base) is None:
        return entry
    return replace(entry, link=base)


def _heading_title(raw: str) -> str:
    """``## Title ##`` -> ``Title`` (CommonMark: a closing run of hashes
    preceded by a space or tab is not part of the title)."""
    text = raw.lstrip("#").strip(" \t")
    stripped = text.rstrip("#")
    if stripped != text and (not stripped or stripped[-1] in " \t"):
        text = stripped.rstrip(" \t")
    return text


def _height(block: Block) -> int:
    return 1 + len(block.continuation) if isinstance(block, Entry) else 1


@dataclass(frozen=True)
class LocatedEntry:
    """An entry with where it sits: 1-based first/last line and heading path."""

    entry: Entry
    line: int
    end_line: int
    headings: tuple[str, ...]


@dataclass(frozen=True)
class Document:
    blocks: tuple[Block, ...] = ()
    frontmatter: Frontmatter | None = None
    final_newline: bool = True
    newline: str = "\n"
    bom: bool = False
    problems: tuple[tuple[int, str], ...] = field(default=(), compare=False)

    @property
    def over_budget(self) -> bool:
        """Whether signed entries past ``MAX_SEQS_PER_DOCUMENT`` were read as
        plain lines: which lines are entries then changes as entries change."""
        return any(problem == OVER_BUDGET for _, problem in self.problems)

    def render(self) -> str:
        lines: list[str] = []
        if self.frontmatter is not None:
            lines += ["---", *self.frontmatter.lines, self.frontmatter.close]
        for block in self.blocks:
            lines.extend(block.lines())
        text = self.newline.join(lines)
        if lines and self.final_newline:
            text += self.newline
        return ("\ufeff" if self.bom else "") + text

    @property
    def body_start(self) -> int:
        """1-based line number of the first body line."""
        return 1 if self.frontmatter is None else len(self.frontmatter.lines) + 3

    def located(self) -> Iterator[tuple[int, Block]]:
        line = self.body_start
        for block in self.blocks:
            yield line, block
            line += _height(block)

    def entries(self) -> list[LocatedEntry]:
        found: list[LocatedEntry] = []
        path: list[tuple[int, str]] = []
        for line, block in self.located():
            if isinstance(block, Heading):
                path = [(lvl, t) for lvl, t in path if lvl < block.level]
                path.append((block.level, block.title))
            elif isinstance(block, Entry):
                end = line + len(block.continuation)
                found.append(LocatedEntry(block, line, end, tuple(t for _, t in path)))
        return found

    def signed(self) -> list[LocatedEntry]:
        return [e for e in self.entries() if e.entry.signature is not None]

    def title(self) -> str | None:
        for block in self.blocks:
            if isinstance(block, Heading):
                return block.title
        return None


def parse_document(text: str) -> Document:
    """Parse Markdown text; never raises. Malformed signatures become plain
    lines and are listed in ``problems`` as (line, message) for ``memd lint``."""
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    newline = "\r\n" if "\r\n" in text else "\n"
    lines = text.split(newline)
    final_newline = len(lines) > 1 and lines[-1] == ""
    if final_newline or lines == [""]:
        lines.pop()

    frontmatter = None
    start = 0
    if lines and lines[0] == "---":
        for i in range(1, len(lines)):
            if lines[i] in ("---", "..."):
                frontmatter = Frontmatter(tuple(lines[1:i]), lines[i])
                start = i + 1
                break

    blocks: list[Block] = []
    problems: list[tuple[int, str]] = []
    named = 0  # seqs named by the signed entries so far
    in_fence: str | None = None
    i = start
    while i < len(lines):
        raw = lines[i]
        fence = _FENCE.match(raw)
        if in_fence is not None:
            blocks.append(Line(raw))
            if fence and raw.startswith(in_fence):
                in_fence = None
            i += 1
            continue
        if fence:
            in_fence = fence.group(1)
            blocks.append(Line(raw))
            i += 1
            continue
        if _HEADING.match(raw):
            blocks.append(Heading(raw))
            i += 1
            continue
        item = _ITEM.match(raw)
        if item:
            entry, problem = _parse_item(item)
            if entry is not None and entry.signature is not None:
                named += len(entry.signature.seq)
                if named > MAX_SEQS_PER_DOCUMENT:
                    entry, problem = None, OVER_BUDGET
            if entry is None:
                problems.append((i + 1, problem or "malformed entry"))
                blocks.append(Line(raw))
                i += 1
                continue
            j = i + 1
            while j < len(lines) and _CONTINUATION.match(lines[j]):
                j += 1
            blocks.append(replace(entry, continuation=tuple(lines[i + 1 : j])))
            i = j
            continue
        blocks.append(Line(raw))
        i += 1
    return Document(tuple(blocks), frontmatter, final_newline, newline, bom, tuple(problems))


def _parse_item(item: re.Match[str]) -> tuple[Entry | None, str | None]:
    marker, pad, rest = item.group("marker"), item.group("pad"), item.group("rest")
    if not rest.startswith("<seq"):
        if rest.startswith("<") and re.match(r"^<[A-Za-z_]+=", rest):
            return None, "signature must start with <seq="
        return Entry(rest, None, (), marker, pad, ""), None
    match = SIGNATURE_AT_START.match(rest)
    if not match:
        return None, "unterminated signature (missing '>')"
    try:
        signature = Signature.parse(match.group(0))
    except FormatError as err:
        return None, f"malformed signature: {err}"
    after = rest[match.end() :]
    text = after.lstrip(" \t")
    sep = after[: len(after) - len(text)]
    text, link = _split_link(text, signature)
    return Entry(text, signature, (), marker, pad, sep, link), None


def make_entry(signature: Signature, text: str, link: str | None = None) -> Entry:
    """An entry as memd writes it; extra lines become indented continuation.
    ``link``: the base of its ``src`` link (see ``Entry``), None for none."""
    first, *rest = text.strip().splitlines() or [""]
    entry = Entry(first.strip(), signature, tuple("  " + line.strip() for line in rest if line.strip()))
    return entry if link is None else with_link(entry, link)


def entry_json(located: LocatedEntry) -> dict[str, object]:
    """The stable JSON form of an entry, as ``--json`` outputs print it."""
    signature = located.entry.signature
    return {
        "line": located.line,
        "end_line": located.end_line,
        "headings": list(located.headings),
        "seq": str(signature.seq) if signature else None,
        "seqs": list(signature.seq) if signature else [],
        "time": signature.time if signature else None,
        "source": signature.source if signature else None,
        "src": signature.src if signature else None,
        "meta": dict(signature.extra) if signature else {},
        "text": located.entry.full_text,
    }
