"""No-loss accounting: every seq is live exactly once, superseded with a
record, or was deleted by a person (in a hand-edit commit)."""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from memd.core.atomic import _describe, atomic_write, read_bytes
from memd.core.document import Document, Known, parse_document
from memd.core.errors import FormatError, MemdError
from memd.core.signature import MAX_SEQS_PER_ENTRY, SeqSet
from memd.engine.base import Supersession
from memd.vault.vault import Vault

if TYPE_CHECKING:
    from memd.vault.acks import Ack

_SUPERSEDES = re.compile(r"seq (\S+) supersedes seq ([0-9+\-]+)")


def _span(seqs: Iterable[int]) -> str:
    values = set(seqs)
    return str(SeqSet.of(values)) if values else ""


def live_counts(documents: Iterable[Document]) -> Counter[int]:
    counts: Counter[int] = Counter()
    for document in documents:
        for entry in document.signed_entries():
            counts.update(entry.signature.seq)  # type: ignore[union-attr]
    return counts


def account(
    before: Iterable[int],
    after: list[Document],
    superseded: Iterable[Supersession],
    elsewhere: Collection[int] = (),
) -> list[str]:
    """Problems with a consolidation's result (empty when nothing was lost).
    ``elsewhere``: seqs live in documents not in ``after`` (topics the
    consolidation left unread, so unchanged), each once."""
    live = live_counts(after)
    live.update(elsewhere)
    # What verify will read: a supersession counts only once a topic's
    # update_log written by this run records it, not because the run meant to.
    gone = {seq for record in superseded for seq in record.old}
    recorded = superseded_in(after)
    problems = []
    missing = {seq for seq in before if seq not in live and seq not in gone}
    if missing:
        problems.append(f"seqs missing from every topic: {_span(missing)}")
    unrecorded = {seq for seq in before if seq not in live and seq in gone and seq not in recorded}
    if unrecorded:
        problems.append(f"seqs superseded without a record in any topic's update_log: {_span(unrecorded)}")
    doubled = {seq for seq, count in live.items() if count > 1}
    if doubled:
        problems.append(f"seqs in more than one entry: {_span(doubled)}")
    return problems


def reworded(before: Iterable[Document], after: Iterable[Document]) -> set[int]:
    """Seqs whose entry ``after`` no longer says every word its entry said
    ``before`` (``core.words.contains``): a fold keeps the text that holds
    the others, and nothing else may change what a person wrote."""
    return changed_words(_texts(before), _texts(after))


def changed_words(before: dict[int, list[str]], after: dict[int, list[str]]) -> set[int]:
    """Of the seqs in both maps (seq -> the texts of the entries holding it),
    those with an entry after that says none of its texts before in full. A
    seq held twice before (an editor's old copy beside memd's) keeps its
    words if either copy's are kept."""
    from memd.core.words import contains

    return {
        seq
        for seq, texts in after.items()
        if seq in before and not all(any(text == old or contains(text, old) for old in before[seq]) for text in texts)
    }


def _texts(documents: Iterable[Document]) -> dict[int, list[str]]:
    """seq -> the texts of the entries holding it, over ``documents``."""
    from memd.consolidation.commit_words import joined, texts_of

    return joined([texts_of(document) for document in documents])


def update_log(document: Document) -> list[str] | None:
    """A topic's ``update_log`` lines; None when it has none, or its YAML cannot be read."""
    if document.frontmatter is None:
        return None
    try:
        log = document.frontmatter.data.get("update_log")
    except FormatError:
        return None  # unreadable YAML: its records cannot vouch for anything
    return [str(line) for line in log] if isinstance(log, list) else None


def supersessions(document: Document) -> list[tuple[str, str]]:
    """(newer, older) seqs, as written, of each supersession its ``update_log`` records."""
    return [(m.group(1), m.group(2)) for line in update_log(document) or [] for m in _SUPERSEDES.finditer(line)]


def superseded_in(documents: Iterable[Document]) -> set[int]:
    """Seqs recorded as superseded in topics' ``update_log``."""
    found: set[int] = set()
    for document in documents:
        for _, old in supersessions(document):
            try:
                found.update(SeqSet.parse(old, MAX_SEQS_PER_ENTRY))  # frontmatter anyone can edit
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


def verify_vault(vault: Vault, *, full: bool = False) -> Report:
    """Account for every seq in the files now, in every commit before, and
    every seq memd acknowledged that no commit holds yet.

    The walk through history resumes from a checkpoint (``.memd/verify.json``,
    machine-local) so a verify after one new commit reads one commit; the
    checkpoint is used only when its commit is an ancestor of HEAD, and
    ``full`` walks everything again.
    """
    from memd.core.signature import shared_signatures

    with shared_signatures():  # the walk meets each signature in many versions
        return _verify(vault, full)


