"""The git that sync needs: the remote, trees and blobs, a merge commit, HEAD.

Everything goes through git's command line. Reading and building happen on
objects and a private index, never on the person's index or working tree;
``apply.py`` writes the working tree, and HEAD moves with a compare-and-swap.
Fetch and push run with a time limit and never ask for a password, so an
unreachable remote is a clear error, never a hang.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from memd.core.errors import GitError, GitTimeout, MemdError
from memd.git.command import cat_file, check, last_line, run, run_git
from memd.git.commits import ZERO, author_env, git_dir
from memd.vault.vault import Vault

NETWORK_TIMEOUT = 120.0


class SyncError(MemdError):
    """Sync stopped; the working tree is as it was."""


class RemoteUnreachable(SyncError):
    """Fetch or push could not reach the remote (offline, refused, timed out)."""


@dataclass(frozen=True)
class Remote:
    """The remote and the branch of it that the vault follows."""

    name: str
    branch: str  # the remote's branch
    tracked: bool = False  # git's config names it the upstream of the local branch (set at clone or first sync)
    chosen: bool = False  # named on the command line (``memd sync --branch``)

    @property
    def tracking(self) -> str:
        return f"refs/remotes/{self.name}/{self.branch}"


def current_branch(vault: Vault) -> str:
    result = run_git(vault, "symbolic-ref", "--short", "-q", "HEAD")
    if result.returncode != 0 or not result.stdout.strip():
        raise SyncError("the vault's repository is not on a branch (check one out, e.g. `git switch main`)")
    return result.stdout.strip()


def resolve_remote(vault: Vault, name: str, branch: str | None = None) -> Remote:
    """The remote ``name`` and its branch to follow: ``branch`` when given, else
    the one the local branch tracks there, else the local branch's name."""
    if run_git(vault, "remote", "get-url", name).returncode != 0:
        raise SyncError(f"the vault's repository has no remote named {name!r} (add one: git remote add {name} URL)")
    local = current_branch(vault)
    if branch is not None:
        if run_git(vault, "check-ref-format", "--branch", branch).returncode != 0:
            raise SyncError(f"{branch!r} is not a valid branch name")
        return Remote(name, branch, tracked=upstream(vault, local) == (name, branch), chosen=True)
    followed = upstream(vault, local)
    if followed is not None and followed[0] == name:
        return Remote(name, followed[1], tracked=True)
    return Remote(name, local)


def upstream(vault: Vault, local: str) -> tuple[str, str] | None:
    """The (remote, branch) git's config says ``local`` tracks; None when it tracks none."""
    remote = run_git(vault, "config", "--get", f"branch.{local}.remote").stdout.strip()
    merge = run_git(vault, "config", "--get", f"branch.{local}.merge").stdout.strip()
    if not remote or not merge.startswith("refs/heads/"):
        return None
    return remote, merge.removeprefix("refs/heads/")


def track(vault: Vault, remote: Remote) -> bool:
    """Record ``remote``'s branch as the one the local branch tracks, unless it
    tracks a branch of another remote already (that is the person's to change)
    and this one was not asked for by name. True when it changed."""
    local = current_branch(vault)
    now = upstream(vault, local)
    if now == (remote.name, remote.branch) or (now is not None and now[0] != remote.name and not remote.chosen):
        return False
    check(run_git(vault, "config", f"branch.{local}.remote", remote.name), "config")
    check(run_git(vault, "config", f"branch.{local}.merge", f"refs/heads/{remote.branch}"), "config")
    return True


def toplevel(vault: Vault) -> Path:
    return Path(check(run_git(vault, "rev-parse", "--show-toplevel"), "rev-parse").stdout.strip())


def prefix(vault: Vault) -> str:
    """The vault's folder inside its repository ("" at the top)."""
    return run_git(vault, "rev-parse", "--show-prefix").stdout.strip()


def _network(vault: Vault, args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return run_git(vault, *args, timeout=timeout, network=True)
    except GitTimeout:
        raise RemoteUnreachable(f"git {args[0]} gave no answer in {timeout:g}s; is the remote reachable?") from None


def fetch(vault: Vault, remote: Remote, timeout: float = NETWORK_TIMEOUT) -> str | None:
    """Fetch the remote's branch; its commit, or None when the remote has no such branch yet."""
    spec = f"+refs/heads/{remote.branch}:{remote.tracking}"
    result = _network(vault, ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote.name, spec], timeout)
    if result.returncode != 0:
        message = (result.stderr or result.stdout).strip()
        if "couldn't find remote ref" in message.lower():
            return None
        raise RemoteUnreachable(f"could not fetch from {remote.name}: {last_line(message)}")
    return tracking(vault, remote)


def tracking(vault: Vault, remote: Remote) -> str | None:
    """The remote's branch as of the last fetch or push (no network)."""
    return run_git(vault, "rev-parse", "--verify", "-q", remote.tracking).stdout.strip() or None


@dataclass(frozen=True)
class Pushed:
    ok: bool
    rejected: bool  # the remote moved on since the fetch: fetch and merge again
    message: str


_RACED = ("cannot lock ref", "failed to update ref", "incorrect old value", "but expected")


