"""Finding the commits in which one memory's entry changed, reading as little
of the history as possible.

It starts at the first commit that held the entry (the consolidation whose
``Memd-Seq`` names it, or a commit of the buffer that holds it), then follows
only the files the entry is in, plus CURRENT.md. For those files it lists the
versions later commits wrote (``git log --raw``: tree entries only, no diffs)
and reads them in one ``cat-file`` stream; a version is parsed only when the
entry's lines or the heading above them differ from the version before. When
the entry leaves the files being followed, everything that commit changed is
read to find where it went, and the following goes on from there. Without a
start it falls back to ``git log -G`` over every memory file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memd.review.entries import Sighting, sightings
from memd.review.repo import MEMORY_PATHS, CommitInfo, Repo, decode
from memd.review.spans import Runs, overlaps

Files = dict[str, list[Sighting]]
Changed = tuple[tuple[str, str], ...]


def memory_files(files: Changed) -> Changed:
    return tuple((status, path) for status, path in files if path == "CURRENT.md" or path.startswith("topics/"))


@dataclass
class Follow:
    repo: Repo
    pattern: str  # the ERE of signatures holding the seqs
    tracked: Runs
    order: dict[str, int]
    where: Files = field(default_factory=dict)
    _regex: re.Pattern[str] = field(init=False)

    def __post_init__(self) -> None:
        self._regex = re.compile(self.pattern)

    def run(self, starts: list[tuple[CommitInfo, Changed]]) -> list[tuple[CommitInfo, Files]]:
        if not starts:
            changed = self.repo.changes("--reverse", f"-G{self.pattern}", "--", *MEMORY_PATHS)
            return [self._apply(commit, self.read(commit, files)) for commit, files in changed]
        first, files = min(starts, key=lambda pair: self.order.get(pair[0].sha, -1))
        found = [self._apply(first, self.read(first, memory_files(files)))]
        cursor = first.sha
        while True:
            restart = self._versions(cursor, found)
            if restart is None:
                return found
            cursor = restart

    def _versions(self, cursor: str, found: list[tuple[CommitInfo, Files]]) -> str | None:
        """Walk the followed files' versions after ``cursor``; returns the commit
        to start again from when the entry moved to a file not followed."""
        followed = sorted({"CURRENT.md", *self.where})
        # Only commits descended from ``cursor``: after a sync's merge, the other side's
        # commits (older than the merge, newer than ``cursor``) never held this entry's
        # version of the files, and walking them read as if memd had removed it. Every
        # merge that changed a followed file is read (``-m``), against each parent.
        versions = self.repo.versions(
            "--reverse", "--ancestry-path", "--full-history", "-m", f"{cursor}..HEAD", "--", *followed
        )
        starting = [f"{cursor}:{path}" for path in followed]
        blobs = self.repo.read([*starting, *(blob for _, files in versions for _, _, blob in files if blob)])
        keys = {path: self._key(_text(blobs.get(f"{cursor}:{path}"))) for path in followed}
        for commit, files in versions:
            changed: Files = {}
            for _, path, blob in files:
                text = _text(blobs.get(blob) if blob else None)
                key = self._key(text)
                if key == keys.get(path):
                    continue  # the entry's lines and headings are as they were
                keys[path] = key
                entries = sightings(path, text, self.tracked) if key else []
                if not _same(entries, self.where.get(path, [])):
                    changed[path] = entries
            if not changed:
                continue
            before = set(self.where)
            found.append(self._apply(commit, changed))
            if set(self.where) - before:
                return commit.sha
        return None

    def _key(self, text: str) -> tuple[str, ...]:
        """What must differ between two versions of a file for the entry in it
        to have changed: its lines and the heading above each (empty: absent)."""
        parts: list[str] = []
        for match in self._regex.finditer(text):
            start = text.rfind("\n", 0, match.start()) + 1
            end = text.find("\n", match.end())
            end = len(text) if end < 0 else end
            while end < len(text) and text.startswith(("  ", "\t"), end + 1):  # continuation lines
                nxt = text.find("\n", end + 1)
                end = len(text) if nxt < 0 else nxt
            heading = text.rfind("\n#", 0, start)
            heading_line = text[heading + 1 : text.find("\n", heading + 1)] if heading >= 0 else ""
            parts += [text[start:end], heading_line]
        return tuple(parts)

    def _apply(self, commit: CommitInfo, files: Files) -> tuple[CommitInfo, Files]:
        old = [s for found in self.where.values() for s in found]
        new = [s for found in {**self.where, **files}.values() for s in found]
        if any(not any(overlaps(o.runs, n.runs) for n in new) for o in old):
            # It left the files being followed: look at everything this commit changed.
            # A merge's changes against each of its parents (``-m``): a sync may have moved it.
            listed = self.repo.changes("-1", "-m", commit.sha, "--", *MEMORY_PATHS)
            everything = dict.fromkeys(change for _, changed in listed for change in changed)
            rest = tuple((status, path) for status, path in everything if path not in files)
            files = {**files, **self.read(commit, rest)}
        for path, found in files.items():
            if found:
                self.where[path] = found
            else:
                self.where.pop(path, None)
        return commit, files

    def read(self, commit: CommitInfo, changed: Changed) -> Files:
        """The entries holding the seqs in the files a commit changed."""
        blobs = self.repo.read(f"{commit.sha}:{path}" for status, path in changed if status != "D")
        files: Files = {}
        for _, path in changed:
            data = blobs.get(f"{commit.sha}:{path}")
            text = decode(data) if data is not None else ""
            files[path] = sightings(path, text, self.tracked) if self._regex.search(text) else []
        return files


def _text(data: bytes | None) -> str:
    return decode(data) if data is not None else ""


def _same(a: list[Sighting], b: list[Sighting]) -> bool:
    """The same entries, wherever their lines moved to."""

    def content(found: list[Sighting]) -> list[tuple[object, ...]]:
        return [(s.headings, s.signature.render(), s.text) for s in found]

    return content(a) == content(b)
