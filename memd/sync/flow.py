"""``memd sync``: commit, fetch, integrate, register, push (ARCHITECTURE.md §7).

1. Commit what is pending here: an owed consolidation commit, the person's
   hand edits (under their name), memd's own appends and state.
2. Fetch the remote's branch (no lock held: appends never wait for the network).
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

from dataclasses import asdict, dataclass, field
from typing import Any

from .. import acks
from ..commits import GitError, git_lock, run_git
from ..consolidation.journal import finish_commit
from ..consolidation.restore import restore
from ..crashpoints import crashpoint
from ..errors import FormatError
from ..history import blocked, commit_as_memd, commit_hand_edits
from ..layout import holds_entries
from ..signature import SeqSet
from ..state import forget_cache, seqs_in_text
from ..timeutil import format_time, now
from ..vault import Vault
from . import apply as apply_mod
from .device import (
    REGISTRY,
    Device,
    confirm_index,
    ensure_device_id,
    local_identity,
    parse_registry,
    read_registry,
    with_claim,
    write_registry,
)
from .files import merge_registry, merge_state, merge_text
from .gitops import (
    NETWORK_TIMEOUT,
    Remote,
    RemoteUnreachable,
    SyncError,
    build_commit,
    count,
    fetch,
    head,
    is_ancestor,
    merge_base,
    prefix,
    push,
    read_blobs,
    resolve_remote,
    tree_files,
    write_blobs,
)
from .merge import merge_documents

ATTEMPTS = 4
STATE = ".memd/state.json"


@dataclass(frozen=True)
class SyncReport:
    """What one ``memd sync`` did (``--json`` prints ``to_json()``)."""

    remote: str
    branch: str
    pulled: int = 0  # commits received from the remote
    pushed: int = 0  # commits sent to it
    received: int = 0  # entries (seqs) that arrived
    resolved: tuple[str, ...] = ()  # conflicts memd resolved on its own
    conflicts: tuple[str, ...] = ()  # what a person must decide (then nothing was written)
    committed: tuple[str, ...] = ()  # commits made here first: hand edits, buffered entries
    merge: str | None = None  # the merge commit, when one was made
    fast_forward: bool = False
    head: str | None = None
    device: dict[str, Any] | None = None
    registered: bool = False  # this run made the remote hold this clone's device claim
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.conflicts

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for key in ("resolved", "conflicts", "committed", "warnings"):
            data[key] = list(data[key])
        data["ok"] = self.ok
        return data


class SyncConflict(SyncError):
    """A person must decide; the working tree was not touched."""

    def __init__(self, report: SyncReport, remote: Remote) -> None:
        lines = "\n".join(f"  {c}" for c in report.conflicts)
        super().__init__(
            f"sync stopped, a person must decide (the working tree was not changed):\n{lines}\n"
            f"To decide: `git merge {remote.name}/{remote.branch}`, fix the lines git marks, "
            "`git commit`, then `memd sync` again."
        )
        self.report = report


@dataclass
class _Tally:
    pulled: int = 0
    pushed: int = 0
    received: int = 0
    resolved: list[str] = field(default_factory=list)
    committed: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    merge: str | None = None
    fast_forward: bool = False
    registered: bool = False


def sync(vault: Vault, remote_name: str | None = None, *, timeout: float = NETWORK_TIMEOUT) -> SyncReport:
    """Synchronise the vault with its remote; see the module doc for the steps."""
    reason = blocked(vault)
    if reason:
        raise SyncError(f"cannot sync: {reason}")
    remote = resolve_remote(vault, remote_name or vault.config.sync_remote or "origin")
    if head(vault) is None:
        raise SyncError("the vault's repository has no commit yet (run `memd init` in it first)")
    tally = _Tally()
    for _attempt in range(ATTEMPTS):
        tally.committed += commit_pending(vault, tally.warnings)
        crashpoint()  # local work committed, nothing fetched yet
        theirs = fetch(vault, remote, timeout)
        crashpoint()
        _confirm_published(vault, theirs, tally)
        try:
            _integrate(vault, remote, theirs, tally)
        except apply_mod.EditedDuringSync as err:
            tally.warnings.append(f"{err}; tried again")
            continue
        crashpoint()
        device = _claim(vault)
        crashpoint()
        local = head(vault)
        assert local is not None
        if theirs == local:
            return _report(vault, remote, tally)
        outgoing = count(vault, f"{theirs}..{local}" if theirs else local)
        pushed = push(vault, remote, local, timeout)
        crashpoint()  # pushed; this clone does not know its claim is confirmed yet
        if pushed.ok:
            tally.pushed += outgoing
            if device is not None:
                _confirm_published(vault, local, tally)
            return _report(vault, remote, tally)
        if not pushed.rejected:
            raise RemoteUnreachable(f"could not push to {remote.name}: {pushed.message}")
    raise SyncError(f"the remote kept moving while memd was syncing ({ATTEMPTS} tries); run memd sync again")


def _report(vault: Vault, remote: Remote, tally: _Tally) -> SyncReport:
    from .status import device_facts

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
    with vault.locked():
        wiped = restore(vault)
    if wiped.restored:
        warnings.append(f"put back {len(wiped.restored)} entries an editor's save had removed from CURRENT.md")
    try:
        sha = commit_hand_edits(vault, wiped.removed_span)
    except GitError as err:
        raise SyncError(f"cannot sync: your edits could not be committed ({err})") from None
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
    import subprocess

    result = subprocess.run(["git", "-C", str(vault.root), "show", f"HEAD:{repo_path}"], capture_output=True)
    return result.stdout if result.returncode == 0 else None


def _seqs_at_head(vault: Vault, rel: str) -> set[int]:
    committed = _at_head(vault, prefix(vault) + rel)
    return seqs_in_text(committed.decode("utf-8", "surrogateescape")) if committed else set()


# -- 3. integrate ------------------------------------------------------------------


def _integrate(vault: Vault, remote: Remote, theirs: str | None, tally: _Tally) -> None:
    local = head(vault)
    assert local is not None
    if theirs is None or theirs == local or is_ancestor(vault, theirs, local):
        return
    incoming = count(vault, f"{local}..{theirs}")
    pre = prefix(vault)
    ours_files, theirs_files = tree_files(vault, local), tree_files(vault, theirs)
    if is_ancestor(vault, local, theirs):
        changed = sorted(p for p in set(ours_files) | set(theirs_files) if ours_files.get(p) != theirs_files.get(p))
        blobs = read_blobs(vault, [b[1] for f in (ours_files, theirs_files) for p, b in f.items() if p in changed])
        changes = tuple(
            apply_mod.Change(p, _text(blobs, ours_files.get(p)), _text(blobs, theirs_files.get(p))) for p in changed
        )
        before_live = _live(vault, pre, ours_files, blobs)
        apply_mod.apply(vault, apply_mod.Plan(local, theirs, changes, pre))
        tally.fast_forward = True
        tally.received += len(_live(vault, pre, theirs_files, blobs) - before_live)
    else:
        base = merge_base(vault, local, theirs)
        if base is None:
            raise SyncError(
                f"this vault and {remote.name}/{remote.branch} have no history in common (they were started "
                "separately); to bring a vault onto this machine, clone it: memd init PATH --from URL"
            )
        plan, resolved, received, conflicts = _merge_plan(vault, remote, local, theirs, base, pre)
        if conflicts:
            report = SyncReport(
                remote.name,
                remote.branch,
                pulled=incoming,
                resolved=tuple(resolved),
                conflicts=tuple(conflicts),
                committed=tuple(tally.committed),
                head=local,
                warnings=tuple(tally.warnings),
            )
            raise SyncConflict(report, remote)
        assert plan is not None
        apply_mod.apply(vault, plan)
        tally.merge = plan.target
        tally.resolved += resolved
        tally.received += received
    tally.pulled += incoming
    with vault.locked():
        forget_cache(vault)  # many files changed at once: count their seqs afresh


def _text(blobs: dict[str, bytes], blob: tuple[str, str] | None) -> str | None:
    return None if blob is None else blobs[blob[1]].decode("utf-8", errors="surrogateescape")


def _live(vault: Vault, pre: str, files: dict[str, tuple[str, str]], blobs: dict[str, bytes]) -> set[int]:
    """Seqs live in a tree's CURRENT.md and topics (read from ``blobs`` when there, else git)."""
    wanted = {p: b for p, b in files.items() if p.startswith(pre) and holds_entries(p[len(pre) :])}
    missing = [b[1] for b in wanted.values() if b[1] not in blobs]
    blobs = {**blobs, **read_blobs(vault, missing)}
    found: set[int] = set()
    for blob in wanted.values():
        found |= seqs_in_text(blobs[blob[1]].decode("utf-8", errors="surrogateescape"))
    return found


