"""The vault's layout as pure rules: which paths are memory, and what they are.

Every part of memd that asks "is this file memory?" (the index, grep, the
daemon, git staging, seq allocation, verify, lint) asks here, so the answer is
the same everywhere. See ARCHITECTURE.md, "The vault".

The rule: every Markdown file in the vault is memory, except what lies in
``.git/``, ``.obsidian/``, ``.memd/``, ``inbox/`` (and other hidden or tool
folders), scratch files, and notes the person lists in ``[vault] ignore``.
Memory comes in four kinds:

- ``current``: ``CURRENT.md``, the buffer memd appends to;
- ``topic``: ``topics/**.md``, the documents consolidation writes;
- ``source``: ``sources/**.md``, verbatim copies of ingested files;
- ``note``: any other Markdown file (``Untitled.md``, ``people/sam.md``): the
  person's own, indexed, linted and committed as a hand edit, never rewritten.

memd manages (adopts unsigned items in, consolidates into) only CURRENT.md and
topics; signed entries count for seqs and verification in notes too, so an
entry moved into a note by hand is not "lost". A symbolic link is never
followed: the vault walk skips links, and reads refuse them.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CURRENT_NAME = "CURRENT.md"
# Folders whose contents never matter to memd: git, editors, memd's own
# derived files (index, locks, logs, journal, daemon status).
IGNORED_DIRS = frozenset({".git", ".obsidian", ".trash", ".memd", ".stfolder", "node_modules", "__pycache__"})
DOCUMENT_KINDS = frozenset({"current", "topic", "source", "note"})
MARKDOWN_SUFFIXES = (".md", ".markdown")
INBOX = "inbox"
# Where an interrupted sync leaves its journal (memd/sync/apply.py), relative to
# ``.memd/``: every verb checks it with one stat, without the sync machinery.
SYNC_JOURNAL = "journal/sync.json"
# ... and an interrupted consolidation or forget (memd/vault/journal.py).
PENDING_JOURNAL = "journal/pending.json"
# What memd versions: the memory itself and the settings that shape it
# (notes elsewhere in the vault are found by ``classify``, see history.py).
VERSIONED = ("CURRENT.md", "topics", "sources", ".memd/config.toml", ".memd/state.json", ".gitignore")
# Names Windows refuses for a file whatever its extension (``aux.md`` too).
WINDOWS_RESERVED = frozenset(
    {"con", "prn", "aux", "nul", *(f"com{i}" for i in "0123456789¹²³"), *(f"lpt{i}" for i in "0123456789¹²³")}
)
_SCRATCH_SUFFIXES = (".swp", ".swx", ".swo", "~", ".tmp", ".temp", ".part", ".crdownload", ".memd-tmp", ".reason.txt")
_SCRATCH_PREFIXES = (".", "~$", "#", ".goutputstream-")


# What editors, merge tools and downloads leave beside a file, as gitignore patterns:
# written into a new vault's .gitignore (so `git add -A` skips them too) and checked
# by ``scratch`` wherever memd commits, so a vault whose .gitignore predates them
# never commits them either.
SCRATCH_PATTERNS = (
    "*~",  # emacs, gedit backups
    "*.swp",  # vim swap files
    "*.swo",
    "*.swx",
    ".*.sw?",
    ".#*",  # emacs lock files
    "\\#*#",  # emacs auto-saves (escaped: a line starting "#" is a comment)
    "4913",  # vim's probe of a folder
    "*.tmp",
    "*.temp",
    "*.part",
    "*.crdownload",
    "*.orig",  # merge tools
    "*.rej",
    ".goutputstream-*",  # GNOME
    "~$*",  # office lock files
    ".DS_Store",
)


def is_scratch(name: str) -> bool:
    """Editor swap files, temp files, partial downloads and hidden files."""
    return name.startswith(_SCRATCH_PREFIXES) or name.endswith(_SCRATCH_SUFFIXES) or name == "4913"


def scratch(rel: str) -> bool:
    """Whether a vault-relative path is an editor's or a tool's scratch file (by
    ``SCRATCH_PATTERNS``, matched as git matches its ignore patterns, or
    ``is_scratch``): never memory, never committed."""
    name = rel.rsplit("/", 1)[-1]
    if is_scratch(name):
        return True
    return _scratch_spec().match_file(rel)


_SPEC: list[object] = []


def _scratch_spec() -> Any:
    if not _SPEC:
        import pathspec

        _SPEC.append(pathspec.GitIgnoreSpec.from_lines(SCRATCH_PATTERNS))
    return _SPEC[0]


def utf8_name(name: str) -> bool:
    """Whether a file name is UTF-8. Python holds another name's bytes as lone
    surrogates, which no index, database or commit message can store: such a
    file is not memory (``memd lint`` names it)."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def skipped_dir(name: str) -> bool:
    """A folder the vault walk never enters (hidden ones included)."""
    return name in IGNORED_DIRS or name.startswith(".")


