"""Reading the vault's git history: commits, trees and blobs, never the work tree.

Everything goes through git's plumbing (``log``, ``ls-tree``, ``cat-file
--batch``) in as few processes as possible: one ``cat-file`` process serves
any number of blobs. Paths are vault-relative even when the vault is a folder
inside a larger repository.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from memd.core.errors import FormatError, GitError, MemdError
from memd.git.command import cat_file, last_line, run_git
from memd.vault.vault import Vault

# The files whose history is the memory's history.
MEMORY_PATHS = ("CURRENT.md", "topics")
_FIELD = "\x1f"
_RECORD = "\x1e"
_FORMAT = "%x1e%H%x1f%an%x1f%ae%x1f%aI%x1f%P%x1f%B%x1f"
_STATUS = re.compile(r"^[ACDMRTUXB][0-9]*$")
_TRAILER = re.compile(r"^(Memd-[A-Za-z-]+):\s*(.*)$", re.MULTILINE)
_AUTHOR = re.compile(r"^\s*(?P<name>[^<]+?)\s*<(?P<email>[^>]+)>\s*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$")


class HistoryError(MemdError):
    """The history cannot answer: no git, no commits, or an unknown revision."""


@dataclass(frozen=True)
class CommitInfo:
    """One commit as review shows it."""

    sha: str
    author: str
    email: str
    date: str  # author date, ISO 8601
    message: str
    parents: tuple[str, ...] = ()
    by_hand: bool = False  # made by a person rather than by memd
    trailers: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def short(self) -> str:
        return self.sha[:7]

    @property
    def subject(self) -> str:
        return self.message.split("\n", 1)[0]

    @property
    def body(self) -> str:
        return self.message.split("\n", 1)[1] if "\n" in self.message else ""

    @property
    def kind(self) -> str:
        head = self.subject.split(":", 1)[0]
        return head if head in {"consolidate", "undo", "edit", "adopt", "ingest", "init"} else "other"

    def to_json(self) -> dict[str, object]:
        return {
            "sha": self.sha,
            "short": self.short,
            "author": self.author,
            "by_hand": self.by_hand,
            "date": self.date,
            "kind": self.kind,
            "subject": self.subject,
            "trailers": dict(self.trailers),
        }


@dataclass(frozen=True)
class Repo:
    """The git repository holding a vault."""

    vault: Vault
    prefix: str  # the vault folder's path inside the repository ("" at the top)
    machine_email: str

    @classmethod
    def open(cls, vault: Vault) -> Repo:
        try:
            result = run_git(vault, "rev-parse", "--show-prefix")
        except GitError:
            raise HistoryError("git is not installed; the vault's history cannot be read") from None
        if result.returncode != 0:
            raise HistoryError(f"{vault.root} is not in a git repository, so it has no history to review")
        match = _AUTHOR.match(vault.config.git_author)
        return cls(vault, result.stdout.strip(), match.group("email") if match else "memd@localhost")

    # -- running git --------------------------------------------------------
    def git(self, *args: str, check: bool = True) -> str:
        result = run_git(self.vault, *args)
        if check and result.returncode != 0:
            raise HistoryError(f"git {args[0]} failed: {last_line(result.stderr or result.stdout)}")
        return result.stdout

    def head(self) -> str | None:
        result = run_git(self.vault, "rev-parse", "--verify", "-q", "HEAD^{commit}")
        return result.stdout.strip() or None

    # -- revisions ----------------------------------------------------------
    def resolve(self, rev: str) -> str:
        """A commit sha for a revision (``HEAD~2``, a sha, a tag), or for a date
        or time: the last commit made on or before it (a bare date means that
        whole day, UTC)."""
        text = rev.strip()
        if not text or text.startswith("-"):
            raise HistoryError(f"invalid revision {rev!r}")
        if _DATE.match(text):
            return self._at_date(text)
        result = run_git(self.vault, "rev-parse", "--verify", "-q", "--end-of-options", f"{text}^{{commit}}")
        if result.returncode != 0 or not result.stdout.strip():
            raise HistoryError(f"no commit {rev!r} in the vault's history (try `memd log`)")
        return result.stdout.strip()

    def resolve_start(self, rev: str) -> str | None:
        """``resolve`` for where a range starts: a date before the vault's first
        commit is its start, before anything (None), not an error."""
        text = rev.strip()
        if _DATE.match(text):
            return self._last_at(text)
        return self.resolve(rev)

    def is_ancestor(self, older: str, newer: str) -> bool:
        """Whether commit ``older`` is in ``newer``'s history (itself included)."""
        return run_git(self.vault, "merge-base", "--is-ancestor", older, newer).returncode == 0

    def _at_date(self, text: str) -> str:
        found = self._last_at(text)
        if found is None:
            raise HistoryError(f"the vault has no commit on or before {text}")
        return found

    def _last_at(self, text: str) -> str | None:
        """The last commit made on or before a date or time (None: it is before the first)."""
        from memd.core.timeutil import format_time, parse_time

        try:
            moment = parse_time(text)
        except FormatError as err:
            raise HistoryError(str(err)) from None
        if "T" not in text and " " not in text:
            moment += timedelta(days=1, seconds=-1)
        found = self.git("rev-list", "-1", f"--before={format_time(moment)}", "HEAD", "--", check=False).strip()
        return found or None

    # -- commits ------------------------------------------------------------
    def commits(self, *args: str) -> list[CommitInfo]:
        """``git log`` with ``args`` (revisions, options, ``--`` paths)."""
        return [commit for commit, _ in self._log(args)]

    def changes(self, *args: str) -> list[tuple[CommitInfo, tuple[tuple[str, str], ...]]]:
        """``git log`` with each commit's changed files as (status, vault path);
        renames count as a deletion and an addition."""
        return self._log(("--no-renames", "--name-status", *args))

    def commit(self, sha: str) -> CommitInfo:
        found = self.commits("-1", sha)
        if not found:
            raise HistoryError(f"no commit {sha}")
        return found[0]

    def versions(self, *args: str) -> list[tuple[CommitInfo, tuple[tuple[str, str, str], ...]]]:
        """``git log --raw`` with each commit's changed files as (status, vault
        path, new blob sha or "" when deleted): tree entries only, no diffs."""
        text = self.git("log", "-z", "--raw", "--no-abbrev", "--no-renames", f"--format={_FORMAT}", *args)
        found = []
        for commit, tail in self._records(text):
            tokens = [t.strip("\n") for t in tail.split("\0")]
            files = []
            for meta, path in itertools.pairwise(tokens):
                parts = meta.split()
                if meta.startswith(":") and len(parts) == 5 and path.startswith(self.prefix):
                    blob = "" if set(parts[3]) == {"0"} else parts[3]
                    files.append((parts[4][0], path[len(self.prefix) :], blob))
            found.append((commit, tuple(files)))
        return found

    def _log(self, args: Sequence[str]) -> list[tuple[CommitInfo, tuple[tuple[str, str], ...]]]:
        text = self.git("log", "-z", f"--format={_FORMAT}", *args)
        return [(commit, self._files(tail)) for commit, tail in self._records(text)]

    def _records(self, text: str) -> list[tuple[CommitInfo, str]]:
        found = []
        for record in text.split(_RECORD):
            fields = record.split(_FIELD)
            if len(fields) < 7:
                continue
            sha, name, email, date, parents, message, tail = fields[:7]
            message = message.strip("\n")
            commit = CommitInfo(
                sha=sha,
                author=name,
                email=email,
                date=date,
                message=message,
                parents=tuple(parents.split()),
                by_hand=email != self.machine_email,
                trailers=dict(_TRAILER.findall(message)),
            )
            found.append((commit, tail))
        return found

    def _files(self, tail: str) -> tuple[tuple[str, str], ...]:
        tokens = [token.strip("\n") for token in tail.split("\0")]
        tokens = [token for token in tokens if token]
        files = []
        i = 0
        while i + 1 < len(tokens):
            if not _STATUS.match(tokens[i]):
                i += 1
                continue
            path = tokens[i + 1]
            if path.startswith(self.prefix):
                files.append((tokens[i][0], path[len(self.prefix) :]))
            i += 2
        return tuple(files)

    def last_consolidation(self) -> CommitInfo:
        for commit in self.commits("--grep=^Memd-Consolidation:", "-n", "20", "--", *MEMORY_PATHS):
            if commit.kind == "consolidate" and not commit.by_hand:
                return commit
        raise HistoryError("the vault has no consolidation yet (run `memd consolidate`)")

    # -- trees and blobs ----------------------------------------------------
    def full(self, rel: str) -> str:
        return self.prefix + rel

    def files(self, rev: str, paths: Sequence[str]) -> dict[str, str]:
        """Vault-relative path -> blob sha of the files under ``paths`` at ``rev``."""
        out = self.git("ls-tree", "-r", "-z", "--full-tree", rev, "--", *(self.full(p) for p in paths))
        found: dict[str, str] = {}
        for record in out.split("\0"):
            meta, _, path = record.partition("\t")
            parts = meta.split()
            # Regular files only: a symlink's blob is a path, not a memory.
            if len(parts) == 3 and parts[0] in ("100644", "100755") and path.startswith(self.prefix):
                found[path[len(self.prefix) :]] = parts[2]
        return found

    def read(self, objects: Iterable[str]) -> dict[str, bytes | None]:
        """Contents of objects named like ``<sha>`` or ``<rev>:<vault path>``
        (None for what does not exist), through one ``cat-file`` process."""
        names = list(dict.fromkeys(objects))
        if not names:
            return {}
        specs = [self._spec(name) for name in names]
        if any("\n" in spec for spec in specs):
            raise HistoryError("a path with a line break cannot be read from git")
        try:
            found = cat_file(self.vault.root, specs)
        except GitError as err:
            raise HistoryError(str(err)) from None
        # A tree or a commit is not a file.
        return {name: obj.data if obj and obj.kind == "blob" else None for name, obj in zip(names, found, strict=True)}

    def _spec(self, name: str) -> str:
        rev, colon, path = name.partition(":")
        return f"{rev}:{self.full(path)}" if colon else name


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
