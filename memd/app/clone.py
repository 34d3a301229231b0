"""``memd init --from URL``: this machine becomes one more device of a vault.

The remote is cloned whole, then the branch holding its vault is checked out
(``memd.sync.branches.choose``: ``--branch``, else the remote's HEAD branch
when it holds a vault, else the only vault there) and tracked, so ``memd sync``
follows it whatever the local branch is called. A remote with any branch never
gets a new vault from here: one with no vault, or with two unrelated ones,
stops the clone and nothing is kept. Only an empty remote gets a new vault,
pushed. Then one sync claims the next free device index and pushes the claim,
so this clone assigns seqs from its own space from its first ``memd add``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memd.core.errors import GitTimeout, MemdError, VaultError
from memd.git.command import check, last_line, run
from memd.sync.branches import choose, remote_branches
from memd.sync.flow import sync
from memd.sync.gitops import NETWORK_TIMEOUT, RemoteUnreachable, SyncError
from memd.sync.report import SyncReport
from memd.vault.vault import Vault


@dataclass(frozen=True)
class Cloned:
    vault: Vault
    url: str
    branch: str  # the remote's branch the vault follows
    created: bool  # the remote was empty: a new vault was made there
    report: SyncReport

    def to_json(self) -> dict[str, Any]:
        return {
            "vault": str(self.vault.root),
            "url": self.url,
            "branch": self.branch,
            "created": self.created,
            "sync": self.report.to_json(),
        }


def clone_vault(url: str, path: Path, branch: str | None = None, timeout: float = NETWORK_TIMEOUT) -> Cloned:
    """Clone the vault at ``url`` into ``path`` (``branch``: the remote's branch to
    take) and register this machine as a device; ``path`` is left as it was
    found when the remote holds no single vault to take."""
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise VaultError(f"{path} already exists and is not empty; choose a new folder for the clone")
    existed = path.exists()
    try:
        args = ["clone", "--quiet", "--no-checkout", "--origin", "origin", url, str(path)]
        result = run(None, *args, timeout=timeout, network=True)
    except GitTimeout:
        _remove(path, existed)
        raise RemoteUnreachable(f"git clone gave no answer in {timeout:g}s; is {url} reachable?") from None
    if result.returncode != 0:
        _remove(path, existed)
        raise RemoteUnreachable(f"could not clone {url}: {last_line(result.stderr)}")
    root = path.resolve()
    try:
        branches = remote_branches(root, "origin")
        if branches:
            picked = choose(branches, _remote_head(root), branch, url).name
            _check_out(root, picked)
        else:
            picked = _new_vault(root, branch)
    except MemdError:
        _remove(path, existed)
        raise
    vault = Vault(root)
    try:
        report = sync(vault, "origin", timeout=timeout)
    except SyncError as err:
        raise SyncError(
            f"cloned the vault to {root} but could not register this device: {err} "
            "(it assigns seqs from the shared range until `memd sync` there succeeds)"
        ) from None
    return Cloned(vault, url, report.branch or picked, not branches, report)


def _remote_head(root: Path) -> str | None:
    """The branch the remote's HEAD names (git clone records it when that branch exists)."""
    named = run(root, "symbolic-ref", "-q", "refs/remotes/origin/HEAD").stdout.strip()
    return named.removeprefix("refs/remotes/origin/") or None


def _check_out(root: Path, branch: str) -> None:
    """Check out the remote's ``branch`` as a local branch of that name tracking it.

    The clone checked nothing out (no index, no files), so the checkout is
    forced: it writes every file of ``branch``. A local branch git made for
    the remote's HEAD, when that is another branch, is dropped."""
    before = run(root, "symbolic-ref", "-q", "--short", "HEAD").stdout.strip()
    check(run(root, "checkout", "--quiet", "--force", "-B", branch, "--track", f"origin/{branch}"), "checkout")
    if before and before != branch:
        run(root, "branch", "--quiet", "-D", before)  # absent when the remote's HEAD names no branch


def _new_vault(root: Path, branch: str | None) -> str:
    """A new vault in the clone of an empty remote, on ``branch`` (default: the
    branch the remote's HEAD names, as git clone set it); its branch."""
    from memd.app.init import init_vault
    from memd.git.log import commit_as_memd, vault_specs

    if branch is not None:
        if run(root, "check-ref-format", "--branch", branch).returncode != 0:
            raise VaultError(f"{branch!r} is not a valid branch name")
        check(run(root, "symbolic-ref", "HEAD", f"refs/heads/{branch}"), "symbolic-ref")
    made = init_vault(root).vault
    commit_as_memd(made, "init: memd vault", vault_specs(made))
    return check(run(root, "symbolic-ref", "--short", "HEAD"), "symbolic-ref").stdout.strip()


def _remove(path: Path, existed: bool) -> None:
    if existed:
        for child in path.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)