def push(
    vault: Vault, remote: Remote, sha: str, timeout: float = NETWORK_TIMEOUT, *, over: str | None = None
) -> Pushed:
    """Push ``sha`` to the remote's branch: a fast-forward, or with ``over``, in
    place of exactly that commit (a history rewritten here; refused, as a
    fast-forward would be, when the branch has moved since)."""
    spec = f"{sha}:refs/heads/{remote.branch}"
    lease = [f"--force-with-lease=refs/heads/{remote.branch}:{over}"] if over else []
    result = _network(vault, ["push", "--porcelain", *lease, remote.name, spec], timeout)
    text = f"{result.stdout}\n{result.stderr}"
    if result.returncode == 0:
        run_git(vault, "update-ref", remote.tracking, sha)
        return Pushed(True, False, "")
    # Another device pushed first: refused as not a fast-forward, or (two pushes
    # at once) the remote's ref moved between its check and its update.
    rejected = any(mark in text for mark in ("[rejected]", "non-fast-forward", "fetch first", "stale info")) or (
        "[remote rejected]" in text and any(mark in text for mark in _RACED)
    )
    return Pushed(False, rejected, last_line(result.stderr.strip() or result.stdout.strip()))


def merge_base(vault: Vault, a: str, b: str) -> str | None:
    return run_git(vault, "merge-base", a, b).stdout.strip() or None


def count(vault: Vault, spec: str) -> int:
    out = run_git(vault, "rev-list", "--count", spec).stdout.strip()
    return int(out) if out.isdigit() else 0


def ahead_behind(vault: Vault, local: str, remote: str) -> tuple[int, int]:
    out = run_git(vault, "rev-list", "--left-right", "--count", f"{local}...{remote}").stdout.split()
    return (int(out[0]), int(out[1])) if len(out) == 2 else (0, 0)


# -- trees and blobs ------------------------------------------------------------------

Blob = tuple[str, str]  # (mode, sha)


def tree_files(vault: Vault, commit: str | None) -> dict[str, Blob]:
    """Every file in ``commit`` by repository-relative path."""
    if commit is None:
        return {}
    out = check(run_git(vault, "ls-tree", "-r", "-z", "--full-tree", commit), "ls-tree").stdout
    files = {}
    for record in out.split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        mode, kind, sha = meta.split()
        if kind == "blob":
            files[path] = (mode, sha)
    return files


def read_blobs(vault: Vault, shas: Iterable[str]) -> dict[str, bytes]:
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    found = {}
    for sha, obj in zip(wanted, cat_file(vault.root, wanted), strict=True):
        if obj is None:
            raise GitError(f"git cat-file could not read {sha}")
        found[sha] = obj.data
    return found


def write_blobs(vault: Vault, contents: Mapping[str, bytes]) -> dict[str, str]:
    """Store each content as a blob; path -> blob sha."""
    if not contents:
        return {}
    paths = sorted(contents)
    with tempfile.TemporaryDirectory(prefix="memd-blobs-") as folder:
        names = []
        for number, path in enumerate(paths):
            name = Path(folder) / str(number)
            name.write_bytes(contents[path])
            names.append(str(name))
        result = run_git(vault, "hash-object", "-w", "--no-filters", "--stdin-paths", stdin="\n".join(names) + "\n")
    shas = check(result, "hash-object").stdout.split()
    if len(shas) != len(paths):
        raise GitError("git hash-object did not store every file")
    return dict(zip(paths, shas, strict=True))


def build_commit(
    vault: Vault, parent: str, changes: Mapping[str, Blob | None], parents: list[str], message: str, author: str
) -> str:
    """A commit of ``parent``'s tree with ``changes`` (path -> blob, None: deleted)."""
    gdir = git_dir(vault)
    if gdir is None:
        raise GitError("the vault is not in a git repository")
    info = "".join(
        f"0 {ZERO}\t{path}\n" if blob is None else f"{blob[0]} {blob[1]}\t{path}\n"
        for path, blob in sorted(changes.items())
    )
    with tempfile.NamedTemporaryFile(dir=gdir, prefix="memd-sync-index-") as handle:
        env = {"GIT_INDEX_FILE": handle.name}
        top = str(toplevel(vault))
        check(run(top, "read-tree", parent, env=env), "read-tree")
        check(run(top, "update-index", "--index-info", env=env, stdin=info), "update-index")
        tree = check(run(top, "write-tree", env=env), "write-tree").stdout.strip()
    args = ["commit-tree", tree]
    for sha in parents:
        args += ["-p", sha]
    return check(run(top, *args, env=author_env(author, vault), stdin=message), "commit-tree").stdout.strip()


def move_head(vault: Vault, new: str, old: str, message: str) -> bool:
    """Compare-and-swap HEAD (the branch it names) from ``old`` to ``new``."""
    return run_git(vault, "update-ref", "-m", message, "HEAD", new, old).returncode == 0


def refresh_index(vault: Vault, commit: str, paths: Iterable[str]) -> None:
    """The person's index learns ``commit``'s blobs for ``paths``, so `git status`
    shows no phantom change; their other staged work is untouched."""
    files = tree_files(vault, commit)
    wanted = sorted(set(paths))
    if not wanted:
        return
    info = "".join(f"{files[p][0]} {files[p][1]}\t{p}\n" if p in files else f"0 {ZERO}\t{p}\n" for p in wanted)
    run(toplevel(vault), "update-index", "--index-info", stdin=info)
