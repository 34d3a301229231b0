"""``memd undo``: revert one consolidation as a new commit, losing nothing.

The topics the consolidation wrote go back to what they were before it (new
topics are removed, merged-away ones come back), and the buffer entries it
took in are put back into CURRENT.md, before any entry written since: their
words and signatures come from the topics it wrote (a part folded into an
older entry is cut back out of it), and entries it superseded while they were
still in the buffer come from the replaced words its commit message records.
Nothing newer is touched, so the undo is refused when any later commit (a
hand edit, another consolidation) changed one of those topics; hand edits are
never undone. The change goes through the same journal as a consolidation, so
a crash half-way is finished or rolled back by the next memd command.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from memd.consolidation.purge import purged, purged_in_history
from memd.core.document import parse_document
from memd.core.entry import Entry, make_entry
from memd.core.errors import MemdError
from memd.core.signature import SeqSet, Signature
from memd.core.timeutil import format_time, now
from memd.review.entries import Sighting, sightings
from memd.review.message import Message, parse_message
from memd.review.repo import MEMORY_PATHS, CommitInfo, HistoryError, Repo
from memd.review.spans import minus, overlaps, runs, text, union
from memd.vault import journal as journal_mod
from memd.vault.state import read_state, render_state
from memd.vault.vault import Vault


class UndoRefused(MemdError):
    """The consolidation cannot be undone safely; nothing was changed."""


@dataclass(frozen=True)
class Restored:
    signature: Signature
    text: str
    origin: str  # where its words came from: a topic path, or "commit message"

    @property
    def seq(self) -> str:
        return str(self.signature.seq)

    def to_json(self) -> dict[str, object]:
        return {"seq": self.seq, "signature": self.signature.render(), "text": self.text, "from": self.origin}


@dataclass(frozen=True)
class UndoOutcome:
    undone: CommitInfo
    restored: tuple[Restored, ...]
    topics: tuple[tuple[str, str], ...]  # (path, "reverted" | "removed" | "restored")
    withdrawn: str  # seqs the consolidation gave hand-written items; they are unsigned again
    commit: str | None = None
    dry_run: bool = False
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "undone": self.undone.to_json(),
            "consolidation": self.undone.trailers.get("Memd-Consolidation"),
            "restored": [r.to_json() for r in self.restored],
            "topics": [{"path": p, "action": a} for p, a in self.topics],
            "withdrawn": self.withdrawn,
            "commit": self.commit,
            "dry_run": self.dry_run,
            "warnings": list(self.warnings),
        }


def undo(vault: Vault, rev: str | None = None, *, dry_run: bool = False) -> UndoOutcome:
    """Revert the consolidation ``rev`` (default: the last one not undone yet)."""
    from memd.consolidation.run import recover
    from memd.core.errors import GitError
    from memd.git.edits import commit_hand_edits
    from memd.git.log import blocked, changed_paths

    with vault.locked():
        notes = [note for note in [recover(vault)] if note]
        reason = blocked(vault)
        if reason:
            raise UndoRefused(f"cannot undo: {reason}")
        if not dry_run:
            try:
                notes += commit_hand_edits(vault).warnings()  # hand edits are history, never undone
            except GitError as err:
                raise UndoRefused(f"cannot undo: hand edits could not be committed first ({err})") from None
        repo = Repo.open(vault)
        target = _target(repo, rev)
        plan = _plan(vault, repo, target)
        dirty = sorted(set(changed_paths(vault)) & {path for path, _ in plan.outcome.topics})
        if dirty:
            raise UndoRefused(f"cannot undo: {', '.join(dirty)} has uncommitted changes; commit or revert them first")
        outcome = replace(plan.outcome, warnings=(*notes, *plan.outcome.warnings), dry_run=dry_run)
        if dry_run:
            return outcome
        journal_mod.apply(vault, journal_mod.Journal(tuple(plan.changes), plan.message))
    sha, note = journal_mod.finish_commit(vault)  # outside the lock: appends never wait for git
    return replace(outcome, commit=sha, warnings=(*outcome.warnings, *filter(None, [note])))


def _target(repo: Repo, rev: str | None) -> CommitInfo:
    undone = {c.trailers.get("Memd-Undo", ""): c for c in repo.commits("--grep=^Memd-Undo:", "--", *MEMORY_PATHS)}
    if rev is None:
        for commit in repo.commits("--grep=^Memd-Consolidation:", "--", *MEMORY_PATHS):
            if commit.kind == "consolidate" and not commit.by_hand and commit.sha not in undone:
                return commit
        raise UndoRefused("nothing to undo: the vault has no consolidation that is not undone already")
    try:
        commit = repo.commit(repo.resolve(rev))
    except HistoryError as err:
        raise UndoRefused(str(err)) from None
    if commit.kind != "consolidate" or commit.by_hand or "Memd-Consolidation" not in commit.trailers:
        raise UndoRefused(
            f"{commit.short} ({commit.subject}) is not a consolidation; `memd undo` reverts memd's consolidations "
            "only, and hand edits are never undone"
        )
    if commit.sha in undone:
        by = undone[commit.sha]
        raise UndoRefused(f"consolidation {commit.short} was already undone by {by.short} ({by.date[:10]})")
    if not commit.parents:
        raise UndoRefused(f"{commit.short} has no parent commit to go back to")
    return commit


@dataclass(frozen=True)
class _Plan:
    outcome: UndoOutcome
    changes: list[journal_mod.FileChange]
    message: str


def _plan(vault: Vault, repo: Repo, target: CommitInfo) -> _Plan:
    parent = target.parents[0]
    listing = repo.git("diff", "--no-renames", "--name-status", "-z", parent, target.sha, "--", "topics")
    tokens = [t for t in listing.split("\0") if t]
    status = {
        tokens[i + 1][len(repo.prefix) :]: tokens[i][0]
        for i in range(0, len(tokens) - 1, 2)
        if tokens[i + 1].startswith(repo.prefix)
    }
    paths = sorted(status)
    # Only a topic that is no longer as the consolidation left it stands in the way: later
    # commits that cancel out (a later consolidation and its undo) change nothing to revert over.
    changed = _changed_since(repo, target.sha, paths)
    later = repo.commits(f"{target.sha}..HEAD", "--", *changed) if changed else []
    if later:
        names = "; ".join(f"{c.short} {c.subject} ({c.author}, {c.date[:10]})" for c in later[:10])
        raise UndoRefused(
            f"cannot undo consolidation {target.trailers.get('Memd-Consolidation', '')} ({target.short}): later "
            f"commits changed the same topics: {names}"
        )
    blobs = repo.read([f"{parent}:{p}" for p in paths] + [f"{target.sha}:{p}" for p in paths])
    message = parse_message(target.message)
    before = {p: _text(blobs.get(f"{parent}:{p}")) for p in paths}
    after = {p: _text(blobs.get(f"{target.sha}:{p}")) for p in paths}
    old = [s for p, data in before.items() if data is not None for s in sightings(p, data)]
    new = [s for p, data in after.items() if data is not None for s in sightings(p, data)]
    restored, warnings = _restored(message, old, new)
    # An entry purged since is gone for good: its words are out of every commit (a
    # superseded one's record in this commit's message reads "[forgotten]" now).
    gone = purged(vault) | purged_in_history(vault)
    restored = [r for r in restored if gone.isdisjoint(r.signature.seq)]
    withdrawn = minus(minus(runs([s.signature.seq for s in new]), runs([s.signature.seq for s in old])), message.buffer)

    changes: list[journal_mod.FileChange] = []
    topics: list[tuple[str, str]] = []
    for path in paths:
        disk = _on_disk(vault, path)
        changes.append(journal_mod.FileChange(path, disk, before[path]))
        topics.append((path, {"A": "removed", "D": "restored"}.get(status[path], "reverted")))
    current = _on_disk(vault, "CURRENT.md")
    changes.append(journal_mod.FileChange("CURRENT.md", current, _with_entries(current or "", restored)))
    state_text = _on_disk(vault, ".memd/state.json")
    state, _ = read_state(vault)
    if restored and state.buffer_since is None:
        changes.append(
            journal_mod.FileChange(
                ".memd/state.json", state_text, render_state(replace(state, buffer_since=format_time(now())))
            )
        )
    outcome = UndoOutcome(target, tuple(restored), tuple(topics), text(withdrawn), warnings=tuple(warnings))
    return _Plan(outcome, changes, _message(target, outcome))


def _changed_since(repo: Repo, sha: str, paths: list[str]) -> list[str]:
    """Those of ``paths`` whose committed content differs from what ``sha`` holds."""
    if not paths:
        return []
    listing = repo.git("diff", "--no-renames", "--name-only", "-z", sha, "HEAD", "--", *paths)
    return sorted(p[len(repo.prefix) :] for p in listing.split("\0") if p and p.startswith(repo.prefix))


def _restored(message: Message, old: list[Sighting], new: list[Sighting]) -> tuple[list[Restored], list[str]]:
    """The buffer entries the consolidation took in, as entries again."""
    from memd.consolidation.supersessions import ENTRY_SAYS

    buffer = message.buffer
    # Marks the entry brought with it ("the entry says ...") go back with the entry.
    superseded_here = union(*(runs(r.old) for r in message.replacements if not r.reason.startswith(ENTRY_SAYS)))
    found: list[Restored] = []
    for entry in new:
        mine = minus(entry.runs, minus(entry.runs, buffer))
        if not mine:
            continue
        signature = entry.signature.replace(seq=text(mine))
        older = [o for o in old if overlaps(o.runs, entry.runs)]
        if older and entry.signature.src:
            theirs = {part for o in older for part in (o.signature.src or "").split(";")}
            mine_src = [part for part in entry.signature.src.split(";") if part not in theirs]
            signature = signature.replace(src=";".join(mine_src) or None)
        mark = entry.supersedes
        if mark and entry.signature.get("reason") is None:
            # The supersessions this consolidation made are undone with it. An
            # update's own mark (it came with its reason=, Memory.update) or one
            # given with the entry (--meta supersedes=N) was in the buffer before,
            # and goes back with the entry.
            try:
                left = minus(runs(SeqSet.parse(mark)), superseded_here)
            except MemdError:
                left = ()
            signature = signature.replace(supersedes=text(left) or None)
        found.append(Restored(signature, entry.text, entry.path))
    live = union(*(s.runs for s in new))
    for replacement in message.replacements:
        gone = runs(replacement.old)
        if not overlaps(gone, buffer) or overlaps(gone, live) or overlaps(gone, runs([s.signature.seq for s in old])):
            continue
        replaced = replacement.entry
        if replaced is None or replaced.signature is None:
            continue
        found.append(Restored(replaced.signature, replaced.full_text, "commit message"))
    covered = union(*(runs(r.signature.seq) for r in found))
    missing = minus(buffer, covered)
    warnings = []
    if missing:
        warnings.append(
            f"seq {text(missing)} could not be restored: superseded in the buffer by a consolidation made before "
            "memd recorded superseded words"
        )
    return sorted(found, key=lambda r: r.signature.seq.first), warnings


def _with_entries(current: str, restored: list[Restored]) -> str:
    """CURRENT.md with the restored entries before any entry written since
    (they are older), every other line kept byte for byte."""
    if not restored:
        return current
    document = parse_document(current)
    blocks = list(document.blocks)
    at = next((i for i, block in enumerate(blocks) if isinstance(block, Entry)), len(blocks))
    blocks[at:at] = [make_entry(r.signature, r.text) for r in restored]
    return replace(document, blocks=tuple(blocks), final_newline=True).render()


def _message(target: CommitInfo, outcome: UndoOutcome) -> str:
    number = target.trailers.get("Memd-Consolidation", "?")
    body = []
    if outcome.restored:
        body.append("restored to CURRENT.md: " + ", ".join(r.seq for r in outcome.restored))
    body += [f"{action} {path}" for path, action in outcome.topics]
    if outcome.withdrawn:
        body.append(f"withdrawn seqs (hand-written items it adopted are unsigned again): {outcome.withdrawn}")
    seqs = union(*(runs(r.signature.seq) for r in outcome.restored))
    trailers = [f"Memd-Undo: {target.sha}"] + ([f"Memd-Restored: {text(seqs)}"] if seqs else [])
    return "\n\n".join(
        part
        for part in [f"undo: consolidation {number} ({target.short})", "\n".join(body), "\n".join(trailers)]
        if part
    )


def _text(data: bytes | None) -> str | None:
    # As the journal reads and writes files: any byte survives the round trip.
    return data.decode("utf-8", errors="surrogateescape") if data is not None else None


def _on_disk(vault: Vault, rel: str) -> str | None:
    try:
        return (vault.root / rel).read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None
