"""Commits of exact content: what memd wrote, never whatever the working tree holds.

A commit is built with git's plumbing on a private index: the tree of HEAD,
plus the exact bytes of the files being committed, then ``commit-tree`` and a
compare-and-swap ``update-ref``. So a person's edit made meanwhile (or staged
in their own index) never rides in memd's commit, and a commit either lands
whole or not at all. One process commits at a time (``.memd/git.lock``), and
a lock file that an interrupted git left behind is removed when no git
process is alive in the repository.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from memd.core.crashpoints import crashpoint
from memd.core.errors import GitError
from memd.git.command import check, last_line, run_bytes, run_git
from memd.git.command import head as head_commit

if TYPE_CHECKING:
    # Only a type here: git sits below the vault, which passes itself in.
    from memd.vault.vault import Vault

ZERO = "0" * 40
_AUTHOR = re.compile(r"^\s*(?P<name>[^<]+?)\s*<(?P<email>[^>]+)>\s*$")
_STALE_AFTER = 60.0  # seconds; only where running processes cannot be inspected
GIT_LOCK_TIMEOUT = 60.0


def git_dir(vault: Vault) -> Path | None:
    result = run_git(vault, "rev-parse", "--absolute-git-dir")
    return Path(result.stdout.strip()) if result.returncode == 0 else None


@contextmanager
def git_lock(vault: Vault, timeout: float = GIT_LOCK_TIMEOUT) -> Iterator[None]:
    """One memd process talks to git at a time (separate from the vault lock,
    so appends never wait for git)."""
    vault.meta_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(vault.meta_dir / "git.lock", os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise GitError("another memd process has been committing for too long") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)


def _git_alive_in(folders: list[Path]) -> bool | None:
    """Whether a git process works in one of ``folders``; None when unknowable."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "git":
                continue
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if any(cwd == folder or folder in cwd.parents for folder in folders):
            return True
    return False


def clear_stale_locks(vault: Vault) -> list[str]:
    """Remove lock files an interrupted git left (no git process is alive in
    this repository). Returns the ones removed."""
    gdir = git_dir(vault)
    if gdir is None:
        return []
    candidates = [gdir / "index.lock", gdir / "HEAD.lock", gdir / "packed-refs.lock"]
    refs = gdir / "refs" / "heads"
    if refs.is_dir():
        candidates += list(refs.rglob("*.lock"))
    present = [path for path in candidates if path.exists()]
    if not present:
        return []
    toplevel = run_git(vault, "rev-parse", "--show-toplevel").stdout.strip()
    alive = _git_alive_in([gdir, Path(toplevel) if toplevel else vault.root])
    removed = []
    for path in present:
        try:
            old = time.time() - path.stat().st_mtime
        except OSError:
            continue
        if alive or (alive is None and old < _STALE_AFTER):
            continue
        path.unlink(missing_ok=True)
        removed.append(path.name)
    return removed


def author_env(author: str | None, vault: Vault) -> dict[str, str]:
    """Author and committer for a commit: memd's configured identity, or (None)
    the person's git identity, or a clear stand-in when they have none."""
    if author is not None:
        match = _AUTHOR.match(author)
        name, email = (match.group("name"), match.group("email")) if match else ("memd", "memd@localhost")
    elif run_git(vault, "var", "GIT_AUTHOR_IDENT").returncode == 0:
        return {}
    else:
        name, email = "vault user", "user@localhost"
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


def commit_exact(vault: Vault, message: str, files: Mapping[str, bytes | None], author: str | None) -> str | None:
    """Commit exactly ``files`` (vault-relative path -> content, None = deleted)
    on top of HEAD. Returns the new sha, or None when nothing changed."""
    if not files:
        return None
    files, message = secret_gate(files, message)
    with git_lock(vault):
        clear_stale_locks(vault)
        gdir = git_dir(vault)
        if gdir is None:
            raise GitError("the vault is not in a git repository")
        prefix = run_git(vault, "rev-parse", "--show-prefix").stdout.strip()
        env = author_env(author, vault)
        entries = []
        for rel, content in sorted(files.items()):
            if content is None:
                entries.append(f"0 {ZERO}\t{prefix}{rel}")
                continue
            blob = _hash_object(vault, content)
            entries.append(f"100644 {blob}\t{prefix}{rel}")
        info = "\n".join(entries) + "\n"
        for _attempt in range(3):
            head = head_commit(vault)
            index = gdir / "memd-index"
            index_env = {"GIT_INDEX_FILE": str(index)}
            try:
                check(run_git(vault, "read-tree", *([head] if head else ["--empty"]), env=index_env), "read-tree")
                check(run_git(vault, "update-index", "--index-info", env=index_env, stdin=info), "update-index")
                tree = check(run_git(vault, "write-tree", env=index_env), "write-tree").stdout.strip()
            finally:
                index.unlink(missing_ok=True)
            if head and run_git(vault, "rev-parse", f"{head}^{{tree}}").stdout.strip() == tree:
                return None
            parents = ["-p", head] if head else []
            made = check(run_git(vault, "commit-tree", tree, *parents, env=env, stdin=message), "commit-tree")
            sha = made.stdout.strip()
            crashpoint()  # a commit object exists, HEAD does not point at it yet
            moved = run_git(vault, "update-ref", "-m", f"commit: {message.splitlines()[0]}", "HEAD", sha, head or ZERO)
            if moved.returncode == 0:
                # The person's index learns the committed blobs for exactly these paths, so
                # `git status` shows no phantom change; their other staged work is untouched.
                run_git(vault, "update-index", "--index-info", stdin=info)
                return sha
            clear_stale_locks(vault)  # HEAD moved (someone committed) or a lock was in the way: again
        raise GitError(f"could not update HEAD: {last_line(moved.stderr)}")


