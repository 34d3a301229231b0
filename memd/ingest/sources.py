"""Verbatim copies of ingested inputs under ``sources/YYYY/MM/<slug>.md``.

A source copy starts with frontmatter (``original`` file name, ``sha256`` of
the original bytes, ``format``, ``ingested`` time, ``turns``, ``redacted``
secret count). A note follows as written (its own frontmatter, if any, shown
as a fenced ``yaml`` block of the same height, so line numbers are kept).
A transcript becomes one list item per turn, under a heading per
conversation or session:

    - <a id="t12"></a>**Caroline** (2023-05-08T13:56:00Z): text of the turn
      a second line of the same turn, indented

The ``<a id>`` anchor is invisible in Obsidian and on GitHub and makes
``sources/2026/11/chat.md#t12`` a working link; entries extracted from the
turn point at it with ``src=``. The ``sha256`` makes re-ingesting the same
file a no-op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..vault import Vault
from ..yamlio import dump_frontmatter
from .formats import Parsed

_SHA = re.compile(r'^sha256:\s*"?([0-9a-f]{64})"?\s*$', re.MULTILINE)
_SPEAKER_UNSAFE = re.compile(r"[*_`\[\]<>#|\\]")


@dataclass(frozen=True)
class SourceCopy:
    rel: str  # vault-relative path, e.g. sources/2026/11/chat-3.md
    text: str
    anchors: tuple[str, ...]  # transcripts: one anchor per turn (t1, t2, ...)
    note_offset: int = 0  # notes: source line of the note's line 1, minus 1


def find_ingested(vault: Vault, sha256: str) -> str | None:
    """The source copy of an input with this sha256, if one was ingested."""
    if not vault.sources_dir.is_dir():
        return None
    for path in sorted(vault.sources_dir.rglob("*.md")):
        try:
            with path.open("rb") as handle:
                head = handle.read(4096).decode("utf-8", "replace")
        except OSError:
            continue
        if not head.startswith("---"):
            continue
        match = _SHA.search(head.split("\n---", 1)[0])
        if match and match.group(1) == sha256:
            return vault.rel(path)
    return None


def reserve_path(vault: Vault, name: str, stamp: str) -> str:
    """A fresh ``sources/YYYY/MM/<slug>.md`` for an input called ``name``."""
    year, month = stamp[:4], stamp[5:7]
    slug = re.sub(r"[^a-z0-9]+", "-", Path(name).stem.lower()).strip("-")[:60].strip("-") or "source"
    folder = vault.sources_dir / year / month
    candidate, n = folder / f"{slug}.md", 2
    while candidate.exists():
        candidate, n = folder / f"{slug}-{n}.md", n + 1
    return f"sources/{year}/{month}/{candidate.name}"


def render(rel: str, parsed: Parsed, meta: dict[str, object]) -> SourceCopy:
    head = "---\n" + dump_frontmatter(meta) + "---\n"
    if parsed.note is not None:
        return _render_note(rel, parsed.note, head)
    lines = [head.rstrip("\n"), "", f"# {meta.get('original', rel)}", ""]
    anchors: list[str] = []
    group: str | None = None
    for number, turn in enumerate(parsed.turns, start=1):
        if turn.group and turn.group != group:
            group = turn.group
            lines += [*([""] if lines[-1] else []), f"## {_one_line(group)}", ""]
        anchor = f"t{number}"
        anchors.append(anchor)
        when = f" ({turn.time})" if turn.time else ""
        first, *rest = [line.rstrip() for line in turn.text.strip().splitlines() if line.strip()] or [""]
        lines.append(f'- <a id="{anchor}"></a>**{_speaker(turn.speaker)}**{when}: {first}')
        # Continuation lines must be indented and non-blank to stay in the item.
        lines += ["  " + line for line in rest]
    return SourceCopy(rel, "\n".join(lines) + "\n", tuple(anchors))


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
