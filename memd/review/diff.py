"""``memd diff``: what changed in the memory between two commits, in memory
terms (entries filed, merged, superseded, moved, edited, removed; topics
created, split, merged) rather than lines.

Only the memory files that differ between the two commits are read, once
each at both ends; the commit messages in between say which entries were
superseded (with the replaced words, even for entries that never left the
buffer), which topics were split or merged, and which seqs came from the
buffer. Entries are paired across the two ends through an index of their
seqs (``RunIndex``), so the work grows with the entries read, not with
their square.
"""

from __future__ import annotations

from dataclasses import dataclass

from memd.core.signature import SeqSet
from memd.review.entries import Sighting, sightings, unsigned
from memd.review.message import Message, parse_message
from memd.review.pattern import signature_pattern
from memd.review.repo import MEMORY_PATHS, CommitInfo, HistoryError, Repo, decode
from memd.review.spans import RunIndex, Runs, minus, overlaps, runs, text, union
from memd.vault.vault import Vault

# The order changes are listed in.
KINDS = ("filed", "added", "adopted", "restored", "merged", "superseded", "moved", "edited", "removed", "withdrawn")


@dataclass(frozen=True)
class EntryChange:
    """One entry's change. ``at`` is the entry after it (None when it went
    away), ``before`` the entries it came from (in the older commit)."""

    kind: str
    detail: str
    at: Sighting | None
    before: tuple[Sighting, ...] = ()
    by: Sighting | None = None  # the superseding entry
    by_seq: str | None = None
    by_hand: bool = False

    @property
    def seq(self) -> str:
        if self.at is not None:
            return self.at.seq
        return "+".join(s.seq for s in self.before)

    @property
    def text(self) -> str | None:
        if self.at is not None:
            return self.at.text
        return self.before[0].text if self.before else None

    def to_json(self, base: str | None = None, target: str | None = None) -> dict[str, object]:
        data: dict[str, object] = {
            "kind": self.kind,
            "seq": self.seq,
            "detail": self.detail,
            "by_hand": self.by_hand,
            "text": self.text,
            "entry": self.at.to_json(target) if self.at else None,
            "before": [s.to_json(base if s.line else None) for s in self.before],
        }
        if self.by_seq is not None:
            data["superseded_by"] = {"seq": self.by_seq, "entry": self.by.to_json(target) if self.by else None}
        return data


@dataclass(frozen=True)
class TopicChange:
    kind: str  # created | deleted | split | merged
    topic: str
    detail: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "topic": self.topic, "detail": self.detail}


@dataclass(frozen=True)
class MemoryDiff:
    base: str | None  # None: from the empty vault
    target: str
    commits: tuple[CommitInfo, ...]
    entries: tuple[EntryChange, ...]
    topics: tuple[TopicChange, ...]

    def count(self, kind: str) -> int:
        return sum(1 for change in self.entries if change.kind == kind)

    def to_json(self) -> dict[str, object]:
        return {
            "base": self.base,
            "target": self.target,
            "commits": [c.to_json() for c in self.commits],
            "summary": {kind: self.count(kind) for kind in KINDS if self.count(kind)},
            "entries": [c.to_json(self.base, self.target) for c in self.entries],
            "topics": [t.to_json() for t in self.topics],
        }


def resolve_range(repo: Repo, spec: str | None) -> tuple[str | None, str]:
    """``None`` (the last consolidation), ``REV`` (that commit alone) or
    ``A..B`` -> (base commit or None, target commit)."""
    if spec is None or not spec.strip():
        target = repo.last_consolidation().sha
    elif ".." in spec:
        left, right = spec.split("..", 1)
        if right.startswith("."):
            raise HistoryError(f"invalid range {spec!r} (use A..B)")
        base, target = repo.resolve_start(left or "HEAD"), repo.resolve(right or "HEAD")
        if base is not None and base != target and repo.is_ancestor(target, base):
            raise HistoryError(
                f"{spec!r} runs backwards: {left or 'HEAD'} is newer than {right or 'HEAD'} "
                f"(write {right or 'HEAD'}..{left or 'HEAD'})"
            )
        return base, target
    else:
        target = repo.resolve(spec)
    parents = repo.commit(target).parents
    return (parents[0] if parents else None), target