def classify(rel: str, ignore: Sequence[str] = ()) -> str | None:
    """``current`` / ``topic`` / ``source`` / ``note`` / ``inbox`` for a
    vault-relative path memd cares about, None for everything else.
    ``ignore`` holds the person's ``[vault] ignore`` patterns (notes only)."""
    # The shape of nearly every file in a big vault, judged without splitting the
    # path: every `memd add` classifies each file to find the highest seq.
    if rel.startswith("topics/") and rel.endswith(".md") and rel.count("/") == 1 and "\\" not in rel:
        return None if is_scratch(rel[7:]) else "topic"
    parts = rel.replace("\\", "/").strip("/").split("/")
    if not parts or not parts[0] or ".." in parts or "." in parts:
        return None
    if any(skipped_dir(part) for part in parts[:-1]) or is_scratch(parts[-1]):
        return None
    if parts[0] == INBOX:
        return "inbox" if len(parts) == 2 else None
    if not parts[-1].lower().endswith(MARKDOWN_SUFFIXES):
        return None
    if parts == [CURRENT_NAME]:
        return "current"
    if parts[0] == "topics" and len(parts) > 1 and parts[-1].endswith(".md"):
        return "topic"
    if parts[0] == "sources" and len(parts) > 1:
        return "source"
    if ignore and ignored("/".join(parts), ignore):
        return None
    return "note"


def ignored(rel: str, patterns: Sequence[str]) -> bool:
    """Whether a person's ignore pattern covers ``rel`` (gitignore-like:
    ``drafts/`` is a folder anywhere, ``*.excalidraw.md`` a name anywhere,
    ``private/2024/*`` is anchored at the vault root)."""
    parts = rel.split("/")
    for raw in patterns:
        pattern = raw.strip().replace("\\", "/")
        if not pattern or pattern.startswith("#"):
            continue
        folder_only = pattern.endswith("/")
        pattern = pattern.strip("/")
        if not pattern:
            continue
        if "/" in pattern:  # anchored: the path or one of its parent folders
            prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + (0 if folder_only else 1))]
            if any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
                return True
            continue
        names = parts[:-1] if folder_only else parts
        if any(fnmatch.fnmatchcase(name, pattern) for name in names):
            return True
    return False


def holds_entries(rel: str) -> bool:
    """The files memd manages: CURRENT.md and topics. It adopts unsigned items
    only here, and consolidation writes only these."""
    return classify(rel) in ("current", "topic")


def counts_entries(rel: str, ignore: Sequence[str] = ()) -> bool:
    """Files whose signed entries count for seqs and verify: the managed ones
    and the person's notes (not sources, which hold turns, not entries)."""
    return classify(rel, ignore) in ("current", "topic", "note")


def doc_id(rel: str) -> str:
    """``topics/coffee.md`` -> ``coffee``; ``CURRENT.md`` -> ``CURRENT``; else the path."""
    if rel == CURRENT_NAME:
        return "CURRENT"
    if rel.startswith("topics/") and rel.endswith(".md"):
        return rel[len("topics/") : -len(".md")]
    return rel


def vault_root(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """Where the vault is: ``--vault``, then ``MEMD_VAULT``, then the current
    folder and its parents (the first holding ``.memd/``). Raises ``VaultError``
    for a file and ``VaultNotFound`` where there is none."""
    from memd.core.errors import VaultError, VaultNotFound

    given = explicit if explicit is not None else os.environ.get("MEMD_VAULT") or None
    if given is not None:
        path = Path(given).expanduser()
        if path.is_file():
            raise VaultError(f"{path} is a file, not a vault folder")
        if not (path / ".memd").is_dir():
            raise VaultNotFound(f"{path} is not a memd vault (no .memd/ folder); create one with `memd init {path}`")
        return path.resolve()
    start = (cwd or Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / ".memd").is_dir():
            return folder
    raise VaultNotFound("no memd vault here or in any parent folder; create one with `memd init PATH`")
