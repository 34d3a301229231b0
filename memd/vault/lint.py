"""``memd lint``: every problem in the vault's files as ``path:line: message``."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memd.core.atomic import read_text
from memd.core.document import Document, parse_document
from memd.core.entry import Entry
from memd.core.errors import DocumentError, FormatError
from memd.core.layout import DOCUMENT_KINDS
from memd.core.signature import check_meta
from memd.core.timeutil import parse_time
from memd.core.yamlio import FrontmatterError
from memd.vault.state import highest_seq, read_state
from memd.vault.vault import Vault

_DATE_KEYS = ("created", "updated", "date")
_DATE_LIKE = re.compile(r"^\s*\d{1,4}-\d{1,2}-\d{1,2}")
_AT_LINE = re.compile(r"\(at line (\d+), column \d+\)")


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    message: str
    severity: str = "error"  # "error" fails lint; "warning" is only shown

    def __str__(self) -> str:
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{self.path}:{self.line}: {prefix}{self.message}"


def lint_vault(vault: Vault, paths: list[Path] | None = None) -> list[Problem]:
    """Check the given files (default: every Markdown file that is memory) and state.json."""
    if paths is None:
        rels = [vault.rel_of(p) for p in vault.documents()]
    else:
        rels = [vault.rel(p) for p in paths if p.suffix.lower() in (".md", ".markdown")]
    problems: list[Problem] = []
    seen: dict[int, str] = {}
    for rel in rels:
        kind = vault.kind(rel)
        if kind not in DOCUMENT_KINDS:
            # Named, but not memory (a hidden folder, the inbox, an ignore pattern): memd never
            # reads it, so it cannot break the vault. Said, so "no problems" claims nothing of it.
            problems.append(Problem(rel, 1, "not memory memd reads (hidden, inbox or ignored): not checked", "warning"))
            continue
        if kind == "source":
            try:
                problems += _lint_secrets(rel, read_text(vault.root / rel, rel))
            except DocumentError as err:
                problems.append(Problem(err.path, err.line, err.message))
        else:
            problems += _lint_document(vault, vault.root / rel, kind, seen)
    if paths is None:
        problems += _lint_layout(vault)
        problems += _lint_links(vault)
        problems += _lint_wikilinks(vault, rels)
        problems += _lint_state(vault)
        problems += _lint_acks(vault)
        problems += _lint_settings(vault)
    return problems


def _lint_settings(vault: Vault) -> list[Problem]:
    """A key in config.toml memd does not know (a typo, ``buffer_token``) is ignored by
    every command; said here, with the setting it is closest to."""
    from difflib import get_close_matches

    from memd.core.config_edit import effective_settings
    from memd.core.errors import MemdError

    shown = vault.rel(vault.config_path)
    try:
        settings = effective_settings(vault.config_path, shown_as=shown)
    except (MemdError, OSError, ValueError) as err:
        # Every command that reads the settings stops on it: an error, where it is.
        where = _AT_LINE.search(str(err))
        message = str(err).removeprefix(f"{vault.config_path}: ")
        return [Problem(shown, int(where.group(1)) if where else 1, message)]
    known = [s.key for s in settings if s.known]
    problems = []
    for setting in settings:
        if setting.known:
            continue
        path, _, line = setting.origin.rpartition(":")
        near = get_close_matches(setting.key, known, n=1, cutoff=0.8)
        hint = f" (did you mean {near[0]}?)" if near else " (`memd config list` shows the settings)"
        path, number = (path, int(line)) if line.isdigit() else (setting.origin, 1)
        problems.append(Problem(path, number, f"{setting.key} is no memd setting; it is ignored{hint}", "warning"))
    return problems


def _lint_size(vault: Vault, name: str, document: Document) -> list[Problem]:
    """A topic past ``consolidate.split_tokens`` (the consolidation that next
    touches it splits it): worth knowing, never an error."""
    from memd.core.tokens import count_tokens

    entries = [block for block in document.blocks if isinstance(block, Entry)]
    tokens = sum(count_tokens(entry.full_text) for entry in entries)
    # One entry is never cut: a topic of one long entry stays as it is, and a warning
    # that nothing can answer would stand for good.
    if tokens <= vault.config.split_tokens or len(entries) < 2:
        return []
    return [
        Problem(
            name,
            1,
            f"{tokens} tokens, over consolidate.split_tokens ({vault.config.split_tokens}): "
            "the next consolidation that touches it splits it",
            "warning",
        )
    ]


def _lint_document(vault: Vault, path: Path, kind: str, seen: dict[int, str]) -> list[Problem]:
    name = vault.rel_of(path)
    try:
        text = read_text(path, name)
    except DocumentError as err:
        return [Problem(err.path, err.line, err.message)]
    is_topic = kind == "topic"
    if is_topic and not text.strip():
        return [Problem(name, 1, "empty file where a topic document is expected")]
    document = parse_document(text)
    problems = [Problem(name, line, message) for line, message in document.problems]
    problems += _lint_fenced(name, document)
    problems += _lint_secrets(name, text)
    problems += _lint_frontmatter(vault, path, name, document, is_topic)
    if is_topic:
        problems += _lint_size(vault, name, document)
    if kind == "current":
        problems += _lint_ordered(name, document)
    for located in document.signed():
        signature = located.entry.signature
        assert signature is not None
        if signature.time:
            try:
                parse_time(signature.time)
            except FormatError as err:
                problems.append(Problem(name, located.line, str(err)))
        for key, value in signature.extra:
            try:
                check_meta(key, value)
            except FormatError as err:
                problems.append(Problem(name, located.line, f"{err}; memd ignores this mark"))
        for seq in signature.seq:
            where = f"{name}:{located.line}"
            if seq in seen:
                problems.append(Problem(name, located.line, f"duplicate seq {seq} (also at {seen[seq]})"))
            else:
                seen[seq] = where
    return problems


def _lint_ordered(name: str, document: Document) -> list[Problem]:
    """A numbered item in the buffer ("1. Renew the contract") is no entry: memd
    neither signs, searches nor files it, so it would stay there for good."""
    from memd.core.document import Line

    problems = []
    fence = ""  # inside a fenced block, its fence: what is there is code, not a list
    for line, block in document.located():
        if not isinstance(block, Line):
            continue
        marks = _FENCE_MARK.match(block.raw)
        if marks and not fence:
            fence = marks.group(1)
        elif marks and marks.group(1).startswith(fence) and not marks.group(2).strip():
            fence = ""  # only a bare fence as long as the opening one, of its character, closes it
        elif not fence and _ORDERED.match(block.raw):
            problems.append(
                Problem(
                    name,
                    line,
                    "a numbered item is no entry: memd neither files nor finds it; write it as '- …'",
                    "warning",
                )
            )
    return problems


_ORDERED = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+\S")
_FENCE_MARK = re.compile(r"^\s{0,3}(`{3,}|~{3,})(.*)$")


def duplicate_places(vault: Vault, limit: int = 3) -> list[str]:
    """``path:line`` of the first entries whose seq another entry holds too."""
    seen: dict[int, str] = {}
    places: list[str] = []
    for path in vault.entry_files():
        rel = vault.rel_of(path)
        try:
            document = parse_document(read_text(path, rel))
        except DocumentError:
            continue
        for located in document.signed():
            assert located.entry.signature is not None
            where = f"{rel}:{located.line}"
            for seq in located.entry.signature.seq:
                if seq in seen:
                    places += [p for p in (seen[seq], where) if p not in places]
                    break
                seen[seq] = where
            if len(places) >= limit:
                return places[:limit]
    return places


_SIGNED = re.compile(r"^[-*+][ \t]+<seq=")


def _lint_fenced(name: str, document: Document) -> list[Problem]:
    """A signed line inside a code fence is text, not an entry: memd keeps it as it
    is (and counts its seq as taken), but never files it. Fences as the parser sees
    them (``core.document.Fence``), which decides what is an entry."""
    from memd.core.document import Fence, Line

    problems: list[Problem] = []
    fences = Fence()
    for number, block in document.located():
        if not isinstance(block, Line):
            continue  # a heading or an entry: never in a fence, never a fence's line
        inside = fences.mark
        fences.read(block.raw)
        if inside is not None and fences.mark is not None and _SIGNED.match(block.raw):
            problems.append(
                Problem(
                    name,
                    number,
                    f"a signed line inside a {inside} fence is text, not an entry; "
                    "close the fence above it to make it one",
                    "warning",
                )
            )
    return problems


def _lint_secrets(name: str, text: str) -> list[Problem]:
    from memd.core.redact import find_secrets

    return [Problem(name, line, f"possible secret ({kind})") for line, kind in find_secrets(text)]


def _lint_frontmatter(vault: Vault, path: Path, name: str, document: Document, is_topic: bool) -> list[Problem]:
    if document.frontmatter is None:
        first = document.blocks[0].lines()[0] if document.blocks else ""
        if first == "---":
            return [Problem(name, 1, "frontmatter is not closed by a --- line")]
        if is_topic:
            message = "no frontmatter yet (memd adds id and summary when it next updates this topic)"
            return [Problem(name, 1, message, "warning")]
        return []
    try:
        data = document.frontmatter.data
    except FrontmatterError as err:
        return [Problem(name, 1 + err.line, str(err))]
    problems = []
    if is_topic and "id" in data and str(data["id"]) != vault.doc_id(path):
        problems.append(Problem(name, 1, f"frontmatter id {data['id']!r} does not match the file name", "warning"))
    for key in _DATE_KEYS:
        value = data.get(key)
        if isinstance(value, str) and _DATE_LIKE.match(value):
            try:
                parse_time(value)
            except FormatError:
                message = f"frontmatter {key} {value[:40]!r} is not a real date or time; memd reads it as text"
                problems.append(Problem(name, 1, message, "warning"))
    return problems


def _lint_layout(vault: Vault) -> list[Problem]:
    """The files memd writes, where something else stands in their place: every
    write stops on it, and the file walk (what lint reads) passes over it."""
    problems = []
    if vault.current.exists() and not vault.current.is_file():
        what = "is a folder" if vault.current.is_dir() else "is not a regular file (a pipe or a device?)"
        problems.append(Problem("CURRENT.md", 1, f"{what}, expected a Markdown file: memd adds every entry there"))
    for folder in (vault.topics_dir, vault.sources_dir):
        if folder.exists() and not folder.is_dir():
            problems.append(Problem(vault.rel_of(folder), 1, "is a file, expected the folder memd files memory in"))
    return problems


def _lint_links(vault: Vault) -> list[Problem]:
    """Symbolic links where memory would be: memd never follows them (a link
    may lead out of the vault), so say why their content is not found."""
    links = [
        Problem(rel, 1, "a symbolic link; memd does not follow links, so this is not memory", "warning")
        for rel in vault.links()
        if vault.kind(rel) in DOCUMENT_KINDS
    ]
    misnamed = [
        Problem(rel, 1, "the name is not valid UTF-8, so memd skips it: rename it to make it memory", "warning")
        for rel in vault.misnamed()
    ]
    return links + misnamed


_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:[#|][^\]\n]*)?\]\]")  # a target holds no bracket


def _lint_wikilinks(vault: Vault, rels: list[str]) -> list[Problem]:
    """A ``[[link]]`` to no document of the vault (Obsidian finds a note by its
    file name): an error in memd's ``related``, which should never point at a
    topic that is gone; a warning in a person's lines, who may mean to write it later."""
    names = {Path(rel).stem.lower() for rel in rels} | {rel.lower().removesuffix(".md") for rel in rels}
    problems = []
    for rel in rels:
        if vault.kind(rel) not in ("topic", "note"):
            continue
        try:
            text = read_text(vault.root / rel, rel)
        except DocumentError:
            continue
        lines = text.splitlines()
        opened = bool(lines) and lines[0].strip() == "---"
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), 0) if opened else 0
        listing = False  # inside the frontmatter's `related:` list, which memd writes
        for number, line in enumerate(lines, start=1):
            if 1 < number <= end:
                key = line.split(":", 1)[0] if line[:1] not in (" ", "-", "\t") else None
                listing = key == "related" if key is not None else listing
            memds = listing and 1 < number <= end
            for match in _WIKILINK.finditer(line):
                target = match.group(1).strip()
                if target.lower() in names or target.lower().removesuffix(".md") in names:
                    continue
                severity = "error" if memds else "warning"
                problems.append(Problem(rel, number, f"[[{target}]] links to no document in the vault", severity))
    return problems


def _lint_acks(vault: Vault) -> list[Problem]:
    from memd.vault import acks

    why = acks.problem(vault)
    if why is None:
        return []
    where, _, message = why.partition(": ")
    path, _, line = where.partition(":")
    return [Problem(path, int(line or 1), message, "warning")]


def _lint_state(vault: Vault) -> list[Problem]:
    state, why = read_state(vault)
    if why:
        return [Problem(".memd/state.json", 1, f"{why}; memd rebuilds it from the files on the next write", "warning")]
    top = highest_seq(vault)
    if state.next_seq <= top:
        return [
            Problem(
                ".memd/state.json",
                1,
                f"next_seq {state.next_seq} is not above the highest seq in use ({top}); the next write repairs it",
                "warning",
            )
        ]
    return []