def _verify(vault: Vault, full: bool) -> Report:
    from memd.git.log import blocked, removed_by_person, seqs_at, undone_by
    from memd.vault import acks
    from memd.vault.journal import owed
    from memd.vault.state import seqs_in_text

    documents = []
    # Entries parsed once: the files now, and again by the walk, whose newest commits hold most of them.
    known: Known = {}
    unread: list[str] = []
    named: set[int] = set()  # every seq a line names where an entry could start, as history counts them
    paths: list[str] = []  # each document's path
    for path in vault.entry_files():
        try:
            text = read_bytes(path).decode("utf-8")
            documents.append(parse_document(text, known))
            paths.append(vault.rel(path))
            named |= seqs_in_text(text)
        except (OSError, UnicodeDecodeError) as err:
            # Its seqs are not lost, only out of sight: say which file, not "missing".
            why = "not valid UTF-8" if isinstance(err, UnicodeDecodeError) else _describe(err)
            unread.append(f"{vault.rel(path)} cannot be read ({why}), so its seqs cannot be checked")
            continue
    live = live_counts(documents)
    superseded = superseded_in(documents)
    by_count: dict[int, list[int]] = {}
    for seq, count in live.items():
        if count > 1:
            by_count.setdefault(count, []).append(seq)
    problems = [
        f"seq{'s' if len(seqs) > 1 else ''} {_span(seqs)} {'are each' if len(seqs) > 1 else 'is'} in {count} entries "
        "(`memd consolidate` keeps one copy, where it may write the files)"
        for count, seqs in sorted(by_count.items())
    ]
    problems = unread + problems
    deleted_by_hand: set[int] = set()
    commits = 0
    buffered = acks.pending(vault)
    if blocked(vault) is None:
        walk = _walk(vault, full, buffered, known)
        commits = walk.commits
        deleted_by_hand = walk.deleted | removed_by_person(vault)
        undone = undone_by(vault) if walk.vanished else {}
        targets = {target: undo for undo, target in undone.items()}
        for commit, seqs in walk.vanished:
            lost = seqs - superseded - deleted_by_hand
            if commit in targets:  # what an undo brought back was not lost by the consolidation it undid
                lost -= seqs_at(vault, targets[commit])
            if commit in undone:
                # An undo takes back the seqs its consolidation handed out (hand-written
                # items it adopted are unsigned again): only a seq that existed before
                # that consolidation can be lost.
                lost &= seqs_at(vault, f"{undone[commit]}^")
            if lost:
                problems.append(f"seqs {_span(lost)} vanished in memd commit {commit[:10]} without a record")
        problems += [
            f"seqs {_span(seqs)} lost words in memd commit {commit[:10]} (a consolidation may fold entries, "
            f"never change what they say; `git show {commit[:10]}` shows the change)"
            for commit, seqs in walk.reworded
        ]
        # A signed line the reader takes for no entry (inside a ``` fence, or with no
        # closing ``>``) still holds its words where history saw them: not missing.
        unrecorded = walk.last - set(live) - superseded - named
        if unrecorded and not unread:  # (with a file unread, its seqs would look missing)
            problems.append(
                f"seqs {_span(unrecorded)} are missing from the files and no commit removed them "
                "(commit the deletion, or restore the lines with git)"
            )
    missing = {seq for seq in buffered if seq not in live and seq not in superseded and seq not in deleted_by_hand}
    if missing and not unread:
        problems.append(
            f"acknowledged seqs {_span(missing)} are in no file and no commit removed them "
            "(deleted without a commit: memd puts them back on its next consolidation, or use `memd forget`)"
        )
    devices, stray = _by_device(vault, set(live))
    if stray:
        where = _where(paths, documents, stray)
        problems.append(
            f"seqs {_span(stray)} belong to no registered device (.memd/devices.json){where}: typed by hand? "
            f"`memd forget {_span(stray)}` takes them out (`memd add` their words again for seqs of this device)"
        )
    record = owed(vault)
    uncommitted = record[0].splitlines()[0] if record else None
    return Report(
        len(live),
        len(superseded),
        len(deleted_by_hand - set(live)),  # a seq put back since is live, not deleted
        tuple(problems),
        commits,
        len(buffered),
        uncommitted,
        devices,
    )


@dataclass(frozen=True)
class _Walk:
    head: str | None
    commits: int
    last: set[int]  # seqs in the newest commit
    deleted: set[int]  # removed in commits people made
    vanished: tuple[tuple[str, set[int]], ...]  # (memd commit, seqs it dropped): explained later or a loss
    reworded: tuple[tuple[str, set[int]], ...] = ()  # (consolidation commit, seqs whose words it changed)


CHECKPOINT = "verify.json"


