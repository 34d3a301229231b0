"""Replaying the commits that touched one memory into the steps of its life:
each commit's entries are paired with the ones before it by shared seqs, and
the differences are named (filed, merged, moved, edited, superseded...)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memd.review.entries import Sighting, sightings
from memd.review.follow import Files
from memd.review.message import Message, Replacement, parse_message
from memd.review.repo import CommitInfo, Repo, decode
from memd.review.spans import Runs, minus, overlaps, runs, text


@dataclass(frozen=True)
class Step:
    """One thing that happened to the memory.

    kind: added (written to the buffer), filed (placed in a topic by a
    consolidation), merged (folded with other entries), moved (to another
    topic or section), edited (words changed), superseded (replaced by a newer
    entry: ``by``), removed (deleted; by a person when ``by_hand``), restored
    (put back in the buffer by ``memd undo``), adopted (a hand-written item
    given a seq), withdrawn (a seq an undone consolidation had handed out)."""

    kind: str
    detail: str
    commit: CommitInfo | None
    date: str | None
    author: str
    by_hand: bool
    at: Sighting | None  # the entry after this step (None: gone)
    before: Sighting | None = None  # the entry before it, when it existed in a commit
    by: Sighting | None = None  # the superseding entry
    by_seq: str | None = None

    @property
    def cite(self) -> str | None:
        """``path:line@sha`` of the entry after this step (None when it is gone
        or was never in a committed file)."""
        if self.at is None or not self.at.line:
            return None
        return self.at.cite(self.commit.sha if self.commit else None)

    def to_json(self) -> dict[str, object]:
        sha = self.commit.sha if self.commit else None
        data: dict[str, object] = {
            "kind": self.kind,
            "detail": self.detail,
            "date": self.date,
            "commit": sha,
            "short": sha[:7] if sha else None,
            "author": self.author,
            "by_hand": self.by_hand,
            "subject": self.commit.subject if self.commit else None,
            "cite": self.cite,
            "entry": self.at.to_json(sha) if self.at else None,
            "before": self.before.to_json() if self.before else None,
        }
        if self.by_seq is not None:
            data["superseded_by"] = {"seq": self.by_seq, "entry": self.by.to_json(sha) if self.by else None}
        return data


@dataclass
class Walk:
    """Replays the commits that touched the memory, oldest first."""

    repo: Repo
    tracked: Runs
    state: dict[str, list[Sighting]] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    read: int = 0

    def commit(self, commit: CommitInfo, files: Files) -> None:
        message = parse_message(commit.message)
        before = [s for found in self.state.values() for s in found]
        for path, found in files.items():
            if found:
                self.state[path] = found
            else:
                self.state.pop(path, None)
        after = [s for found in self.state.values() for s in found]
        self._compare(commit, message, before, after)

    def working_tree(self, present: Files) -> None:
        """The files as they are now, committed or not."""
        before = [s for found in self.state.values() for s in found]
        self.state = {path: list(found) for path, found in present.items()}
        self._compare(None, Message(), before, [s for found in present.values() for s in found])

    # -- classification -----------------------------------------------------
    def _compare(
        self, commit: CommitInfo | None, message: Message, before: list[Sighting], after: list[Sighting]
    ) -> None:
        paired: set[int] = set()
        for new in after:
            olds = [old for old in before if overlaps(old.runs, new.runs)]
            paired.update(id(old) for old in olds)
            if olds:
                self._changed(commit, message, olds, new)
            else:
                self._appeared(commit, message, new)
        for old in before:
            if id(old) not in paired:
                self._vanished(commit, message, old)
        if commit is not None:
            self._buffer_supersessions(commit, message, before)

    def _step(
        self,
        kind: str,
        detail: str,
        commit: CommitInfo | None,
        at: Sighting | None,
        *,
        before: Sighting | None = None,
        by: Sighting | None = None,
        by_seq: str | None = None,
        date: str | None = None,
    ) -> None:
        """A step; ``date`` stands in for the commit's when there is none."""
        if commit is None and at is not None and not at.line:
            author, by_hand = f"source: {at.source or '?'}", False  # written to the buffer, never committed there
        elif commit is None:
            author, by_hand = "(not committed)", True
        else:
            author, by_hand, date = commit.author, commit.by_hand, commit.date
        self.steps.append(Step(kind, detail, commit, date, author, by_hand, at, before, by, by_seq))

    def _appeared(self, commit: CommitInfo | None, message: Message, new: Sighting) -> None:
        first = not self.steps
        if commit is not None and commit.kind == "undo":
            detail = (
                "back in the buffer: the consolidation that filed it was undone"
                if new.path == "CURRENT.md"
                else f"back in {new.path}: the consolidation that replaced it was undone"
            )
            self._step("restored", detail, commit, new)
        elif commit is None:
            where = "in the buffer, not consolidated yet" if new.path == "CURRENT.md" else "not committed yet"
            self._step("added", where, None, new, date=new.time)
        elif commit.by_hand:
            self._step("added", f"written by hand into {new.path}", commit, new)
        elif new.source == "hand" and not overlaps(new.runs, message.buffer):
            self._step("adopted", "a hand-written item was given a seq", commit, new)
        elif new.path == "CURRENT.md":
            self._step("added", "committed in the buffer", commit, new)
        else:
            if first:
                own = not minus(new.runs, self.tracked)
                written = Sighting("CURRENT.md", 0, 0, (), new.signature, new.text) if own else None
                self._step(
                    "added",
                    "written to the buffer" + ("" if own else f" (its own words were folded into seq {new.seq})"),
                    None,
                    written,
                    date=new.time if own else None,
                )
            number = commit.trailers.get("Memd-Consolidation")
            label = f"consolidation {number}" if number else commit.subject
            others = minus(new.runs, self.tracked)
            detail = f"{label} filed it under {new.section or new.path}"
            if others:
                detail += f", folded with seq {text(others)}"
            self._step("filed", detail, commit, new)

    def _changed(self, commit: CommitInfo | None, message: Message, olds: list[Sighting], new: Sighting) -> None:
        old = olds[0]
        notes: list[str] = []
        kinds: list[str] = []
        if commit is not None and commit.kind == "undo" and new.path == "CURRENT.md" and old.path != "CURRENT.md":
            kinds.append("restored")
            notes.append(f"back in the buffer from {old.path}: the consolidation that filed it was undone")
        elif old.path == "CURRENT.md" and new.path != "CURRENT.md":
            number = commit.trailers.get("Memd-Consolidation") if commit else None
            kinds.append("filed")
            notes.append(
                f"{f'consolidation {number}' if number else 'moved from the buffer and'} filed it under "
                f"{new.section or new.path}"
            )
        grown = minus(new.runs, runs([o.signature.seq for o in olds]))
        if grown or len(olds) > 1:
            kinds.append("merged")
            notes.append(f"folded into seq {new.seq}" + (f" (with seq {text(grown)})" if grown else ""))
        shrunk = minus(runs([o.signature.seq for o in olds]), new.runs)
        if shrunk and not grown:
            kinds.append("edited")
            notes.append(f"seq {old.seq} became {new.seq}")
        if new.path != old.path and not {"restored", "filed"} & set(kinds):
            kinds.append("moved")
            notes.append(f"moved from {old.path} to {new.path}" + _why_moved(message, old.path, new.path))
        elif new.path == old.path and new.headings != old.headings:
            kinds.append("moved")
            notes.append(f"moved from section {old.section or '(none)'!r} to {new.section or '(none)'!r}")
        if new.text != old.text:
            kinds.append("edited")
            notes.append("words changed by hand" if commit is None or commit.by_hand else "words changed by memd")
        if new.supersedes and new.supersedes != old.supersedes:
            notes.append(f"now marked as superseding seq {new.supersedes}")
            kinds.append("edited")
        if not kinds:
            return
        self._step(kinds[0], "; ".join(notes), commit, new, before=old)

    def _vanished(self, commit: CommitInfo | None, message: Message, old: Sighting) -> None:
        replacement = next((r for r in message.replacements if overlaps(runs(r.old), old.runs)), None)
        if commit is not None and replacement is not None:
            self._superseded(commit, message, replacement, old, "")
        elif commit is not None and commit.kind == "undo":
            self._step("withdrawn", "the consolidation that gave it this seq was undone", commit, None, before=old)
        elif commit is None or commit.by_hand:
            self._step("removed", "deleted by hand", commit, None, before=old)
        else:
            self._step(
                "removed", "removed by memd without a record (`memd verify` reports it)", commit, None, before=old
            )

    def _buffer_supersessions(self, commit: CommitInfo, message: Message, before: list[Sighting]) -> None:
        """Entries superseded while still in the uncommitted buffer: their words
        live only in the consolidation's message."""
        seen = runs([s.signature.seq for s in before])
        for replacement in message.replacements:
            old = runs(replacement.old)
            if not overlaps(old, self.tracked) or overlaps(old, seen) or self.steps:
                continue
            entry = replacement.entry
            sighting = None
            if entry is not None and entry.signature is not None:
                sighting = Sighting("CURRENT.md", 0, 0, (), entry.signature, entry.full_text)
            self._step(
                "added",
                "written to the buffer" + ("" if sighting else " (its words were not recorded)"),
                None,
                sighting,
                date=sighting.time if sighting else None,
            )
            self._superseded(commit, message, replacement, sighting, " before it left the buffer")

    def _superseded(
        self, commit: CommitInfo, message: Message, replacement: Replacement, before: Sighting | None, when: str
    ) -> None:
        """The step of an entry replaced by a newer one (``when`` says where it was then)."""
        by = self._superseding(commit, message, runs(replacement.new))
        reason = f": {replacement.reason}" if replacement.reason else ""
        self._step(
            "superseded",
            f"replaced by seq {replacement.new}{when}{reason}",
            commit,
            None,
            before=before,
            by=by,
            by_seq=str(replacement.new),
        )

    def _superseding(self, commit: CommitInfo, message: Message, new: Runs) -> Sighting | None:
        placement = next((p for p in message.placements if overlaps(runs(p.seqs), new)), None)
        paths = [placement.path.removeprefix("./")] if placement else []
        blobs = self.repo.read(f"{commit.sha}:{p}" for p in paths)
        for path in paths:
            data = blobs.get(f"{commit.sha}:{path}")
            if data is not None:
                found = sightings(path, decode(data), new)
                if found:
                    return found[0]
        return None


def _why_moved(message: Message, old_path: str, new_path: str) -> str:
    old_id = _topic_id(old_path)
    for topic, parts in message.splits:
        if topic == old_id and _topic_id(new_path) in parts:
            return f" (topic {topic} was split)"
    for absorbed, survivor in message.merges:
        if absorbed == old_id and survivor == _topic_id(new_path):
            return f" (topic {absorbed} was merged into {survivor})"
    return ""


def _topic_id(path: str) -> str:
    return path.removeprefix("topics/").removesuffix(".md")
