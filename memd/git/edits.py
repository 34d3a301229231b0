"""Committing what a person changed by hand, as their own commit, through one
gate: a file in which a secret may be is never committed (git keeps what it
is given for good); it is held back and named. Every path that commits a
person's edits comes through here: ``memd consolidate``, ``memd sync``,
``memd undo`` and the daemon."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from memd.core.atomic import _describe
from memd.core.layout import scratch
from memd.git.command import run_git
from memd.git.commits import commit_exact
from memd.git.log import changed_paths, disk_bytes

if TYPE_CHECKING:
    from memd.vault.vault import Vault


@dataclass(frozen=True)
class HandEdits:
    """What committing a person's edits did: the commit (None: nothing to
    commit) and the files held back because they may hold a secret (path ->
    ``line: kind`` of each finding)."""

    sha: str | None
    held: dict[str, list[str]]
    unreadable: Mapping[str, str] = field(default_factory=dict)  # path -> why memd could not read it

    def warnings(self) -> list[str]:
        unread = [f"not committing {rel}: {why}" for rel, why in sorted(self.unreadable.items())]
        return [held_warning(rel, found) for rel, found in sorted(self.held.items())] + unread


def held_warning(rel: str, found: list[str]) -> str:
    """The line that names a file held back for a possible secret (``secrets_in``)."""
    from memd.core.redact import redact

    shown = redact(rel).text  # a secret in the path itself is not repeated
    if found and found[0].startswith("name:"):
        return f"not committing {shown}: its name holds a {found[0][6:]}; rename the file"
    where = ", ".join(f"{shown}:{item}" for item in found[:3])
    fix = "`memd consolidate` redacts it, or remove it" if rel == "CURRENT.md" else "remove it"
    return f"not committing {shown}: {where}; {fix}, or commit the file yourself if it is no secret"


def commit_hand_edits(
    vault: Vault,
    removed: str | None = None,
    snapshot: Mapping[str, str | None] | None = None,
    hold: Collection[str] = (),
) -> HandEdits:
    """Commit what people changed by hand since the last commit, as their own
    commit. memd's own appends to CURRENT.md and its state file are not hand
    edits; they are committed with the next consolidation. ``removed`` names
    buffered seqs the person deleted (a ``Memd-Removed`` trailer for verify).
    Paths in ``hold`` are left out (the daemon holds a file that looks like it
    holds a secret until the person decides), and so are editors' scratch files
    (``layout.scratch``: ``x.md~``, ``.x.md.swp``, ``4913``...).

    This is the one gate every commit of a person's edits passes (CLI,
    consolidation, sync, the daemon): a file in which a secret may be is
    never committed (git keeps it for good); it is left out and named."""
    paths = [
        p
        for p in changed_paths(vault)
        if p != ".memd/state.json" and p not in hold and not scratch(p) and not _only_appended(vault, p)
    ]
    seen = snapshot or {}
    files: dict[str, bytes | None] = {}
    unreadable: dict[str, str] = {}
    for rel in paths:
        try:
            files[rel] = _encode(seen[rel]) if rel in seen else disk_bytes(vault, rel)
        except OSError as err:  # its permissions: not the person's edit to lose, nor memd's to guess
            unreadable[rel] = f"cannot read it ({_describe(err)})"
    held = {rel: found for rel, data in files.items() if data and (found := secrets_in(data.decode(errors="replace")))}
    held.update((rel, found) for rel in paths if (found := secrets_in_name(rel)))
    paths = [rel for rel in paths if rel not in held and rel not in unreadable]
    if not paths:
        return HandEdits(None, held, unreadable)
    message = f"edit: {', '.join(paths[:5])}" + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    message += "\n\nMemd-Auto: committed by memd for the person who edited the files"
    if removed:
        message += f"\nMemd-Removed: {removed}"
    return HandEdits(commit_exact(vault, message, {rel: files[rel] for rel in paths}, None), held, unreadable)


def secrets_in(text: str) -> list[str]:
    """``line: possible secret (kind)`` for each secret a file's text may hold."""
    from memd.core.redact import find_secrets

    return [f"{line}: possible secret ({kind})" for line, kind in find_secrets(text)] if text else []


def secrets_in_name(rel: str) -> list[str]:
    """``name: possible secret (kind)`` when a path (a file or folder name in it)
    looks like it holds a secret: git keeps names in every tree."""
    from memd.core.redact import find_secrets

    return [f"name: possible secret ({kind})" for _, kind in find_secrets(rel)][:1]


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", errors="surrogateescape")


def _only_appended(vault: Vault, path: str) -> bool:
    """True when the working file is the committed one plus new signed entries."""
    if path != "CURRENT.md":
        return False
    committed = run_git(vault, "show", f"HEAD:./{path}")
    if committed.returncode != 0:
        return False
    try:
        current = (vault.root / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not current.startswith(committed.stdout):
        return False
    added = current[len(committed.stdout) :]
    lines = added.splitlines()
    # memd's own appends hold no secret (``core/redact``): a signed line typed by hand
    # may, and then it is a hand edit, through the gate like any other.
    return all(line.startswith("- <seq=") or line.startswith("  ") for line in lines if line.strip()) and not (
        secrets_in(added)
    )
