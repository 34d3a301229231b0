"""What a process that watches a vault asks of it between events.

The daemon notices files change and decides when to act; which files git
sees changed, which of those may hold a secret, what waits in the inbox and
what a commit touched are questions about the vault, answered here so that
the front door never reaches below ``memd.app`` (ARCHITECTURE.md §5).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memd.core.layout import DOCUMENT_KINDS

if TYPE_CHECKING:
    from memd.vault.vault import Vault


class Watching:
    """``Memory``'s verbs for a process that watches the vault (the daemon)."""

    vault: Vault

    def changed_paths(self) -> list[str]:
        """Memory files that differ from the last commit (none while memd cannot commit)."""
        return changed_paths(self.vault)

    def possible_secrets(self) -> dict[str, list[str]]:
        """Changed documents in which lint finds a possible secret: path -> ``line: kind``."""
        return possible_secrets(self.vault)

    def inbox_files(self) -> list[Path]:
        """Files waiting in ``inbox/``."""
        return inbox_files(self.vault)

    def files_of_commit(self, sha: str) -> tuple[str, ...]:
        """Every path the commit ``sha`` changed."""
        return files_of_commit(self.vault, sha)


def changed_paths(vault: Vault) -> list[str]:
    """Memory files that differ from the last commit; none while memd cannot
    commit (no git, a merge in progress), since nothing could be done with them."""
    from memd.git.log import blocked
    from memd.git.log import changed_paths as changed

    if blocked(vault) is not None:
        return []
    return changed(vault)


def possible_secrets(vault: Vault) -> dict[str, list[str]]:
    """Each changed document in which lint finds a possible secret (path ->
    ``line: kind`` of each finding): memd never commits one, since git history
    keeps whatever it is given for good."""
    from memd.core.atomic import read_text
    from memd.git.edits import secrets_in

    held: dict[str, list[str]] = {}
    for rel in changed_paths(vault):
        if vault.kind(rel) not in DOCUMENT_KINDS:
            continue
        try:
            found = secrets_in(read_text(vault.root / rel, rel))
        except Exception:
            continue  # unreadable: `memd lint` reports it
        if found:
            held[rel] = found
    return held


def held_warning(rel: str, found: list[str]) -> str:
    """The line that names a file held back for a possible secret."""
    from memd.git.edits import held_warning as warning

    return warning(rel, found)


def inbox_files(vault: Vault) -> list[Path]:
    """Files waiting in ``inbox/`` (not those already done or rejected)."""
    from memd.ingest import inbox_files as waiting

    return waiting(vault)


def files_of_commit(vault: Vault, sha: str) -> tuple[str, ...]:
    """Every path the commit ``sha`` changed, sorted."""
    from memd.git.command import run_git

    out = run_git(vault, "diff-tree", "--root", "--relative", "--no-commit-id", "--name-only", "-r", sha).stdout
    return tuple(sorted(line for line in out.split("\n") if line))
