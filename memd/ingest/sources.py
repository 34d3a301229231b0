"""Verbatim copies of ingested inputs under ``sources/YYYY/MM/<slug>.md``.

A source copy starts with frontmatter (``original`` file name, ``sha256`` of
the latest original bytes, ``format``, ``ingested`` time, ``turns``,
``redacted`` secret count; for transcripts that name their conversations,
``threads``: one identity per ``##`` section, in order). A note follows as
written (its own frontmatter, if any, shown as a fenced ``yaml`` block of the
same height, so line numbers are kept). A transcript becomes one list item
per turn, under a heading per conversation or session:

    - **Caroline** (2023-05-08T13:56:00Z): text of the turn
      a second line of the same turn, indented ^t12

The ``^t12`` at the end of the item is an Obsidian block id: the link
``sources/2026/11/chat.md#^t12`` opens at the turn, and entries extracted from
it point there with ``src=``. Copies written before block ids carry an HTML
anchor at the start instead (``- <a id="t12"></a>**Caroline** ...``); they
are read the same way and ``locate`` resolves both forms.

Re-importing: the same bytes again change nothing (``sha256``). A newer
export of the same conversations, or a session captured again as it grew,
updates the copy in place: each turn is known by its thread, speaker, time
and text, only turns not in the copy are added (after the last turn of their
conversation, or as a new section), and only they become entries.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memd.core.errors import FormatError
from memd.core.yamlio import dump_frontmatter, load_frontmatter
from memd.ingest.turns import Parsed, Turn
from memd.vault.vault import Vault

_SHA = re.compile(r'^sha256:\s*"?([0-9a-f]{64})"?\s*$', re.MULTILINE)
_SPEAKER_UNSAFE = re.compile(r"[*_`\[\]<>#|\\]")
_ITEM = re.compile(r'^- (?:<a id="t(?P<old>\d+)"></a>)?\*\*(?P<speaker>[^*\n]*)\*\*(?: \((?P<time>[^()\n]*)\))?: ')
_BLOCK = re.compile(r" \^t(?P<n>\d+)$")
_HEAD_BYTES = 4096


@dataclass(frozen=True)
class SourceCopy:
    rel: str  # vault-relative path, e.g. sources/2026/11/chat-3.md
    text: str
    anchors: tuple[str, ...]  # transcripts: one block id per turn (t1, t2, ...)
    note_offset: int = 0  # notes: source line of the note's line 1, minus 1


@dataclass
class _Section:
    heading: str | None
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class KnownCopy:
    """An existing transcript copy, as far as re-importing needs it."""

    rel: str
    text: str
    data: dict[str, Any]
    keys: Counter[str]  # turn keys in the copy (a turn said twice counts twice)
    last_anchor: int
    threaded: bool  # keys include the thread (the copy's sections map to ``threads``)


# -- finding earlier copies ----------------------------------------------------------


def _heads(vault: Vault) -> Iterable[tuple[str, str]]:
    """(rel, frontmatter text) of every source copy."""
    for rel in vault.walk():
        if not rel.startswith("sources/") or not rel.endswith(".md"):
            continue
        try:
            with (vault.root / rel).open("rb") as handle:
                head = handle.read(_HEAD_BYTES).decode("utf-8", "replace")
                if not head.startswith("---"):
                    continue
                while "\n---" not in head[3:]:
                    more = handle.read(1 << 16).decode("utf-8", "replace")
                    if not more:
                        break
                    head += more
        except OSError:
            continue
        yield rel, head[4:].split("\n---", 1)[0]


def find_ingested(vault: Vault, sha256: str) -> str | None:
    """The source copy of an input with this sha256, if one was ingested."""
    for rel, head in _heads(vault):
        match = _SHA.search(head)
        if match and match.group(1) == sha256:
            return rel
    return None


def find_thread_copy(vault: Vault, parsed: Parsed, original: str) -> str | None:
    """The copy that holds earlier turns of the same conversations, if any:
    one whose ``threads`` share a thread with ``parsed``; else, for copies
    written before threads were recorded, one of the same format and name."""
    threads = {turn.thread for turn in parsed.turns if turn.thread}
    if not threads:
        return None
    best: tuple[int, str] | None = None
    legacy: str | None = None
    for rel, head in _heads(vault):
        if f"{parsed.format}" not in head:
            continue
        try:
            data = load_frontmatter(head)
        except FormatError:
            continue
        if data.get("format") != parsed.format:
            continue
        known = data.get("threads")
        if isinstance(known, list):
            shared = len(threads & {str(t) for t in known})
            if shared and (best is None or shared >= best[0]):
                best = (shared, rel)
        elif data.get("original") == original:
            legacy = rel
    return best[1] if best else legacy


def read_copy(vault: Vault, rel: str) -> KnownCopy | None:
    try:
        text = (vault.root / rel).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    head, sections = _split(text)
    try:
        data = load_frontmatter("\n".join(head[1 : head.index("---", 1)])) if head and head[0] == "---" else {}
    except (FormatError, ValueError):
        return None
    threads = [str(t) for t in data.get("threads") or []] if isinstance(data.get("threads"), list) else []
    headed = [s for s in sections if s.heading is not None]
    threaded = bool(threads) and (len(threads) == len(headed) or (len(threads) == 1 and not headed))
    keys: Counter[str] = Counter()
    last = 0
    for index, section in enumerate(headed if headed else sections):
        thread = threads[index] if threaded and threads else ""
        for lines, anchor in _items(section.lines):
            keys[turn_key(thread, lines)] += 1
            last = max(last, anchor)
    return KnownCopy(rel, text, data, keys, last, threaded)


# -- rendering -----------------------------------------------------------------------


def turn_lines(turn: Turn) -> list[str]:
    """A turn's list item as rendered, without its block id."""
    when = f" ({turn.time})" if turn.time else ""
    first, *rest = [line.rstrip() for line in turn.text.strip().splitlines() if line.strip()] or [""]
    # Continuation lines must be indented and non-blank to stay in the item.
    return [f"- **{_speaker(turn.speaker)}**{when}: {first}", *("  " + line for line in rest)]