class SecretInPath(GitError):
    """A path memd was asked to commit holds what looks like a secret: git would
    keep it in every tree for good."""


def secret_gate(files: Mapping[str, bytes | None], message: str) -> tuple[dict[str, bytes | None], str]:
    """The gate in front of every commit memd makes: what reaches git holds no secret.

    A path with one is refused (``SecretInPath``, naming it: memd cannot rename a
    person's file). A file's content and the message are committed with each
    secret replaced by ``[REDACTED:kind]``, lines kept, so the commit never holds
    it; the file on disk keeps what it holds, so it differs from the commit and
    the next commit of hand edits holds it back and names the line
    (``git/edits.py``) until the person removes it."""
    from memd.core.redact import find_secrets, redact, redact_entries

    for rel in files:
        found = find_secrets(rel)
        if found:
            raise SecretInPath(
                f"not committing {_shown(rel)}: its name holds a possible secret ({found[0][1]}); "
                "rename or remove it, then run the command again"
            )
    clean: dict[str, bytes | None] = {}
    for rel, content in files.items():
        if content is None or not content:
            clean[rel] = content
            continue
        text = content.decode("utf-8", errors="surrogateescape")
        scrubbed = redact_entries(text, keep_lines=True) if rel.endswith(".md") else redact(text, keep_lines=True)
        clean[rel] = scrubbed.text.encode("utf-8", errors="surrogateescape") if scrubbed.findings else content
    said = redact(message, keep_lines=True)
    return clean, said.text if said.findings else message


def secrets_in_commits(vault: Vault, revisions: list[str]) -> list[str]:
    """``<commit> path:line: possible secret (kind)`` for each secret the commits in
    ``revisions`` (``git log`` arguments) add: in a line, a file or folder name, or
    the message. A merge adds what its parents hold: only its message is read."""
    from memd.core.redact import find_secrets

    shown = run_git(
        vault,
        "log",
        "-p",
        "--no-color",
        "--no-ext-diff",
        "--no-renames",
        "--diff-merges=off",
        "--unified=0",
        "--format=%x00%H%x00%B%x00",
        *revisions,
        "--",
    )
    check(shown, "log")
    found: list[str] = []
    fields = shown.stdout.split("\0")
    for at in range(1, len(fields) - 2, 3):
        sha, message, diff = fields[at][:10], fields[at + 1], fields[at + 2]
        found += [f"{sha} (its message, line {line}): possible secret ({kind})" for line, kind in find_secrets(message)]
        for rel, added in _added_lines(diff).items():
            name = _shown(rel)
            found += [f"{sha} {name}: its name holds a possible secret ({kind})" for _, kind in find_secrets(rel)]
            numbers = list(added)
            for line, kind in find_secrets("\n".join(added.values())):
                found.append(f"{sha} {name}:{numbers[line - 1]}: possible secret ({kind})")
    return found


def _added_lines(diff: str) -> dict[str, dict[int, str]]:
    """path -> {line number: text} of the lines a ``--unified=0`` patch adds."""
    files: dict[str, dict[int, str]] = {}
    current: dict[int, str] | None = None
    number = 0
    for line in diff.split("\n"):
        if line.startswith("+++ "):
            rel = line[4:]
            current = None if rel == "/dev/null" else files.setdefault(rel[2:] if rel.startswith("b/") else rel, {})
        elif line.startswith("diff --git "):
            current = None
            name = line.rsplit(" b/", 1)[-1]
            files.setdefault(name, {})  # a name is checked even for an empty or binary file
        elif line.startswith("@@ "):
            plus = line.split(" ")[2]  # +start[,count]
            number = int(plus[1:].split(",")[0])
        elif line.startswith("+") and current is not None:
            current[number] = line[1:]
            number += 1
    return files


def _shown(rel: str) -> str:
    """A path named in a message with its secret replaced: the message may be logged."""
    from memd.core.redact import redact

    return redact(rel).text


def _hash_object(vault: Vault, content: bytes) -> str:
    stored = check(run_bytes(vault.root, "hash-object", "-w", "--stdin", stdin=content), "hash-object")
    return stored.stdout.decode().strip()
