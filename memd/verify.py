"""No-loss accounting: every seq is live exactly once, superseded with a
record, or was deleted by a person (in a hand-edit commit)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from .document import Document, parse_document
from .engine.base import Supersession
from .errors import FormatError
from .signature import SeqSet
from .vault import Vault

_SUPERSEDES = re.compile(r"seq (\S+) supersedes seq ([0-9+\-]+)")


def _span(seqs: Iterable[int]) -> str:
    values = set(seqs)
    return str(SeqSet.of(values)) if values else ""


def live_counts(documents: Iterable[Document]) -> Counter[int]:
    counts: Counter[int] = Counter()
    for document in documents:
        for located in document.signed():
            counts.update(located.entry.signature.seq)  # type: ignore[union-attr]
    return counts


def account(before: Iterable[int], after: list[Document], superseded: Iterable[Supersession]) -> list[str]:
    """Problems with a consolidation's result (empty when nothing was lost)."""
    live = live_counts(after)
    gone = {seq for record in superseded for seq in record.old}
    problems = []
    missing = {seq for seq in before if seq not in live and seq not in gone}
    if missing:
        problems.append(f"seqs missing from every topic: {_span(missing)}")
    doubled = {seq for seq, count in live.items() if count > 1}
    if doubled:
        problems.append(f"seqs in more than one entry: {_span(doubled)}")
    return problems


def superseded_in(documents: Iterable[Document]) -> set[int]:
    """Seqs recorded as superseded in topics' ``update_log``."""
    found: set[int] = set()
    for document in documents:
        if document.frontmatter is None:
            continue
        try:
            log = document.frontmatter.data.get("update_log")
        except FormatError:
            continue  # unreadable YAML: its records cannot vouch for anything
        for line in log if isinstance(log, list) else []:
            for match in _SUPERSEDES.finditer(str(line)):
                try:
                    found.update(SeqSet.parse(match.group(2)))
                except FormatError:
                    continue
    return found


@dataclass(frozen=True)
class Report:
    live: int
    superseded: int
    deleted_by_hand: int
    problems: tuple[str, ...]
    commits_checked: int


def verify_vault(vault: Vault) -> Report:
    """Account for every seq in the files now and in every commit before."""
    from .history import blocked, seqs_by_commit, undone_by

    documents = []
    for path in [vault.current, *vault.topic_files()]:
        try:
            documents.append(parse_document(path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError):
            continue
    live = live_counts(documents)
    superseded = superseded_in(documents)
    problems = [f"seq {_span([s])} is in {c} entries" for s, c in sorted(live.items()) if c > 1]
    deleted_by_hand: set[int] = set()
    commits = 0
    if blocked(vault) is None:
        history = seqs_by_commit(vault)
        commits = len(history)
        undone = undone_by(vault)
        position = {sha: i for i, (sha, _, _) in enumerate(history)}
        # What an undo brought back was not lost by the consolidation it undid.
        restored = {target: history[position[u]][1] for u, target in undone.items() if u in position}
        previous: set[int] = set()
        for commit, seqs, by_hand in history:
            vanished = previous - seqs
            if by_hand:
                deleted_by_hand |= vanished - superseded
            else:
                lost = vanished - superseded - deleted_by_hand - restored.get(commit, set())
                if undone.get(commit) in position:
                    # An undo takes back the seqs its consolidation handed out
                    # (hand-written items it adopted are unsigned again); only a
                    # seq that existed before that consolidation can be lost.
                    at = position[undone[commit]]
                    lost &= history[at - 1][1] if at else set()
                if lost:
                    problems.append(f"seqs {_span(lost)} vanished in memd commit {commit[:10]} without a record")
            previous = seqs
        # Uncommitted changes are a person's until committed.
        deleted_by_hand |= previous - set(live) - superseded
    return Report(len(live), len(superseded), len(deleted_by_hand), tuple(problems), commits)
