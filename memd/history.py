"""Git history of the vault: memd's commits, people's edits, ``memd log``.

Git is driven through its command line (no long-lived repository objects in
the daemon), and only the vault's own paths are ever staged, so a vault that
lives inside a larger repository never commits anything else.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import FormatError
from .vault import Vault

# What memd versions: the memory itself and the settings that shape it.
VAULT_PATHS = ("CURRENT.md", "topics", "sources", ".memd/config.toml", ".memd/state.json", ".gitignore")
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

    @property
    def kind(self) -> str:
        for kind in ("consolidate", "edit"):
            if self.subject.startswith(f"{kind}:"):
                return kind
        return "other"


def git(vault: Vault, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(vault.root), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def blocked(vault: Vault) -> str | None:
    """Why memd cannot commit now (None when it can)."""
    try:
        result = git(vault, "rev-parse", "--git-dir")
    except OSError:
        return "git is not installed"
    if result.returncode != 0:
        return "the vault is not in a git repository (run `git init` in it)"
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


def _specs(vault: Vault) -> list[str]:
    return [p for p in VAULT_PATHS if (vault.root / p).exists() or _tracked(vault, p)]


def _tracked(vault: Vault, path: str) -> bool:
    return bool(git(vault, "ls-files", "--", path).stdout.strip())


def changed_paths(vault: Vault) -> list[str]:
    """Vault files that differ from the last commit (vault-relative)."""
    specs = _specs(vault)
    if not specs:
        return []
    out = git(vault, "status", "--porcelain", "-z", "--untracked-files=all", "--", *specs).stdout
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
    prefix = git(vault, "rev-parse", "--show-prefix").stdout.strip()
    return sorted({p[len(prefix) :] if prefix and p.startswith(prefix) else p for p in paths})


def commit(vault: Vault, message: str, paths: list[str], author: str | None) -> str | None:
    """Stage exactly ``paths`` and commit them. ``author`` None = the git user.
    Returns the new commit's sha, or None when there was nothing to commit."""
    if not paths:
        return None
    env: dict[str, str] = {}
    if author is not None:
        match = _AUTHOR.match(author)
        name, email = (match.group("name"), match.group("email")) if match else ("memd", "memd@localhost")
        env = {
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }
    elif git(vault, "var", "GIT_AUTHOR_IDENT").returncode != 0:
        # No git identity configured: still record the edit, under a clear name.
        env = {
            "GIT_AUTHOR_NAME": "vault user",
            "GIT_AUTHOR_EMAIL": "user@localhost",
            "GIT_COMMITTER_NAME": "vault user",
            "GIT_COMMITTER_EMAIL": "user@localhost",
        }
    added = git(vault, "add", "-A", "--", *paths)
    if added.returncode != 0:
        raise GitError(f"git add failed: {added.stderr.strip()}")
    staged = git(vault, "diff", "--cached", "--quiet", "--", *paths)
    if staged.returncode == 0:
        return None
    result = git(vault, "commit", "-q", "--no-verify", "-m", message, "--", *paths, env=env)
    if result.returncode != 0:
        raise GitError(f"git commit failed: {result.stderr.strip() or result.stdout.strip()}")
    return git(vault, "rev-parse", "HEAD").stdout.strip()


class GitError(Exception):
    """Git refused; callers turn this into a warning, never a lost change."""


def commit_hand_edits(vault: Vault) -> str | None:
    """Commit what people changed by hand since the last commit, as their own
    commit. memd's own appends to CURRENT.md and its state file are not hand
    edits; they are committed with the next consolidation."""
    paths = [p for p in changed_paths(vault) if p != ".memd/state.json" and not _only_appended(vault, p)]
    if not paths:
        return None
    return commit(
        vault, f"edit: {', '.join(paths[:5])}" + (f" and {len(paths) - 5} more" if len(paths) > 5 else ""), paths, None
    )


def _only_appended(vault: Vault, path: str) -> bool:
    """True when the working file is the committed one plus new signed entries."""
    if path != "CURRENT.md":
        return False
    committed = git(vault, "show", f"HEAD:./{path}")
    if committed.returncode != 0:
        return False
    try:
        current = (vault.root / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    if not current.startswith(committed.stdout):
        return False
    added = current[len(committed.stdout) :].splitlines()
    return all(line.startswith("- <seq=") or line.startswith("  ") for line in added if line.strip())


def log(vault: Vault, limit: int = 50) -> list[Commit]:
    if blocked(vault) == "the vault is not in a git repository (run `git init` in it)":
        return []
    fmt = "%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x1f%b%x1e"
    result = git(vault, "log", f"-n{limit}", f"--format={fmt}", "--", *_specs(vault))
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


_SEQ_VALUE = re.compile(r"<seq=([0-9+\-]+)")


def seqs_by_commit(vault: Vault) -> list[tuple[str, set[int], bool]]:
    """(sha, seqs present, made by a person) for each commit, oldest first."""
    from .signature import SeqSet

    match = _AUTHOR.match(vault.config.git_author)
    machine = match.group("email") if match else "memd@localhost"
    listing = git(vault, "log", "--reverse", "--format=%H %ae", "--", "CURRENT.md", "topics")
    history = []
    for line in listing.stdout.splitlines():
        sha, _, email = line.partition(" ")
        found = git(vault, "grep", "-h", "-o", "-E", "<seq=[0-9+-]+", sha, "--", "CURRENT.md", "topics").stdout
        seqs: set[int] = set()
        for value in _SEQ_VALUE.findall(found):
            try:
                seqs.update(SeqSet.parse(value))
            except FormatError:
                continue
        history.append((sha, seqs, email != machine))
    return history


def undone_by(vault: Vault) -> dict[str, str]:
    """Undo commit -> the consolidation it undid (its ``Memd-Undo`` trailer)."""
    out = git(vault, "log", "--grep=^Memd-Undo:", "--format=%H%x1f%B%x1e").stdout
    found = {}
    for record in out.split("\x1e"):
        sha, _, body = record.strip("\n").partition("\x1f")
        match = re.search(r"^Memd-Undo:\s*([0-9a-f]{40})\s*$", body, re.MULTILINE)
        if sha and match:
            found[sha] = match.group(1)
    return found