def diff(vault: Vault, spec: str | None = None) -> MemoryDiff:
    """The memory changes from the base to the target commit of ``spec``."""
    repo = Repo.open(vault)
    if repo.head() is None:
        raise HistoryError("the vault has no commits yet")
    base, target = resolve_range(repo, spec)
    span = f"{base}..{target}" if base else target
    commits = repo.commits("--reverse", span, "--", *MEMORY_PATHS)
    changed = _changed_files(repo, base, target)
    wanted = [f"{target}:{p}" for p in changed] + ([f"{base}:{p}" for p in changed] if base else [])
    blobs = repo.read(wanted)
    old: list[Sighting] = []
    new: list[Sighting] = []
    hand_written: set[str] = set()
    for path in changed:
        before = blobs.get(f"{base}:{path}") if base else None
        after = blobs.get(f"{target}:{path}")
        if before is not None:
            old += sightings(path, decode(before))
            hand_written |= unsigned(decode(before))
        if after is not None:
            new += sightings(path, decode(after))
    messages = [parse_message(c.message) for c in commits]
    builder = _Changes(repo, base, target, commits, messages, hand_written)
    entries = builder.compare(old, new)
    topics = _topics(repo, base, target, changed, messages)
    return MemoryDiff(base, target, tuple(commits), tuple(entries), tuple(topics))


def _changed_files(repo: Repo, base: str | None, target: str) -> list[str]:
    if base is None:
        return sorted(repo.files(target, MEMORY_PATHS))
    out = repo.git("diff", "--no-renames", "--name-only", "-z", base, target, "--", *MEMORY_PATHS)
    paths = [p for p in out.split("\0") if p]
    return sorted(p[len(repo.prefix) :] for p in paths if p.startswith(repo.prefix))


class _Changes:
    def __init__(
        self,
        repo: Repo,
        base: str | None,
        target: str,
        commits: list[CommitInfo],
        messages: list[Message],
        hand_written: set[str],
    ) -> None:
        self.repo = repo
        self.base = base
        self.target = target
        self.commits = commits
        self.messages = messages
        self.hand_written = hand_written
        self.buffer: Runs = union(*(m.buffer for m in messages))
        self.replacements = [r for m in messages for r in m.replacements]
        self._replaced = RunIndex([runs(r.old) for r in self.replacements])
        self.undo = any(c.kind == "undo" for c in commits)
        self._new: list[Sighting] = []
        self._new_index = RunIndex([])

    def _first_new(self, seqs: Runs) -> Sighting | None:
        """The first entry at the target end holding any of ``seqs``."""
        found = self._new_index.meeting(seqs)
        return self._new[found[0]] if found else None

    def compare(self, old: list[Sighting], new: list[Sighting]) -> list[EntryChange]:
        changes: list[EntryChange] = []
        paired: set[int] = set()
        old_index = RunIndex([o.runs for o in old])
        self._new, self._new_index = new, RunIndex([n.runs for n in new])
        for entry in new:
            found = old_index.meeting(entry.runs)  # in the old entries' order, as a scan would list them
            olds = [old[i] for i in found]
            paired.update(found)
            change = self._changed(olds, entry) if olds else self._appeared(entry)
            if change is not None:
                changes.append(change)
        for i, entry in enumerate(old):
            if i not in paired:
                changes.append(self._vanished(entry))
        for replacement in self.replacements:
            # Superseded before it left the buffer: only the message holds it.
            if old_index.meeting(runs(replacement.old)):
                continue
            replaced = replacement.entry
            before = (
                (Sighting("CURRENT.md", 0, 0, (), replaced.signature, replaced.full_text),)
                if replaced and replaced.signature
                else ()
            )
            by = self._first_new(runs(replacement.new))
            reason = f": {replacement.reason}" if replacement.reason else ""
            changes.append(
                EntryChange(
                    "superseded",
                    f"seq {replacement.old} was replaced by seq {replacement.new} in the buffer{reason}"
                    + ("" if before else " (its words were not recorded)"),
                    None,
                    before,
                    by,
                    str(replacement.new),
                )
            )
        order = {kind: i for i, kind in enumerate(KINDS)}
        return sorted(changes, key=lambda c: (order.get(c.kind, len(order)), _first(c)))

    def _appeared(self, entry: Sighting) -> EntryChange | None:
        if entry.source == "hand" and entry.text in self.hand_written and not overlaps(entry.runs, self.buffer):
            return EntryChange("adopted", f"a hand-written item in {entry.path} was given seq {entry.seq}", entry)
        if overlaps(entry.runs, self.buffer) and entry.path != "CURRENT.md":
            others = minus(entry.runs, self.buffer)
            detail = f"from the buffer into {_where(entry)}"
            if others:
                detail += f", folded with seq {text(others)}"
            return EntryChange("filed", detail, entry)
        changer = self._changer(entry.path, entry.runs)
        by_hand = changer is not None and changer.by_hand
        return EntryChange(
            "added", f"new in {_where(entry)}" + (" (by hand)" if by_hand else ""), entry, by_hand=by_hand
        )

    def _changed(self, olds: list[Sighting], entry: Sighting) -> EntryChange | None:
        old = olds[0]
        old_runs = runs([o.signature.seq for o in olds])
        grown = minus(entry.runs, old_runs)
        kinds: list[str] = []
        notes: list[str] = []
        if self.undo and entry.path == "CURRENT.md" and old.path != "CURRENT.md":
            kinds.append("restored")
            notes.append(f"back in the buffer from {old.path}")
        elif old.path == "CURRENT.md" and entry.path != "CURRENT.md":
            kinds.append("filed")
            notes.append(f"from the buffer into {_where(entry)}")
        if grown or len(olds) > 1:
            kinds.append("merged")
            parts = [o.seq for o in olds] + ([text(grown)] if grown else [])
            notes.append(f"seq {' and '.join(parts)} folded into seq {entry.seq}")
        elif minus(old_runs, entry.runs):
            kinds.append("edited")
            notes.append(f"seq {old.seq} became {entry.seq}")
        if entry.path != old.path and not {"restored", "filed"} & set(kinds):
            kinds.append("moved")
            notes.append(f"from {old.path} to {_where(entry)}")
        elif entry.path == old.path and entry.headings != old.headings:
            kinds.append("moved")
            notes.append(f"from section {old.section or '(none)'!r} to {entry.section or '(none)'!r}")
        if entry.text != old.text:
            kinds.append("edited")
            notes.append("words changed")
        if entry.supersedes and entry.supersedes != old.supersedes:
            kinds.append("edited")
            notes.append(f"marked as superseding seq {entry.supersedes}")
        if not kinds:
            return None
        changer = self._changer(entry.path, entry.runs) if "edited" in kinds else None
        by_hand = changer is not None and changer.by_hand
        return EntryChange(kinds[0], "; ".join(notes), entry, tuple(olds), by_hand=by_hand)

    def _vanished(self, entry: Sighting) -> EntryChange:
        replaced = self._replaced.meeting(entry.runs)
        if replaced:
            replacement = self.replacements[replaced[0]]
            by = self._first_new(runs(replacement.new))
            reason = f": {replacement.reason}" if replacement.reason else ""
            return EntryChange(
                "superseded", f"replaced by seq {replacement.new}{reason}", None, (entry,), by, str(replacement.new)
            )
        changer = self._changer(entry.path, entry.runs)
        if changer is not None and changer.kind == "undo":
            return EntryChange("withdrawn", "its seq came from the undone consolidation", None, (entry,))
        by_hand = changer is not None and changer.by_hand
        detail = "deleted by hand" if by_hand else "removed by memd without a record (`memd verify` reports it)"
        return EntryChange("removed", detail, None, (entry,), by_hand=by_hand)

    def _changer(self, path: str, seqs: Runs) -> CommitInfo | None:
        """The last commit in the range that changed this entry's line."""
        if len(self.commits) <= 1:
            return self.commits[0] if self.commits else None
        span = f"{self.base}..{self.target}" if self.base else self.target
        found = self.repo.commits("-1", f"-G{signature_pattern(SeqSet(seqs))}", span, "--", path)
        return found[0] if found else None


