"""Which of a remote's branches holds the vault.

A vault follows one branch of its remote. ``memd init --from`` picks it: the
remote's HEAD branch when that holds a vault, else the only vault there; a
remote holding two vaults that were started separately (no commit in common)
is never guessed at. ``memd sync`` on a vault that tracks no branch yet, when
the remote has no branch of the local one's name, follows the remote branch
that holds this vault's history rather than pushing a second one beside it;
when the remote's branch holds a vault started separately, it says which
branch holds this one and the command that follows it.

Two branches share history exactly when they share a root commit (a common
ancestor leads back to a root of both), so branches are grouped by roots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from memd.core.errors import GitTimeout
from memd.git.command import check, head, last_line, run, run_git
from memd.sync.gitops import Remote, RemoteUnreachable, SyncError, prefix
from memd.vault.vault import Vault

HEADS = "+refs/heads/*:refs/remotes/{name}/*"


@dataclass(frozen=True)
class Branch:
    name: str
    commit: str
    vault: bool  # a .memd/ folder at its top
    roots: frozenset[str]  # its root commits: branches that share one share history

    def related(self, other: Branch | frozenset[str]) -> bool:
        roots = other.roots if isinstance(other, Branch) else other
        return bool(self.roots & roots)


def fetch_branches(root: Path, remote: str, timeout: float, where: str = "") -> list[Branch]:
    """Fetch every branch of ``remote`` (its tracking refs of branches gone from it
    are pruned) and describe them; ``where``: the vault's folder in the repository."""
    spec = HEADS.format(name=remote)
    try:
        args = ["fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head", remote, spec]
        result = run(root, *args, timeout=timeout, network=True)
    except GitTimeout:
        raise RemoteUnreachable(f"git fetch gave no answer in {timeout:g}s; is the remote reachable?") from None
    if result.returncode != 0:
        raise RemoteUnreachable(f"could not fetch from {remote}: {last_line(result.stderr or result.stdout)}")
    return remote_branches(root, remote, where)


def remote_branches(root: Path, remote: str, where: str = "") -> list[Branch]:
    """The branches of ``remote`` as of the last fetch (no network), by name."""
    listed = check(
        run(root, "for-each-ref", "--format=%(objectname) %(refname)", f"refs/remotes/{remote}/"), "for-each-ref"
    ).stdout
    found = []
    lead = f"refs/remotes/{remote}/"
    for line in listed.splitlines():
        commit, _, ref = line.partition(" ")
        name = ref[len(lead) :]
        if name == "HEAD" or not commit:  # origin/HEAD names a branch; it is not one
            continue
        found.append(Branch(name, commit, holds_vault(root, commit, where), roots(root, commit)))
    return sorted(found, key=lambda branch: branch.name)


def holds_vault(root: Path, commit: str, where: str = "") -> bool:
    return run(root, "cat-file", "-t", f"{commit}:{where}.memd").stdout.strip() == "tree"


def roots(root: Path, commit: str) -> frozenset[str]:
    return frozenset(check(run(root, "rev-list", "--max-parents=0", commit), "rev-list").stdout.split())


def vaults(branches: Sequence[Branch]) -> list[list[Branch]]:
    """The branches holding a vault, grouped into vaults: branches that share
    history are one vault's; each group's and the groups' order is by name."""
    groups: list[list[Branch]] = []
    for branch in (b for b in branches if b.vault):
        joined = [group for group in groups if any(branch.related(other) for other in group)]
        merged = sorted([branch, *(b for group in joined for b in group)], key=lambda b: b.name)
        groups = [group for group in groups if group not in joined] + [merged]
    return sorted(groups, key=lambda group: group[0].name)


def describe(groups: Sequence[Sequence[Branch]]) -> str:
    """``main; master`` for two vaults, ``main (and old-main); master`` when one has two branches."""
    parts = []
    for group in groups:
        more = [b.name for b in group[1:]]
        parts.append(group[0].name + (f" (and {', '.join(more)})" if more else ""))
    return "; ".join(parts)


class BranchChoice(SyncError):
    """The remote's branches leave no single vault to follow; the message names them and the way out."""