def _walk(vault: Vault, full: bool, acknowledged: Mapping[int, Ack], known: Known | None = None) -> _Walk:
    """The history since the checkpoint (all of it when ``full``) read commit by commit;
    ``acknowledged``: the entries memd acknowledged that no commit holds yet (``acks.pending``)."""
    from memd.consolidation.commit_words import CommitWords
    from memd.git import changes
    from memd.git.command import head, is_ancestor
    from memd.git.log import consolidation_commits, machine_email, seqs_at
    from memd.vault import acks

    start = None if full else _load(vault)
    tip = head(vault)
    if start is not None and (tip is None or start.head is None or not is_ancestor(vault, start.head, tip)):
        start = None  # history was rewritten (or the checkpoint is foreign): walk it all
    previous = set(start.last) if start else set()
    deleted = set(start.deleted) if start else set()
    vanished = list(start.vanished) if start else []
    reworded = list(start.reworded) if start else []
    history = changes.steps(vault, machine_email(vault), start.head if start else None)
    # A consolidation may fold entries, never change their words: each one is
    # compared with its parent over the files it changed.
    consolidations = consolidation_commits(vault, start.head if start else None) if history else set()
    held: dict[str, set[int]] = {start.head: previous} if start and start.head else {}
    # Only what a commit wrote anew is parsed, each entry once in the walk (commit_words.py).
    words = CommitWords(known)
    for step, seqs, versions in changes.walk(vault, history):
        commit, parents = step.sha, step.parents
        # A merge (two devices' histories joined) is compared with all its parents at once;
        # a parent from before the checkpoint is read from git.
        before = set().union(*(held[p] if p in held else seqs_at(vault, p) for p in parents)) if parents else set()
        held[commit] = seqs
        dropped = before - seqs
        if step.by_hand:
            deleted |= dropped
        elif dropped:
            vanished.append((commit, dropped))
        if commit in consolidations and len(parents) == 1:
            old, new = words.compare([was for was, _ in versions], [now for _, now in versions], before)
            # An entry whose text is as it was keeps its words (``contains`` holds for equal texts).
            new = {seq: texts for seq, texts in new.items() if not all(text in old.get(seq, ()) for text in texts)}
            changed = changed_words(old, new)
            # An entry a consolidation files for the first time has no earlier commit to be
            # compared with: the words memd acknowledged are (``acks.reread`` keeps a person's edit).
            first = {
                seq: [acks.words_of(acknowledged[seq], words.items())]
                for seq in new
                if seq not in old and seq in acknowledged
            }
            changed |= changed_words(first, new)
            if changed:
                reworded.append((commit, changed))
        previous = seqs
    walk = _Walk(
        tip, (start.commits if start else 0) + len(history), previous, deleted, tuple(vanished), tuple(reworded)
    )
    _save(vault, walk)
    return walk


def _load(vault: Vault) -> _Walk | None:
    try:
        raw = json.loads(read_bytes(vault.meta_dir / CHECKPOINT).decode("utf-8"))
        return _Walk(
            str(raw["head"]),
            int(raw["commits"]),
            set(SeqSet.parse(raw["last"])) if raw["last"] else set(),
            set(SeqSet.parse(raw["deleted"])) if raw["deleted"] else set(),
            tuple((str(c), set(SeqSet.parse(s))) for c, s in raw["vanished"]),
            tuple((str(c), set(SeqSet.parse(s))) for c, s in raw.get("reworded", [])),
        )
    except (OSError, ValueError, KeyError, TypeError, RecursionError, FormatError):
        return None


def _save(vault: Vault, walk: _Walk) -> None:
    data = {
        "head": walk.head,
        "commits": walk.commits,
        "last": _span(walk.last),
        "deleted": _span(walk.deleted),
        "vanished": [[c, _span(s)] for c, s in walk.vanished],
        "reworded": [[c, _span(s)] for c, s in walk.reworded],
    }
    with contextlib.suppress(MemdError):  # a checkpoint is only a shortcut; the next verify walks again
        atomic_write(vault.meta_dir / CHECKPOINT, json.dumps(data))


def _where(paths: list[str], documents: list[Document], seqs: set[int]) -> str:
    """`` (at note.md:3, topics/x.md:12)``: where the first few of ``seqs`` are."""
    places: list[str] = []
    for rel, document in zip(paths, documents, strict=True):
        for located in document.signed():
            signature = located.entry.signature
            if signature is not None and set(signature.seq) & seqs:
                places.append(f"{rel}:{located.line}")
    return f" (at {', '.join(places[:3])}{' …' if len(places) > 3 else ''})" if places else ""


def _by_device(vault: Vault, live: set[int]) -> tuple[tuple[dict[str, Any], ...], set[int]]:
    """Live seqs per device space, and those in a space no registered device owns."""
    from memd.vault.seqspace import space_of
    from memd.vault.spaces import read_registry

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
        {
            "index": index,
            "name": names.get(index, "shared" if index == 0 else None),
            "live": len(seqs),
            "highest": max(seqs),
        }
        for index, seqs in sorted(spaces.items())
    )
    stray = {seq for index, seqs in spaces.items() if index and index not in names for seq in seqs}
    return devices, stray
