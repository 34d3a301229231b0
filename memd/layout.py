"""The vault's layout as pure rules: which paths are memory, and what they are.

Every part of memd that asks "is this file memory?" (the index, grep, the
daemon, git staging, seq allocation, verify) asks here, so the answer is the
same everywhere. See ARCHITECTURE.md, "The vault".
"""

from __future__ import annotations

CURRENT_NAME = "CURRENT.md"
# Folders whose contents never matter to memd: git, editors, memd's own
# derived files (index, locks, logs, journal, daemon status).
IGNORED_DIRS = frozenset({".git", ".obsidian", ".trash", ".memd", ".stfolder", "node_modules"})
DOCUMENT_KINDS = frozenset({"current", "topic", "source"})
# What memd versions: the memory itself and the settings that shape it.
VERSIONED = ("CURRENT.md", "topics", "sources", ".memd/config.toml", ".memd/state.json", ".gitignore")
_SCRATCH_SUFFIXES = (".swp", ".swx", ".swo", "~", ".tmp", ".temp", ".part", ".crdownload", ".memd-tmp", ".reason.txt")
_SCRATCH_PREFIXES = (".", "~$", "#", ".goutputstream-")


def is_scratch(name: str) -> bool:
    """Editor swap files, temp files, partial downloads and hidden files."""
    return name.startswith(_SCRATCH_PREFIXES) or name.endswith(_SCRATCH_SUFFIXES) or name == "4913"


def classify(rel: str) -> str | None:
    """``current`` / ``topic`` / ``source`` / ``inbox`` for a vault-relative
    path memd cares about, None for everything else."""
    parts = rel.replace("\\", "/").strip("/").split("/")
    if not parts or not parts[0] or parts[0] == "..":
        return None
    if any(part in IGNORED_DIRS or part.startswith(".") for part in parts[:-1]) or is_scratch(parts[-1]):
        return None
    if parts == [CURRENT_NAME]:
        return "current"
    if parts[0] == "topics" and len(parts) > 1 and parts[-1].endswith(".md"):
        return "topic"
    if parts[0] == "sources" and len(parts) > 1 and parts[-1].endswith(".md"):
        return "source"
    if parts[0] == "inbox" and len(parts) == 2:
        return "inbox"
    return None


def holds_entries(rel: str) -> bool:
    """Files whose signed entries count for seqs and verify (not sources)."""
    return classify(rel) in ("current", "topic")


def doc_id(rel: str) -> str:
    """``topics/coffee.md`` -> ``coffee``; ``CURRENT.md`` -> ``CURRENT``; else the path."""
    if rel == CURRENT_NAME:
        return "CURRENT"
    if rel.startswith("topics/") and rel.endswith(".md"):
        return rel[len("topics/") : -len(".md")]
    return rel
