"""Integrating the remote's history: a fast-forward, or a merge commit built on objects.

Nothing is written to the working tree here but through ``apply.py``; when a
person must decide, ``SyncConflict`` is raised before anything is written.
"""

from __future__ import annotations

from memd.core.errors import FormatError
from memd.core.layout import holds_entries
from memd.git.command import head, is_ancestor
from memd.sync import apply as apply_mod
from memd.sync.files import merge_registry, merge_state, merge_text
from memd.sync.gitops import (
    Remote,
    SyncError,
    build_commit,
    count,
    merge_base,
    prefix,
    read_blobs,
    tree_files,
    write_blobs,
)
from memd.sync.merge import Take, merge_documents
from memd.sync.report import SyncConflict, SyncReport, Tally
from memd.vault.seq_cache import forget_cache
from memd.vault.seqspace import REGISTRY
from memd.vault.state import seqs_in_text
from memd.vault.vault import Vault

STATE = ".memd/state.json"


class Unrelated(SyncError):
    """The remote's branch holds a vault with no history in common with this one."""


def integrate(vault: Vault, remote: Remote, theirs: str | None, tally: Tally, take: Take | None = None) -> None:
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
            raise Unrelated(f"this vault and {remote.name}/{remote.branch} have no history in common")
        plan, resolved, received, conflicts = _merge_plan(vault, remote, local, theirs, base, pre, take)
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
            raise SyncConflict(report, remote, others=tuple(c for c in conflicts if not _of_documents(c)))
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


def _of_documents(conflict: str) -> bool:
    """Whether a conflict (``path:line: message``) is in CURRENT.md or a topic, which ``--take`` settles."""
    return holds_entries(conflict.split(":", 1)[0])


def _merge_plan(
    vault: Vault, remote: Remote, local: str, theirs: str, base: str | None, pre: str, take: Take | None = None
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
    merged_docs = merge_documents(documents[0], documents[1], documents[2], take=take)
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