def _topics(
    repo: Repo, base: str | None, target: str, changed: list[str], messages: list[Message]
) -> list[TopicChange]:
    present = {p for p in repo.files(target, ["topics"])}
    before = {p for p in repo.files(base, ["topics"])} if base else set()
    split_from = {part: topic for m in messages for topic, parts in m.splits for part in parts}
    merged_into = {absorbed: survivor for m in messages for absorbed, survivor in m.merges}
    found: list[TopicChange] = []
    for m in messages:
        for topic, parts in m.splits:
            found.append(TopicChange("split", topic, f"split into {', '.join(parts)}"))
        for absorbed, survivor in m.merges:
            found.append(TopicChange("merged", absorbed, f"merged into {survivor}"))
    for path in changed:
        if not path.startswith("topics/"):
            continue
        topic = path.removeprefix("topics/").removesuffix(".md")
        if path in present and path not in before:
            origin = f" (split from {split_from[topic]})" if topic in split_from else ""
            found.append(TopicChange("created", topic, f"new topic {path}{origin}"))
        elif path in before and path not in present:
            why = f" (merged into {merged_into[topic]})" if topic in merged_into else ""
            found.append(TopicChange("deleted", topic, f"{path} removed{why}"))
    return found


def _where(entry: Sighting) -> str:
    return f"{entry.path}" + (f" # {entry.section}" if entry.section else "")


def _first(change: EntryChange) -> int:
    if change.at is not None:
        return change.at.runs[0][0] if change.at.runs else 0
    return change.before[0].runs[0][0] if change.before and change.before[0].runs else 0
