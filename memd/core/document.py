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

from memd.core.entry import Entry, split_link, with_link
from memd.core.errors import FormatError
from memd.core.newlines import newline_of, split_lines
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
_CONTINUATION = re.compile(r"^[ \t]+\S")
_KEYED = re.compile(r"^<[A-Za-z_]+=")


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


Block = Line | Heading | Entry


def linked(document: Document, base: str) -> Document:
    """``document`` with every signed entry that can have a ``src`` link
    linking from ``base`` (memd's own files: CURRENT.md, topics)."""
    blocks = tuple(with_link(b, base) if isinstance(b, Entry) else b for b in document.blocks)
    return document if blocks == document.blocks else replace(document, blocks=blocks)


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

    def signed_entries(self) -> Iterator[Entry]:
        """The signed entries in order, without their places (``signed`` counts lines and
        headings; a proof over a 40,000-entry buffer needs only the seqs and words)."""
        for block in self.blocks:
            if isinstance(block, Entry) and block.signature is not None:
                yield block

    def title(self) -> str | None:
        for block in self.blocks:
            if isinstance(block, Heading):
                return block.title
        return None


FENCE_MARKS = ("```", "~~~")


class Fence:
    """Where the parser sees a fenced block, for a reader that must see it the same way
    (``memd lint``, fed the document's lines in order): a line that opens with three
    backticks or tildes opens one, and inside, the next line that opens with the same
    three closes it. What is inside is kept as lines of text, never read as entries."""

    def __init__(self) -> None:
        self.mark: str | None = None  # the open block's three characters

    def read(self, raw: str) -> bool:
        """Whether ``raw`` is a line of a fenced block, its fences included."""
        if self.mark is not None:
            if raw.startswith(self.mark):
                self.mark = None
            return True
        if raw.startswith(FENCE_MARKS):
            self.mark = raw[:3]
            return True
        return False


# An item's parse by its line and continuation lines (``parse_document``'s ``known``).
Known = dict[tuple[str, tuple[str, ...]], tuple[Entry | None, str | None]]


def parse_document(text: str, known: Known | None = None) -> Document:
    """Parse Markdown text; never raises. Malformed signatures become plain
    lines and are listed in ``problems`` as (line, message) for ``memd lint``.

    ``known``: items parsed before (by their lines), filled as it goes: a
    reader of many versions of a file (a walk through history) parses each
    item once. An item's parse depends on its lines alone, and entries are
    immutable, so the versions may share them."""
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    newline = newline_of(text)
    lines = split_lines(text)
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
    fences = Fence()
    i = start
    while i < len(lines):
        raw = lines[i]
        if (fences.mark is not None or raw.startswith(FENCE_MARKS)) and fences.read(raw):
            blocks.append(Line(raw))
            i += 1
            continue
        if _HEADING.match(raw):
            blocks.append(Heading(raw))
            i += 1
            continue
        item = _ITEM.match(raw)
        if item:
            j = i + 1
            while j < len(lines) and _CONTINUATION.match(lines[j]):
                j += 1
            continuation = tuple(lines[i + 1 : j])
            if known is None:
                entry, problem = _parse_item(item, continuation)
            else:
                parsed = known.get((raw, continuation))
                if parsed is None:
                    parsed = known[raw, continuation] = _parse_item(item, continuation)
                entry, problem = parsed
            if entry is not None and entry.signature is not None:
                named += len(entry.signature.seq)
                if named > MAX_SEQS_PER_DOCUMENT:
                    entry, problem = None, OVER_BUDGET
            if entry is None:
                problems.append((i + 1, problem or "malformed entry"))
                blocks.append(Line(raw))
                i += 1
                continue
            blocks.append(entry)
            i = j
            continue
        blocks.append(Line(raw))
        i += 1
    return Document(tuple(blocks), frontmatter, final_newline, newline, bom, tuple(problems))


def _parse_item(item: re.Match[str], continuation: tuple[str, ...]) -> tuple[Entry | None, str | None]:
    marker, pad, rest = item.group("marker", "pad", "rest")
    if not rest.startswith("<seq"):
        if rest.startswith("<") and _KEYED.match(rest):
            return None, "signature must start with <seq="
        return Entry(rest, None, continuation, marker, pad, ""), None
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
    text, link = split_link(text, signature)
    return Entry(text, signature, continuation, marker, pad, sep, link), None


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