def choose(branches: Sequence[Branch], head: str | None, wanted: str | None, url: str) -> Branch:
    """The branch ``memd init --from`` clones; ``BranchChoice`` when it cannot tell.

    ``wanted`` (``--branch``) is taken as asked. Else the remote's HEAD branch
    when it holds a vault, else the only vault's branch; two vaults started
    separately, or one vault on several branches none of which HEAD names,
    stop with the branches listed."""
    names = ", ".join(b.name for b in branches)
    if wanted is not None:
        picked = next((b for b in branches if b.name == wanted), None)
        if picked is None:
            raise BranchChoice(f"{url} has no branch {wanted!r} (its branches: {names})")
        if not picked.vault:
            raise BranchChoice(f"branch {wanted} of {url} holds no memd vault at its top (no .memd/ folder)")
        return picked
    groups = vaults(branches)
    if not groups:
        raise BranchChoice(
            f"{url} holds no memd vault at its top (no .memd/ folder on any branch: {names}); nothing was kept"
        )
    pick = f"pick one: memd init PATH --from {url} --branch NAME"
    if len(groups) > 1:
        raise BranchChoice(
            f"{url} holds {len(groups)} unrelated memd vaults (started separately, no history in common), "
            f"on branches {describe(groups)}; {pick}"
        )
    (group,) = groups
    at_head = next((b for b in group if b.name == head), None)
    if at_head is not None:
        return at_head
    if len(group) == 1:
        return group[0]
    raise BranchChoice(
        f"{url} holds its vault on several branches ({', '.join(b.name for b in group)}) "
        f"and its HEAD names none of them; {pick}"
    )


# -- memd sync ----------------------------------------------------------------------


def follow(vault: Vault, remote: Remote, warnings: list[str], timeout: float) -> tuple[Remote, str | None]:
    """The remote has no branch ``remote.branch``: the branch holding this
    vault's history instead, with its commit (a warning says so); ``remote``
    itself, with no commit, when no branch of it holds a vault (the push
    creates the branch). A remote holding only another vault stops sync. A
    vault in a folder of a larger repository is left to push its own branch."""
    if prefix(vault):
        return remote, None  # a vault in a folder of a larger repository: its branches are the person's to pick
    found = fetch_branches(vault.root, remote.name, timeout)
    local = head(vault)
    mine = roots(vault.root, local) if local else frozenset()
    related = [b for b in found if b.vault and b.related(mine)]
    if len(related) == 1:
        (branch,) = related
        warnings.append(
            f"{remote.name} has no branch {remote.branch}; following {remote.name}/{branch.name}, which holds "
            "this vault's history (tracked from now on)"
        )
        return replace(remote, branch=branch.name, tracked=False), branch.commit
    if related:
        raise BranchChoice(
            f"{remote.name} has no branch {remote.branch}, and this vault's history is on several of its branches "
            f"({', '.join(b.name for b in related)}); follow one: memd sync --branch NAME"
        )
    others = vaults(found)
    if others:
        raise BranchChoice(
            f"{remote.name} holds another memd vault (started separately, no history in common with this one) "
            f"on {describe(others)}; to bring it onto this machine, clone it: "
            f"memd init PATH --from {_url(vault, remote)} --branch {others[0][0].name}"
        )
    return remote, None


def unrelated(vault: Vault, remote: Remote, timeout: float) -> SyncError:
    """What to say when ``remote.branch`` holds a vault this one shares no history
    with: which of the remote's branches hold which vault, and the command that
    puts this vault back on its own."""
    try:
        found = fetch_branches(vault.root, remote.name, timeout, prefix(vault))
    except RemoteUnreachable:
        found = []
    local = head(vault)
    mine = roots(vault.root, local) if local else frozenset()
    related = [b for b in found if b.related(mine)]
    where = f"{remote.name}/{remote.branch}"
    if related:
        own = ", ".join(b.name for b in related)
        follow_it = f"memd sync --branch {related[0].name}" if len(related) == 1 else "memd sync --branch NAME"
        return SyncError(
            f"{remote.name}'s branches hold two unrelated memd vaults: this vault's history is on {own}, and "
            f"{remote.branch}, which it follows, holds another one started separately (no history in common); "
            f"follow this vault's own branch: {follow_it}"
        )
    return SyncError(
        f"this vault and {where} have no history in common (they were started separately); to bring "
        f"{where}'s vault onto this machine, clone it: memd init PATH --from {_url(vault, remote)} "
        f"--branch {remote.branch}"
    )


def _url(vault: Vault, remote: Remote) -> str:
    return run_git(vault, "remote", "get-url", remote.name).stdout.strip() or "URL"
