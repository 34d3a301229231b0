"""Topics renamed on one device while the other changed them.

A person renames a topic's file (in Obsidian, in a file manager) on one
device while another device edits it or files entries into it. Seen file by
file that is a deletion and a new file on one side and a change on the
other: the merge would keep the changed old file beside the renamed one, two
topics with one ``id``, and a person's note split from the topic it was
written in. So before merging, a topic gone from one side is matched to a
new file on that side that is the same topic: the same frontmatter ``id``,
or, without ids, most of the old file's seqs. The other side's changes are
then merged into the renamed file, as git follows a rename.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from memd.core.document import Document, parse_document
from memd.core.errors import FormatError

Texts = Mapping[str, str]


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    here: bool  # renamed on this device (else on the remote)

    def __str__(self) -> str:
        where, other = ("here", "the remote's") if self.here else ("on the remote", "the changes made here")
        return f"{self.old}: renamed to {self.new} {where}; {other} follow it"


def find_renames(base: Texts, ours: Texts, theirs: Texts) -> list[Rename]:
    """Topics one side renamed that the other side changed under the old name."""
    found = []
    for here, side, other in ((True, ours, theirs), (False, theirs, ours)):
        gone = [p for p in base if _is_topic(p) and p not in side and p in other and other[p] != base[p]]
        new = [q for q in side if _is_topic(q) and q not in base and q not in other]
        taken: set[str] = set()
        for old in gone:
            matches = [q for q in new if q not in taken and _same_topic(base[old], side[q])]
            if len(matches) == 1:  # more than one: a split, not a rename; merged file by file
                taken.add(matches[0])
                found.append(Rename(old, matches[0], here))
    return found


def follow(texts: Texts, renames: list[Rename], here: bool) -> dict[str, str]:
    """``texts`` with the old name of each rename made on the other side (``here``:
    whether ``texts`` are this device's) read under the new one."""
    out = dict(texts)
    for rename in renames:
        if rename.here != here and rename.old in out:
            out[rename.new] = out.pop(rename.old)
    return out


def _is_topic(path: str) -> bool:
    return path.startswith("topics/") and path.endswith(".md")


def _same_topic(before: str, after: str) -> bool:
    old, new = parse_document(before), parse_document(after)
    old_id, new_id = _id(old), _id(new)
    if old_id and new_id:
        return old_id == new_id
    seqs = {seq for located in old.signed() for seq in located.entry.signature.seq}  # type: ignore[union-attr]
    kept = {seq for located in new.signed() for seq in located.entry.signature.seq}  # type: ignore[union-attr]
    return bool(seqs) and 2 * len(seqs & kept) > len(seqs)


def _id(document: Document) -> str | None:
    try:
        value = document.frontmatter.data.get("id") if document.frontmatter is not None else None
    except FormatError:
        return None  # unreadable frontmatter: judged by its seqs
    return str(value) if value else None
