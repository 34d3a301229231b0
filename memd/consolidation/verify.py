"""No-loss accounting: every seq is live exactly once, superseded with a
record, or was deleted by a person (in a hand-edit commit)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ..document import Document, parse_document
from ..engine.base import Supersession
from ..errors import FormatError
from ..signature import SeqSet
from ..vault import Vault

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
    buffered: int = 0  # acknowledged seqs not yet in any commit, all accounted for
    uncommitted: str | None = None  # a consolidation whose files are written but not committed
    devices: tuple[dict[str, Any], ...] = ()  # live seqs per device space (ARCHITECTURE.md §7)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": not self.problems}


def verify_vault(vault: Vault) -> Report:
    """Account for every seq in the files now, in every commit before, and
    every seq memd acknowledged that no commit holds yet."""
    from .. import acks
    from ..history import blocked, removed_by_person
    from .journal import owed

    documents = []
    for path in vault.entry_files():
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
        history = seq_history(vault)
        commits = len(history)
        previous: set[int] = set()
        held: dict[str, set[int]] = {}
        for commit, parents, seqs, by_hand in history:
            # A merge (two devices' histories joined) is compared with all its parents at once.
            previous = set().union(*(held.get(parent, set()) for parent in parents))
            held[commit] = seqs
            vanished = previous - seqs
            if by_hand:
                deleted_by_hand |= vanished - superseded
            else:
                lost = vanished - superseded - deleted_by_hand
                if lost:
                    problems.append(f"seqs {_span(lost)} vanished in memd commit {commit[:10]} without a record")
            previous = seqs
        deleted_by_hand |= removed_by_person(vault)
        unrecorded = previous - set(live) - superseded
        if unrecorded:
            problems.append(
                f"seqs {_span(unrecorded)} are missing from the files and no commit removed them "
                "(commit the deletion, or restore the lines with git)"
            )
    buffered = acks.pending(vault)
    missing = {seq for seq in buffered if seq not in live and seq not in superseded and seq not in deleted_by_hand}
    if missing:
        problems.append(
            f"acknowledged seqs {_span(missing)} are in no file and no commit removed them "
            "(they were deleted without a commit; memd restores entries an editor wiped from the end of CURRENT.md)"
        )
    devices, stray = _by_device(vault, set(live))
    if stray:
        problems.append(f"seqs {_span(stray)} belong to no registered device (.memd/devices.json)")
    record = owed(vault)
    uncommitted = record[0].splitlines()[0] if record else None
    return Report(
        len(live), len(superseded), len(deleted_by_hand), tuple(problems), commits, len(buffered), uncommitted,
        devices,
    )


def seq_history(vault: Vault) -> list[tuple[str, list[str], set[int], bool]]:
    """(sha, parents, seqs present, made by a person) for each commit that
    changed CURRENT.md or topics, and every merge, parents before children."""
    from ..history import git, machine_email

    machine = machine_email(vault)
    listing = git(
        vault, "log", "--full-history", "--parents", "--topo-order", "--reverse", "--format=%H%x1f%P%x1f%ae",
        "--", "CURRENT.md", "topics",
    )
    history = []
    for line in listing.stdout.splitlines():
        sha, parents, email = [*line.split("\x1f"), "", ""][:3]
        found = git(vault, "grep", "-h", "-o", "-E", "<seq=[0-9+-]+", sha, "--", "CURRENT.md", "topics").stdout
        seqs: set[int] = set()
        for value in re.findall(r"<seq=([0-9+\-]+)", found):
            try:
                seqs.update(SeqSet.parse(value))
            except FormatError:
                continue
        history.append((sha, parents.split(), seqs, email != machine))
    return history


def _by_device(vault: Vault, live: set[int]) -> tuple[tuple[dict[str, Any], ...], set[int]]:
    """Live seqs per device space, and those in a space no registered device owns."""
    from ..sync.device import read_registry, space_of

    try:
        names = {d.index: d.name for d in read_registry(vault).devices}
    except FormatError:
        names = {}
    spaces: dict[int, list[int]] = {}
    for seq in live:
        spaces.setdefault(space_of(seq), []).append(seq)
    if set(spaces) == {0} and not names:
        return (), set()  # a vault that was never synced
    devices = tuple(
        {"index": index, "name": names.get(index, "shared" if index == 0 else None), "live": len(seqs),
         "highest": max(seqs)}
        for index, seqs in sorted(spaces.items())
    )
    stray = {seq for index, seqs in spaces.items() if index and index not in names for seq in seqs}
    return devices, stray