def turn_key(thread: str | None, lines: Sequence[str]) -> str:
    return hashlib.sha1("\x1f".join([thread or "", *lines]).encode("utf-8", "surrogatepass")).hexdigest()


def with_anchor(lines: list[str], number: int) -> list[str]:
    return [*lines[:-1], f"{lines[-1]} ^t{number}"]


def render(rel: str, parsed: Parsed, meta: dict[str, object], start: int = 1) -> SourceCopy:
    head = "---\n" + dump_frontmatter(meta) + "---\n"
    if parsed.note is not None:
        return _render_note(rel, parsed.note, head)
    title = parsed.title or str(meta.get("original", rel))
    lines = [head.rstrip("\n"), "", f"# {_one_line(title)}", ""]
    anchors: list[str] = []
    section: tuple[str | None, str | None] | None = None
    for number, turn in enumerate(parsed.turns, start=start):
        if turn.group and (turn.thread, turn.group) != section:
            section = (turn.thread, turn.group)
            lines += [*([""] if lines[-1] else []), f"## {_one_line(turn.group)}", ""]
        anchors.append(f"t{number}")
        lines += with_anchor(turn_lines(turn), number)
    return SourceCopy(rel, "\n".join(lines) + "\n", tuple(anchors))


def merge(copy: KnownCopy, turns: Sequence[tuple[Turn, int]], meta: dict[str, object]) -> str:
    """The copy with ``turns`` (each with its block id number) added after the
    last turn of its conversation, or in a new section, and ``meta`` merged
    into its frontmatter (``threads`` grows with the new conversations)."""
    head, sections = _split(copy.text)
    threads = [str(t) for t in copy.data.get("threads") or []] if copy.threaded else []
    headed = [s for s in sections if s.heading is not None]
    for turn, number in turns:
        lines = with_anchor(turn_lines(turn), number)
        target: _Section | None = None
        if copy.threaded and turn.thread in threads:
            target = headed[threads.index(turn.thread)] if headed else sections[-1]
        elif not turn.group and not headed:
            target = sections[-1]
        elif not copy.threaded and turn.group:
            target = next((s for s in headed if s.heading == f"## {_one_line(turn.group)}"), None)
        if target is None:
            target = _Section(f"## {_one_line(turn.group or 'Conversation')}", [""])
            sections.append(target)
            headed.append(target)
            if copy.threaded and turn.thread:
                threads.append(turn.thread)
        while target.lines and not target.lines[-1].strip():
            target.lines.pop()
        target.lines += lines
    data = {**copy.data, **meta}
    if copy.threaded:
        data["threads"] = threads
    out = ["---", *dump_frontmatter(data).splitlines(), "---"]
    out += head[head.index("---", 1) + 1 :] if head and head[0] == "---" else head
    for section in sections:
        if section.heading is not None:
            out += [*([""] if out and out[-1] else []), section.heading]
        out += section.lines
    return "\n".join(out).rstrip("\n") + "\n"


