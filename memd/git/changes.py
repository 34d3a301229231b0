"""The memory files' history as ``verify`` walks it: what each commit changed,
each version read once, and the seqs each commit holds.

Grepping every commit's whole tree for its seqs read the whole vault once per
commit; a 40,000-entry import's twenty commits were a fifth of a ``verify
--full``. Here one ``git log --raw`` lists the blobs each commit changed, each
blob is read once (a commit's new version is the next one's old), and the seqs
a commit holds are its parent's, counted again over only the pieces of the
files it changed (a file cut where its entries start, as ``core.entry``'s
``ENTRY_START`` cuts it). A merge, a parent the walk has not counted, or a
version git cannot give is counted whole by ``git grep``, as before.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from memd.git.command import run_git

if TYPE_CHECKING:
    from memd.vault.vault import Vault

# A version that is not a file's text to memd (``git grep`` reads none of them either):
# a submodule (a commit), a symbolic link (memd never follows one).
_NOT_TEXT = ("160000", "120000")


@dataclass(frozen=True)
class Step:
    """A commit that changed CURRENT.md or topics (or a merge), as the walk meets it."""

    sha: str
    parents: tuple[str, ...]
    by_hand: bool  # made by a person, not memd
    changed: tuple[tuple[str | None, str | None], ...]  # (blob before, blob after) per file; None: absent


@dataclass(frozen=True)
class Blob:
    """One version of a memory file."""

    data: bytes

    @cached_property
    def text(self) -> str:
        from memd.git.command import decode

        return decode(self.data)

    @cached_property
    def pieces(self) -> Counter[str]:
        """The file cut where its entries start: each piece, with how many times it is there."""
        from memd.core.entry import ENTRY_START

        return Counter(ENTRY_START.split(self.text)) if self.text else Counter()


def changed_pieces(old: Blob | None, new: Blob | None) -> tuple[list[str], list[str]]:
    """The pieces ``new`` has that ``old`` has not, and those ``old`` has that ``new`` has not:
    as many times as there are more copies (seqs are counted by the lines naming them, as
    ``git grep`` counts them, so a walk may go on from a count it made)."""
    was = old.pieces if old is not None else Counter[str]()
    now = new.pieces if new is not None else Counter[str]()
    return list((now - was).elements()), list((was - now).elements())


def steps(vault: Vault, machine: str, after: str | None = None) -> list[Step]:
    """Each commit that changed CURRENT.md or topics, and every merge, parents
    before children (only those after commit ``after`` when given); ``machine``:
    the email of memd's own commits."""
    span = [f"{after}..HEAD"] if after else []
    # Whatever the person's configuration: the first commit's files listed too, full blob ids, no renames.
    args = [
        "--full-history",
        "--parents",
        "--topo-order",
        "--reverse",
        "--raw",
        "--root",
        "--no-abbrev",
        "--no-renames",
    ]
    listing = run_git(vault, "log", *args, "--format=%x1e%H%x1f%P%x1f%ae", *span, "--", "CURRENT.md", "topics")
    found = []
    for record in listing.stdout.split("\x1e")[1:]:
        header, _, raw = record.partition("\n")
        sha, parents, email = [*header.split("\x1f"), "", ""][:3]
        changed = []
        for line in raw.splitlines():
            if not line.startswith(":"):
                continue
            # ":<mode> <mode> <blob> <blob> <status>\t<path>" (the path is not needed: versions pair up by line)
            fields = line[1:].split("\t", 1)[0].split(" ")
            if len(fields) < 5:
                continue
            pair = (_file(fields[0], fields[2]), _file(fields[1], fields[3]))
            if pair != (None, None):
                changed.append(pair)
        found.append(Step(sha, tuple(parents.split()), email != machine, tuple(changed)))
    return found


def _file(mode: str, blob: str) -> str | None:
    """A side of a raw diff line: the blob, or None where there is no file's text."""
    return None if mode in _NOT_TEXT or not blob.strip("0") else blob  # all zeros: no file (either hash)


class Versions:
    """The blobs of the step being walked, read in one ``git cat-file`` per step;
    the step's new versions are kept for the next, whose old versions they are."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self._held: dict[str, Blob] = {}

    def read(self, step: Step) -> tuple[dict[str, Blob], bool]:
        """The step's blobs by id, and whether git gave every one of them."""
        from memd.git.command import cat_file

        wanted = {blob for pair in step.changed for blob in pair if blob is not None}
        missing = sorted(wanted - self._held.keys())
        held = {blob: self._held[blob] for blob in wanted if blob in self._held}
        complete = True
        for blob, obj in zip(missing, cat_file(self.vault.root, missing), strict=True):
            if obj is None or obj.kind != "blob":
                complete = False
                continue
            held[blob] = Blob(obj.data)
        self._held = {after: held[after] for _, after in step.changed if after is not None and after in held}
        return held, complete


class SeqCounts:
    """For each seq, how many entry lines name it at the commit last counted
    (a seq no line names any more is not there)."""

    def __init__(self) -> None:
        self.at: str | None = None
        self.counts: Counter[int] = Counter()

    def start(self, sha: str, counts: Counter[int]) -> None:
        self.at, self.counts = sha, counts

    def step(self, sha: str, changed: Iterable[tuple[Blob | None, Blob | None]]) -> None:
        from memd.git.log import seqs_named

        for old, new in changed:
            added, removed = changed_pieces(old, new)
            for pieces, sign in ((added, 1), (removed, -1)):
                for seq in seqs_named("\n".join(pieces)):
                    self.counts[seq] += sign
                    if self.counts[seq] <= 0:
                        del self.counts[seq]
        self.at = sha


Versioned = list[tuple[Blob | None, Blob | None]]  # (before, after) of each file a commit changed


def walk(vault: Vault, history: list[Step]) -> Iterator[tuple[Step, set[int], Versioned]]:
    """Each step with the seqs its commit holds in CURRENT.md and topics (as
    ``git.log.seqs_at`` reads them) and the versions of the files it changed,
    in the order ``step.changed`` lists them (None for a version git could not
    give; a merge lists none)."""
    from memd.git.log import counted_at

    versions = Versions(vault)
    counts = SeqCounts()
    for step in history:
        blobs, complete = versions.read(step) if len(step.parents) <= 1 else ({}, False)
        pairs = [(blobs.get(old) if old else None, blobs.get(new) if new else None) for old, new in step.changed]
        # A first commit counts from nothing; any other from the step before it, its parent.
        if complete and (not step.parents or step.parents == (counts.at,)):
            if not step.parents:
                counts.start(step.sha, Counter())
            counts.step(step.sha, pairs)
        else:
            counts.start(step.sha, counted_at(vault, step.sha))
        yield step, set(counts.counts), pairs
