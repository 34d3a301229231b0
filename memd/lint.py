"""``memd lint``: every problem in the vault's files as ``path:line: message``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .atomic import read_text
from .document import Document, parse_document
from .errors import DocumentError, FormatError
from .state import highest_seq, read_state
from .timeutil import parse_time
from .vault import Vault
from .yamlio import FrontmatterError


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
    """Check the given files (default: CURRENT, topics, sources) and state.json."""
    if paths is None:
        docs = [vault.current, *vault.topic_files()] if vault.current.exists() else vault.topic_files()
        sources = sorted(p for p in vault.sources_dir.rglob("*.md") if p.is_file())
    else:
        resolved = [p.resolve() for p in paths]
        sources = [p for p in resolved if vault.rel(p).startswith("sources/")]
        docs = [p for p in resolved if p not in sources and p.suffix == ".md"]
    problems: list[Problem] = []
    seen: dict[int, str] = {}
    for path in docs:
        problems += _lint_document(vault, path, seen)
    for path in sources:
        try:
            problems += _lint_secrets(vault.rel(path), read_text(path, vault.rel(path)))
        except DocumentError as err:
            problems.append(Problem(err.path, err.line, err.message))
    if paths is None:
        problems += _lint_state(vault)
    return problems


def _lint_document(vault: Vault, path: Path, seen: dict[int, str]) -> list[Problem]:
    name = vault.rel(path)
    try:
        text = read_text(path, name)
    except DocumentError as err:
        return [Problem(err.path, err.line, err.message)]
    is_topic = name != "CURRENT.md"
    if is_topic and not text.strip():
        return [Problem(name, 1, "empty file where a topic document is expected")]
    document = parse_document(text)
    problems = [Problem(name, line, message) for line, message in document.problems]
    problems += _lint_secrets(name, text)
    problems += _lint_frontmatter(vault, path, name, document, is_topic)
    for located in document.signed():
        signature = located.entry.signature
        assert signature is not None
        if signature.time:
            try:
                parse_time(signature.time)
            except FormatError as err:
                problems.append(Problem(name, located.line, str(err)))
        for seq in signature.seq:
            where = f"{name}:{located.line}"
            if seq in seen:
                problems.append(Problem(name, located.line, f"duplicate seq {seq} (also at {seen[seq]})"))
            else:
                seen[seq] = where
    return problems


def _lint_secrets(name: str, text: str) -> list[Problem]:
    from .redact import find_secrets

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
    return problems


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