def locate(vault: Vault, src: str) -> tuple[str, int] | None:
    """(path, 1-based line) that a ``src`` reference points at: ``#L12``,
    ``#^t12`` (block id) or ``#t12`` (the HTML anchor of older copies, or a
    block id). For LoCoMo refs (``D1:3;sources/...#t3``) the last part counts."""
    ref = src.split(";")[-1]
    rel, _, anchor = ref.partition("#")
    if not anchor:
        return None
    try:
        lines = (vault.root / rel).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError):
        return None
    if anchor.startswith("L") and anchor[1:].isdigit():
        wanted = int(anchor[1:])
        return (rel, wanted) if 1 <= wanted <= len(lines) else None
    number = anchor.removeprefix("^").removeprefix("t")
    if not number.isdigit():
        return None
    start: int | None = None
    for index, line in enumerate(lines, start=1):
        if line.startswith("- "):
            start = index
            if f'<a id="t{number}"></a>' in line:
                return rel, index
        elif not line.startswith("  "):
            start = None
        if line.endswith(f" ^t{number}") and start is not None:
            return rel, start
    return None


# -- internals -----------------------------------------------------------------------


def _split(text: str) -> tuple[list[str], list[_Section]]:
    """(lines up to the first turn or ``##`` heading, sections); the first
    section has no heading and holds any turns before the first heading."""
    lines = text.rstrip("\n").split("\n")
    head_end = 0
    if lines and lines[0] == "---":
        close = next((i for i in range(1, len(lines)) if lines[i] == "---"), None)
        head_end = close + 1 if close is not None else 0
    while head_end < len(lines) and not lines[head_end].startswith(("- ", "## ")):
        head_end += 1
    head = lines[:head_end]
    sections = [_Section(None)]
    for line in lines[head_end:]:
        if line.startswith("## "):
            sections.append(_Section(line))
        else:
            sections[-1].lines.append(line)
    if len(sections) > 1 and not any(line.strip() for line in sections[0].lines):
        sections.pop(0)
    return head, sections


def _items(lines: list[str]) -> Iterable[tuple[list[str], int]]:
    """(item lines without block id or old anchor, anchor number) of each turn."""
    current: list[str] = []
    for line in [*lines, ""]:
        if current and line.startswith("  ") and line.strip():
            current.append(line)
            continue
        if current:
            yield _clean(current)
            current = []
        if _ITEM.match(line):
            current = [line]


def _clean(lines: list[str]) -> tuple[list[str], int]:
    lines = list(lines)
    number = 0
    block = _BLOCK.search(lines[-1])
    if block:
        number = int(block.group("n"))
        lines[-1] = lines[-1][: block.start()]
    head = _ITEM.match(lines[0])
    if head and head.group("old"):
        number = number or int(head.group("old"))
        lines[0] = lines[0].replace(f'<a id="t{head.group("old")}"></a>', "", 1)
    return lines, number


def _render_note(rel: str, note: str, head: str) -> SourceCopy:
    body = note if note.endswith("\n") else note + "\n"
    lines = body.split("\n")
    if lines[0].strip() == "---":
        close = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
        if close is not None:
            lines[0], lines[close] = "```yaml", "```"
            body = "\n".join(lines)
    text = head + body
    return SourceCopy(rel, text, (), head.count("\n"))


def _speaker(name: str) -> str:
    return _SPEAKER_UNSAFE.sub("", " ".join(name.split())) or "unknown"


def _one_line(text: str) -> str:
    return " ".join(text.split())
