"""``memd history``: the life of one memory across the vault's git history.

Fast on long histories because git does the searching and only a few files
are read: ``git log --grep`` finds the consolidation whose ``Memd-Seq``
trailer names the seq (and any whose message records it as superseded, which
is where an entry that never left the buffer keeps its words), and from there
only the versions of the files the entry lives in are looked at (follow.py).
The patterns match exactly the signatures holding the seq (pattern.py).
walk.py names what each commit did to it.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from memd.core.errors import NotFound
from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet
from memd.review.entries import Sighting, sightings
from memd.review.follow import Files, Follow, memory_files
from memd.review.message import parse_message
from memd.review.pattern import signature_pattern, superseded_pattern, trailer_pattern
from memd.review.repo import CommitInfo, Repo
from memd.review.spans import Runs, overlaps, runs
from memd.review.walk import Step, Walk
from memd.vault.vault import Vault

__all__ = ["Life", "Step", "history", "life", "parse_target"]

_SEQ_ARGUMENT = re.compile(r"^(?:seq\s*=?\s*)?([0-9][0-9+\-]*)$", re.IGNORECASE)


@dataclass(frozen=True)
class Life:
    seq: str  # the seqs followed
    steps: tuple[Step, ...]
    now: tuple[Sighting, ...] = ()  # where it is in the files today (empty: gone)
    query: str | None = None
    matched: Sighting | None = None  # the entry a query picked
    commits_read: int = 0  # commits whose files were read (the rest were never opened)

    def to_json(self) -> dict[str, object]:
        return {
            "seq": self.seq,
            "query": self.query,
            "matched": self.matched.to_json() if self.matched else None,
            "now": [s.to_json() for s in self.now],
            "steps": [step.to_json() for step in self.steps],
            "commits_read": self.commits_read,
        }


def parse_target(target: str) -> SeqSet | None:
    """``12``, ``seq 12``, ``12+41`` -> the seqs; anything else is a query (None)."""
    match = _SEQ_ARGUMENT.match(target.strip())
    return SeqSet.parse(match.group(1), MAX_SEQS_PER_ENTRY) if match else None


def history(vault: Vault, target: str) -> Life:
    """The life of the memory ``target`` names: seqs, or words for the
    best-matching entry in the vault now."""
    seqs = parse_target(target)
    if seqs is not None:
        return life(vault, seqs)
    from memd.ask.tools import search
    from memd.index import Filters

    hits = [hit for hit in search(vault, target, 5, Filters(kind="entry")) if hit.get("seq")]
    if not hits:
        raise NotFound(f"no entry matches {target!r}; give a seq instead (`memd grep` finds one)")
    seqs = SeqSet.parse(str(hits[0]["seq"]))
    found = life(vault, seqs)
    matched = [s for s in found.now if s.path == hits[0]["path"] and s.line == hits[0]["line"]]
    return replace(found, query=target, matched=matched[0] if matched else None)


def life(vault: Vault, seqs: SeqSet) -> Life:
    """Every commit in which an entry holding any of ``seqs`` appeared, changed
    words, seqs, file or section, or went away; then the uncommitted state."""
    tracked = runs(seqs)
    repo = Repo.open(vault)
    walk = Walk(repo, tracked)
    present = _present(vault, seqs, tracked)
    if repo.head() is not None:
        pattern = f"-G{signature_pattern(seqs)}"
        # Three independent questions, asked at once (git runs them side by side):
        # the commit order, the commits whose message names the seqs, and the
        # buffer's commits that hold them.
        with ThreadPoolExecutor(3) as pool:
            listing = pool.submit(repo.git, "rev-list", "--reverse", "HEAD")
            messages = pool.submit(
                repo.changes, "-E", f"--grep={trailer_pattern(seqs)}", f"--grep={superseded_pattern(seqs)}"
            )
            buffered = pool.submit(repo.changes, pattern, "--", "CURRENT.md")
        order = {sha: i for i, sha in enumerate(listing.result().split())}
        # Only commits that changed this vault's memory (a repository may hold other vaults).
        named = [(c, memory_files(files)) for c, files in messages.result() if memory_files(files)]
        filed = [(c, files) for c, files in named if overlaps(parse_message(c.message).buffer, tracked)]
        follow = Follow(repo, signature_pattern(seqs), tracked, order)
        commits = follow.run([*filed, *buffered.result()])
        elsewhere = sorted(set(present) - set(follow.where))
        if elsewhere:
            # It is in a file it was not followed into (put back by an undo or
            # by hand after it had gone): that file's history says when.
            commits += [(c, follow.read(c, files)) for c, files in repo.changes(pattern, "--", *elsewhere)]
        commits += [(commit, {}) for commit, _ in named]
        commits = _merged(commits, order)
        walk.read = len(commits)
        for commit, files in commits:
            walk.commit(commit, files)
    walk.working_tree(present)
    if not walk.steps:
        raise NotFound(f"seq {seqs} never appeared in this vault's files or history")
    now = tuple(s for found in walk.state.values() for s in found)
    return Life(str(seqs), tuple(walk.steps), now, commits_read=walk.read)


def _merged(commits: list[tuple[CommitInfo, Files]], order: dict[str, int]) -> list[tuple[CommitInfo, Files]]:
    """One item per commit (their files joined), oldest first."""
    joined: dict[str, tuple[CommitInfo, Files]] = {}
    for commit, files in commits:
        if commit.sha in joined:
            joined[commit.sha][1].update(files)
        else:
            joined[commit.sha] = (commit, dict(files))
    return sorted(joined.values(), key=lambda pair: order.get(pair[0].sha, -1))


def _present(vault: Vault, seqs: SeqSet, tracked: Runs) -> Files:
    """Where the entry is in the files now (only files whose text holds a
    matching signature are parsed)."""
    pattern = re.compile(signature_pattern(seqs))
    found: Files = {}
    for path in [vault.current, *vault.topic_files()]:
        rel = vault.rel(path)
        text = _read(vault, rel)
        if pattern.search(text):
            hits = sightings(rel, text, tracked)
            if hits:
                found[rel] = hits
    return found


def _read(vault: Vault, rel: str) -> str:
    try:
        return (vault.root / rel).read_bytes().decode("utf-8", errors="replace")
    except OSError:
        return ""
