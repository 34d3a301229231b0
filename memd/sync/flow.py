"""``memd sync``: commit, fetch, integrate, register, push (ARCHITECTURE.md §7).

1. Commit what is pending here: an owed consolidation commit, the person's
   hand edits (under their name), memd's own appends and state.
2. Fetch the remote's branch (no lock held: appends never wait for the network):
   the one the vault tracks (set at clone), else the local branch's name; a
   vault that tracks none, on a remote without that name, follows the branch
   holding its history (``branches.py``), so it never starts a second one.
3. Integrate with a merge: fast-forward when only the remote moved; else a
   merge commit whose memd files are merged by entry (``merge.py``), built on
   objects, then written to the working tree all at once (``apply.py``). When
   a person must decide, sync stops before writing anything.
4. Register this clone as a device if it is not one yet: claim the next free
   index in ``.memd/devices.json``, committed.
5. Push. The remote refuses a push that does not fast-forward, so a claim or
   a merge made against an old remote is redone from 2; a claim counts (and
   seqs come from its space) only once the remote holds it.
"""

from __future__ import annotations

from memd.consolidation.purge import after_fetch
from memd.consolidation.restore import Unsettled, restore
from memd.core.crashpoints import crashpoint
from memd.core.errors import FormatError, GitError
from memd.core.signature import SeqSet
from memd.core.timeutil import format_time, now
from memd.git.command import head, run_bytes, run_git
from memd.git.commits import git_lock
from memd.git.edits import commit_hand_edits
from memd.git.log import blocked, commit_as_memd
from memd.sync import apply as apply_mod
from memd.sync.gitops import (
    NETWORK_TIMEOUT,
    Remote,
    RemoteUnreachable,
    SyncError,
    count,
    fetch,
    prefix,
    push,
    resolve_remote,
    track,
)
from memd.sync.integrate import Unrelated, integrate
from memd.sync.merge import Take
from memd.sync.report import SyncConflict, SyncReport, Tally
from memd.vault import acks
from memd.vault.journal import finish_commit
from memd.vault.seq_cache import forget_cache
from memd.vault.seqspace import REGISTRY
from memd.vault.spaces import (
    Device,
    confirm_index,
    ensure_device_id,
    local_identity,
    parse_registry,
    read_registry,
    with_claim,
    write_registry,
)
from memd.vault.state import seqs_in_text
from memd.vault.vault import Vault

__all__ = ["SyncConflict", "SyncReport", "claim", "commit_pending", "sync"]

ATTEMPTS = 8
# After a push the remote refused (another device pushed first), wait a random
# while, doubling up to this, before fetching again: two devices syncing in
# loops otherwise race each other on every try.
BACKOFF_SECONDS = 0.05
BACKOFF_MAX_SECONDS = 2.0
STATE = ".memd/state.json"


def sync(
    vault: Vault,
    remote_name: str | None = None,
    *,
    branch: str | None = None,
    take: Take | None = None,
    timeout: float = NETWORK_TIMEOUT,
) -> SyncReport:
    """Synchronise the vault with its remote; see the module doc for the steps.
    ``branch`` names the remote's branch to follow (and track from now on);
    ``take`` which version wins where both changed one entry or line."""
    from memd.sync import branches

    reason = blocked(vault)
    if reason:
        raise SyncError(f"cannot sync: {reason}")
    remote = resolve_remote(vault, remote_name or vault.config.sync_remote or "origin", branch)
    if head(vault) is None:
        raise SyncError("the vault's repository has no commit yet (run `memd init` in it first)")
    tally = Tally()
    for attempt in range(ATTEMPTS):
        if attempt:
            _back_off(attempt)
        tally.committed += commit_pending(vault, tally.warnings)
        crashpoint()  # local work committed, nothing fetched yet
        theirs = fetch(vault, remote, timeout)
        if theirs is None and not remote.chosen:
            remote, theirs = branches.follow(vault, remote, tally.warnings, timeout)
        crashpoint()
        # A history forgotten in part (``memd forget --purge``) here or on another device:
        # both sides lose the words before they meet, and the old remote branch is pushed over.
        theirs, over = after_fetch(vault, theirs, remote.tracking)
        _confirm_published(vault, theirs, tally)
        try:
            integrate(vault, remote, theirs, tally, take)
        except Unrelated:
            raise branches.unrelated(vault, remote, timeout) from None
        except apply_mod.EditedDuringSync as err:
            tally.warnings.append(f"{err}; tried again")
            continue
        crashpoint()
        device = claim(vault)
        crashpoint()
        local = head(vault)
        assert local is not None
        if theirs == local and over is None:
            track(vault, remote)
            return _report(vault, remote, tally)
        outgoing = count(vault, f"{theirs}..{local}" if theirs else local)
        _push_gate(vault, theirs, local)
        pushed = push(vault, remote, local, timeout, over=over)
        crashpoint()  # pushed; this clone does not know its claim is confirmed yet
        if pushed.ok:
            tally.pushed += outgoing
            if device is not None:
                _confirm_published(vault, local, tally)
            track(vault, remote)
            return _report(vault, remote, tally)
        if not pushed.rejected:
            raise RemoteUnreachable(f"could not push to {remote.name}: {pushed.message}")
    raise SyncError(f"the remote kept moving while memd was syncing ({ATTEMPTS} tries); run memd sync again")


def _push_gate(vault: Vault, theirs: str | None, local: str) -> None:
    """A remote keeps what it is sent for good: no commit that adds a secret is
    pushed. memd's own commits pass its gate (``git/commits.secret_gate``); one
    made with git directly may not."""
    from memd.git.commits import secrets_in_commits

    found = secrets_in_commits(vault, [local, f"^{theirs}"] if theirs else [local])
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise SyncError(
            f"cannot push: commit {found[0]}{more}; rewrite that commit without it "
            "(`git commit --amend` for the last one, `git rebase -i` for an earlier one), then run memd sync again"
        )


