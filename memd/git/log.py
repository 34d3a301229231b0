"""Git history of the vault: memd's commits, people's edits, ``memd log``.

Git is driven through its command line (no long-lived repository objects in
the daemon), and only the vault's own paths are ever staged, so a vault that
lives inside a larger repository never commits anything else.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memd.core.errors import FormatError, GitError
from memd.core.layout import VERSIONED, utf8_name
from memd.git.command import run_git
from memd.git.commits import commit_exact

if TYPE_CHECKING:
    from datetime import datetime

    # Only a type here: git sits below the vault, which passes itself in.
    from memd.vault.vault import Vault

_AUTHOR = re.compile(r"^\s*(?P<name>[^<]+?)\s*<(?P<email>[^>]+)>\s*$")
_TRAILER = re.compile(r"^(Memd-[A-Za-z-]+):\s*(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    email: str
    time: str
    subject: str
    trailers: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind}

    @property
    def kind(self) -> str:
        for kind in ("consolidate", "edit"):
            if self.subject.startswith(f"{kind}:"):
                return kind
        return "other"


def blocked(vault: Vault) -> str | None:
    """Why memd cannot commit now (None when it can)."""
    try:
        result = run_git(vault, "rev-parse", "--git-dir")
    except GitError:
        return "git is not installed"
    if result.returncode != 0:
        return "the vault is not in a git repository (run `git init` in it)"
    foreign = foreign_repository(vault)
    if foreign:
        return foreign
    git_dir = Path(result.stdout.strip())
    if not git_dir.is_absolute():
        git_dir = vault.root / git_dir
    for marker, what in (
        ("MERGE_HEAD", "a merge"),
        ("rebase-merge", "a rebase"),
        ("rebase-apply", "a rebase"),
        ("CHERRY_PICK_HEAD", "a cherry-pick"),
        ("REVERT_HEAD", "a revert"),
    ):
        if (git_dir / marker).exists():
            return f"{what} is in progress in the vault's repository"
    return None


def foreign_repository(vault: Vault) -> str | None:
    """Why memd must not commit here: the vault wants a repository of its own
    (``[git] repository = "own"``, as the example vault that ships inside
    memd's checkout does) and the repository it lies in has its root elsewhere.
    None when committing is fine, or when there is no repository at all."""
    if vault.config.git_repository != "own":
        return None
    result = run_git(vault, "rev-parse", "--show-toplevel")
    if result.returncode != 0:
        return None
    top = Path(result.stdout.strip())
    if top.resolve() == vault.root.resolve():
        return None
    return (
        f'this vault commits only to a repository of its own ([git] repository = "own"), and it lies inside '
        f"the one at {top}: copy the vault out (cp -r {vault.root} ~/memory) or run `git init` in it"
    )


def _specs(vault: Vault) -> list[str]:
    return [p for p in VERSIONED if (vault.root / p).exists() or _tracked(vault, p)]


def _tracked(vault: Vault, path: str) -> bool:
    return bool(run_git(vault, "ls-files", "--", path).stdout.strip())


# Notes anywhere in the vault are memory too (memd/core/layout.py); what they match
# is filtered by ``classify`` (no .obsidian/, no inbox/...).
_NOTE_SPECS = (":(glob)**/*.md", ":(glob)**/*.markdown")


def _memory(vault: Vault, rel: str) -> bool:
    if not utf8_name(rel):
        return False  # no memory (Vault.listings skips it; `memd lint` names it)
    path = vault.root / rel
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return False  # a link is never followed (it may lead out of the vault), a pipe never read
    return any(rel == spec or rel.startswith(spec + "/") for spec in VERSIONED) or vault.kind(rel) == "note"


def changed_paths(vault: Vault) -> list[str]:
    """Vault files that differ from the last commit (vault-relative)."""
    specs = [*_specs(vault), *_NOTE_SPECS]
    out = run_git(vault, "status", "--porcelain", "-z", "--untracked-files=all", "--", *specs).stdout
    paths = []
    records = out.split("\0")
    i = 0
    while i < len(records):
        record = records[i]
        if len(record) > 3:
            paths.append(record[3:])
            if record[0] in "RC":
                i += 1  # a rename's source path follows
        i += 1
    prefix = run_git(vault, "rev-parse", "--show-prefix").stdout.strip()
    found = {p[len(prefix) :] if prefix and p.startswith(prefix) else p for p in paths}
    return sorted(p for p in found if _memory(vault, p))


def commit(vault: Vault, message: str, paths: list[str], author: str | None) -> str | None:
    """Commit the working-tree content of ``paths`` (files or folders, vault-
    relative) as it is now. ``author`` None = the person's git identity.
    Returns the new commit's sha, or None when there was nothing to commit."""
    if not paths:
        return None
    wanted = [p.rstrip("/") for p in paths]
    files = [p for p in changed_paths(vault) if any(p == w or p.startswith(w + "/") for w in wanted)]
    return commit_exact(vault, message, {rel: disk_bytes(vault, rel) for rel in files}, author)


def disk_bytes(vault: Vault, rel: str) -> bytes | None:
    try:
        return (vault.root / rel).read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def commit_as_memd(
    vault: Vault,
    message: str,
    paths: list[str] | Mapping[str, bytes | None],
    trailers: Mapping[str, str] | None = None,
) -> tuple[str | None, str | None]:
    """memd's own commit: the exact ``{path: content}`` it wrote (or the current
    content of ``paths``), under its configured author, trailers appended.

    Returns (sha or None, why it was not committed or None). Never raises:
    the files are already safe on disk, so a refusing git is a warning and the
    change is committed next time.
    """
    reason = blocked(vault)
    if reason:
        return None, f"not committed: {reason}; the files are safe and will be committed next time"
    if trailers:
        message = message.rstrip("\n") + "\n\n" + "\n".join(f"{k}: {v}" for k, v in trailers.items())
    try:
        if isinstance(paths, Mapping):
            return commit_exact(vault, message, paths, vault.config.git_author), None
        return commit(vault, message, paths, vault.config.git_author), None
    except GitError as err:
        return None, f"not committed: {err}"


def log(vault: Vault, limit: int = 50, since: datetime | None = None) -> list[Commit]:
    """The newest ``limit`` commits that changed memory, made at ``since`` or later."""
    if blocked(vault) == "the vault is not in a git repository (run `git init` in it)":
        return []
    fmt = "%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%b%x1e"
    after = [f"--since={since.isoformat()}"] if since is not None else []
    result = run_git(vault, "log", f"-n{limit}", *after, f"--format={fmt}", "--", *_specs(vault), *_NOTE_SPECS)
    commits = []
    for record in result.stdout.split("\x1e"):
        fields = record.strip("\n").split("\x1f")
        if len(fields) < 6:
            continue
        sha, name, email, when, subject, body = fields[:6]
        commits.append(Commit(sha, name, email, when, subject, dict(_TRAILER.findall(body))))
    return commits


def vault_specs(vault: Vault) -> list[str]:
    """The vault paths git should see (existing or tracked)."""
    return _specs(vault)


def machine_email(vault: Vault) -> str:
    """The email of memd's own commits (anything else was made by a person)."""
    match = _AUTHOR.match(vault.config.git_author)
    return match.group("email") if match else "memd@localhost"


def removed_by_person(vault: Vault) -> set[int]:
    """Buffered seqs a person deleted, as recorded in their edit commits
    (``Memd-Removed`` trailers; only commits not made by memd count)."""
    from memd.core.signature import SeqSet

    machine = machine_email(vault)
    listing = run_git(vault, "log", "--format=%ae%x1f%b%x1e", "--grep=^Memd-Removed:", "--", "CURRENT.md")
    found: set[int] = set()
    for record in listing.stdout.split("\x1e"):
        email, _, body = record.strip("\n").partition("\x1f")
        if not email or email == machine:
            continue
        for key, value in _TRAILER.findall(body):
            if key == "Memd-Removed":
                try:
                    found.update(SeqSet.parse(value.strip()))
                except FormatError:
                    continue
    return found


def removed_in_own_commits(vault: Vault, seqs: set[int], since: str) -> set[int]:
    """Which of ``seqs`` a person removed in a commit they made themselves
    (not one memd made for them) since ``since`` (an ISO time)."""
    machine = machine_email(vault)
    listing = run_git(vault, "log", f"--since={since}", "--format=%H%x1f%ae%x1f%B%x1e", "--", "CURRENT.md", "topics")
    found: set[int] = set()
    for record in listing.stdout.split("\x1e"):
        sha, _, rest = record.strip("\n").partition("\x1f")
        email, _, body = rest.partition("\x1f")
        if not sha or email == machine or "Memd-Auto:" in body:
            continue
        before = seqs_at(vault, f"{sha}^")
        after = seqs_at(vault, sha)
        found |= (before - after) & seqs
    return found


def seqs_at(vault: Vault, rev: str, paths: tuple[str, ...] = ("CURRENT.md", "topics")) -> set[int]:
    """Every seq a signature names in ``paths`` at commit ``rev`` (read from git objects)."""
    return set(counted_at(vault, rev, paths))


# Only where an entry can start (as memd/vault/state.py counts them):
# a signature quoted in an entry's text names nothing.
_ENTRY_LINE = "^[-*+][[:blank:]]+<seq=[0-9+-]+"
_ENTRY_SEQS = re.compile(r"^[-*+][ \t]+<seq=([0-9+\-]+)", re.MULTILINE)


def counted_at(vault: Vault, rev: str, paths: tuple[str, ...] = ("CURRENT.md", "topics")) -> Counter[int]:
    """How many entry lines name each seq in ``paths`` at commit ``rev``."""
    if not paths:
        return Counter()
    # Each match alone on its line, whatever the person's settings (line numbers, columns,
    # colours), and in every file memd reads as text (git would skip one it takes for binary).
    plain = ("--no-color", "--no-line-number", "--no-column", "--text", "-h", "-o")
    out = run_git(vault, "grep", *plain, "-E", _ENTRY_LINE, rev, "--", *paths).stdout
    return Counter(seqs_named(out))


def seqs_named(text: str) -> list[int]:
    """The seqs the entry lines of ``text`` name, once per line that names them."""
    from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet

    seqs: list[int] = []
    for value in _ENTRY_SEQS.findall(text):
        if value.isdigit() and value[0] != "0" and len(value) <= 15:
            seqs.append(int(value))  # one seq (ASCII digits: _ENTRY_SEQS), as SeqSet.parse reads it
            continue
        try:
            parts = SeqSet.parse(value, MAX_SEQS_PER_ENTRY).parts  # as typed in a file: a typo is not expanded
        except FormatError:
            continue
        for start, end in parts:
            seqs.extend(range(start, end + 1))
    return seqs


def seqs_at_head(vault: Vault, paths: list[str]) -> set[int]:
    """Seqs the last commit holds in ``paths`` (files deleted from the working tree since)."""
    return seqs_at(vault, "HEAD", tuple(paths))


def undone_by(vault: Vault) -> dict[str, str]:
    """Undo commit -> the consolidation it undid (its ``Memd-Undo`` trailer)."""
    out = run_git(vault, "log", "--grep=^Memd-Undo:", "--format=%H%x1f%B%x1e").stdout
    found = {}
    for record in out.split("\x1e"):
        sha, _, body = record.strip("\n").partition("\x1f")
        match = re.search(r"^Memd-Undo:\s*([0-9a-f]{40})\s*$", body, re.MULTILINE)
        if sha and match:
            found[sha] = match.group(1)
    return found


def consolidation_commits(vault: Vault, after: str | None = None) -> set[str]:
    """The commits memd made for a consolidation (``Memd-Consolidation`` trailer), after ``after``."""
    span = [f"{after}..HEAD"] if after else []
    out = run_git(vault, "log", "--grep=^Memd-Consolidation:", "--format=%H", *span, "--", "CURRENT.md", "topics")
    return set(out.stdout.split())