def _merge_plan(
    vault: Vault, remote: Remote, local: str, theirs: str, base: str | None, pre: str
) -> tuple[apply_mod.Plan | None, list[str], int, list[str]]:
    sides = [tree_files(vault, c) for c in (base, local, theirs)]
    base_files, ours_files, theirs_files = sides
    blobs = read_blobs(vault, {b[1] for files in sides for b in files.values()})

    def text(files: dict[str, tuple[str, str]], path: str) -> str | None:
        return _text(blobs, files.get(path))

    def raw(files: dict[str, tuple[str, str]], path: str) -> bytes | None:
        blob = files.get(path)
        return None if blob is None else blobs[blob[1]]

    documents = [
        {p[len(pre) :]: text(files, p) or "" for p in files if p.startswith(pre) and holds_entries(p[len(pre) :])}
        for files in sides
    ]
    merged_docs = merge_documents(*documents)
    resolved = list(merged_docs.resolved)
    conflicts = [str(c) for c in merged_docs.conflicts]
    merged: dict[str, bytes | None] = {
        pre + rel: None if content is None else content.encode("utf-8", errors="surrogateescape")
        for rel, content in merged_docs.files.items()
    }
    for path in sorted(set(ours_files) | set(theirs_files)):
        rel = path[len(pre) :] if path.startswith(pre) else None
        if rel is not None and holds_entries(rel):
            continue
        if ours_files.get(path) == theirs_files.get(path):
            continue
        was, mine, yours = raw(base_files, path), raw(ours_files, path), raw(theirs_files, path)
        if rel == STATE:
            continue  # derived below, from the merged buffer
        if rel == REGISTRY:
            try:
                registry, notes = merge_registry(*(None if c is None else c.decode() for c in (was, mine, yours)))
            except (FormatError, UnicodeDecodeError) as err:
                conflicts.append(f"{path}:1: {err}")
                continue
            resolved += notes
            merged[path] = registry.encode()
            continue
        if mine is None or yours is None:
            present = mine if mine is not None else yours
            if present == was or was is None:
                # Deleted on one side and untouched on the other, or new on one side only.
                merged[path] = None if present == was else present
                continue
            conflicts.append(f"{path}:1: deleted on one side and changed on the other")
            continue
        result = merge_text(was, mine, yours)
        if result is None:
            conflicts.append(f"{path}:1: lines changed differently here and on the remote (git merge-file)")
            continue
        merged[path] = result
    if conflicts:
        return None, resolved, 0, conflicts
    current = pre + "CURRENT.md"
    current_text = merged[current] if current in merged else raw(ours_files, current)
    has_entries = bool(seqs_in_text((current_text or b"").decode("utf-8", errors="surrogateescape")))
    state = merge_state(
        text(base_files, pre + STATE), text(ours_files, pre + STATE), text(theirs_files, pre + STATE), has_entries
    ).encode()
    merged[pre + STATE] = state
    changes = {p: c for p, c in merged.items() if c != raw(ours_files, p)}
    stored = write_blobs(vault, {p: c for p, c in changes.items() if c is not None})
    tree_changes = {
        p: None if c is None else ((ours_files.get(p) or theirs_files.get(p) or ("100644", ""))[0], stored[p])
        for p, c in changes.items()
    }
    incoming = count(vault, f"{local}..{theirs}")
    message = f"sync: merge {remote.name}/{remote.branch} ({incoming} commits, {merged_docs.received} entries received)"
    if resolved:
        message += "\n\n" + "\n".join(resolved[:100])
    message += f"\n\nMemd-Sync: {remote.name}/{remote.branch} {theirs}\nMemd-Resolved: {len(resolved)}"
    target = build_commit(vault, local, tree_changes, [local, theirs], message, vault.config.git_author)
    plan_changes = tuple(
        apply_mod.Change(p, text(ours_files, p), None if c is None else c.decode("utf-8", errors="surrogateescape"))
        for p, c in sorted(changes.items())
    )
    return apply_mod.Plan(local, target, plan_changes, pre), resolved, merged_docs.received, []


# -- 4. devices ------------------------------------------------------------------


def _claim(vault: Vault) -> Device | None:
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


def _confirm_published(vault: Vault, commit: str | None, tally: _Tally) -> None:
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