def _back_off(attempt: int) -> None:
    import random
    import time

    time.sleep(random.uniform(0, min(BACKOFF_MAX_SECONDS, BACKOFF_SECONDS * 2**attempt)))


def _report(vault: Vault, remote: Remote, tally: Tally) -> SyncReport:
    from memd.sync.status import device_facts

    return SyncReport(
        remote=remote.name,
        branch=remote.branch,
        pulled=tally.pulled,
        pushed=tally.pushed,
        received=tally.received,
        resolved=tuple(tally.resolved),
        committed=tuple(tally.committed),
        merge=tally.merge,
        fast_forward=tally.fast_forward,
        head=head(vault),
        device=device_facts(vault),
        registered=tally.registered,
        warnings=tuple(tally.warnings),
    )


# -- 1. what is pending here --------------------------------------------------------


def commit_pending(vault: Vault, warnings: list[str]) -> list[str]:
    """Commit what sync must carry: an owed consolidation commit, hand edits
    (the person's), then memd's own appends, counters and device registry."""
    made: list[str] = []
    sha, note = finish_commit(vault)
    if note:
        raise SyncError(f"cannot sync before the last consolidation is committed: {note}")
    if sha:
        made.append(sha)
    try:
        with vault.locked():
            wiped = restore(vault)
    except Unsettled:
        raise SyncError("CURRENT.md was being saved as sync started; run `memd sync` again") from None
    if wiped.restored:
        warnings.append(f"put back {len(wiped.restored)} entries an editor's save had removed")
    try:
        edits = commit_hand_edits(vault, wiped.removed_span)
    except GitError as err:
        raise SyncError(f"cannot sync: your edits could not be committed ({err})") from None
    if edits.held:
        # A remote keeps what it is sent for good: nothing is pushed while an edit may hold a secret.
        raise SyncError(f"cannot sync: {edits.warnings()[0]}")
    sha = edits.sha
    if sha:
        made.append(sha)
        if wiped.removed:
            with vault.locked():
                acks.settle(vault, wiped.removed)
    own = _own_changes(vault)
    if own:
        buffer = own.get("CURRENT.md")
        seqs = seqs_in_text(buffer.decode("utf-8", "surrogateescape")) if buffer else set()
        fresh = seqs - _seqs_at_head(vault, "CURRENT.md")
        subject = f"sync: {len(fresh)} buffered entries" if fresh else "sync: memd's state"
        trailers = {"Memd-Seq": str(SeqSet.of(fresh))} if fresh else None
        sha, note = commit_as_memd(vault, subject, own, trailers)
        if note:
            raise SyncError(f"cannot sync: {note}")
        if sha:
            made.append(sha)
    return made


def _own_changes(vault: Vault) -> dict[str, bytes | None]:
    """memd's own uncommitted writes: appends to CURRENT.md, the state, the registry."""
    pre = prefix(vault)
    with vault.locked():
        found: dict[str, bytes | None] = {}
        for rel in ("CURRENT.md", STATE, REGISTRY):
            path = vault.root / rel
            disk = path.read_bytes() if path.exists() else None
            committed = _at_head(vault, pre + rel)
            if disk == committed or disk is None:
                continue
            if rel == REGISTRY:
                parse_registry(disk.decode("utf-8", "surrogateescape"))  # a damaged registry never travels
            if (
                rel == "CURRENT.md"
                and apply_mod.appended_tail(
                    (committed or b"").decode("utf-8", "surrogateescape"), disk.decode("utf-8", "surrogateescape")
                )
                is None
            ):
                raise SyncError("CURRENT.md changed while memd was committing it; run memd sync again")
            found[rel] = disk
    return found


def _at_head(vault: Vault, repo_path: str) -> bytes | None:
    result = run_bytes(vault.root, "show", f"HEAD:{repo_path}")
    return result.stdout if result.returncode == 0 else None


def _seqs_at_head(vault: Vault, rel: str) -> set[int]:
    committed = _at_head(vault, prefix(vault) + rel)
    return seqs_in_text(committed.decode("utf-8", "surrogateescape")) if committed else set()


# -- 4. devices ------------------------------------------------------------------


def claim(vault: Vault) -> Device | None:
    """This clone's claim on a device index, committed; None when it is a device already."""
    if local_identity(vault).index is not None:
        return None
    device_id = ensure_device_id(vault)
    with vault.locked():
        registry = read_registry(vault)
        claimed, device = with_claim(registry, device_id, format_time(now()))
        if claimed != registry:
            write_registry(vault, claimed)
        content = (vault.root / REGISTRY).read_bytes()
    if _at_head(vault, prefix(vault) + REGISTRY) != content:
        subject = f"sync: register device {device.name} (index {device.index}, seqs from {device.first_seq})"
        _sha, note = commit_as_memd(vault, subject, {REGISTRY: content})
        if note:
            raise SyncError(f"cannot sync: {note}")
    return device


def _confirm_published(vault: Vault, commit: str | None, tally: Tally) -> None:
    """Once the remote holds this clone's claim, its seqs come from that space."""
    identity = local_identity(vault)
    if commit is None or identity.index is not None or identity.device_id is None:
        return
    shown = run_git(vault, "show", f"{commit}:{prefix(vault)}{REGISTRY}")
    if shown.returncode != 0:
        return
    try:
        device = parse_registry(shown.stdout).find(identity.device_id)
    except FormatError:
        return
    if device is None:
        return
    with git_lock(vault), vault.locked():
        confirm_index(vault, device.index)
        forget_cache(vault)
    tally.registered = True
