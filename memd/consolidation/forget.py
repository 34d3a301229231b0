"""``memd forget``: a person removes entries on purpose, and history says so.

The entries holding the given seqs are taken out of CURRENT.md or their
topic (each file compare-and-swapped, nothing else in it touched), and the
change is committed under the person's name with a ``Memd-Removed`` trailer,
so memd never puts them back and ``memd verify`` counts them as removed by
hand.

Forgotten words leave the current files, not only the entries: a summary's
sentence quoting one, a heading left with nothing under it (memd named it
after the entries it held), and a topic left with nothing at all, whose
file name and title were made from them, when it is as last committed (an
edit not yet committed lives nowhere else: the topic is kept, emptied); the
links other topics keep to it go too. Git history keeps everything, as it
keeps every edit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from memd.core.atomic import atomic_write, read_bytes, read_text
from memd.core.document import Block, Frontmatter, Heading, Line, parse_document
from memd.core.entry import Entry
from memd.core.errors import GitError, MemdError, NotFound, VaultError
from memd.core.layout import doc_id
from memd.core.signature import SeqSet
from memd.core.summary import without_quotes
from memd.git.command import run_git
from memd.git.commits import commit_exact
from memd.git.edits import held_warning, secrets_in
from memd.git.log import blocked
from memd.vault import acks
from memd.vault.vault import Vault


@dataclass(frozen=True)
class Forgotten:
    seqs: str
    entries: tuple[tuple[str, int, str], ...]  # (path, line, text) of each removed entry
    commit: str | None
    warning: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "seqs": self.seqs,
            "removed": [{"path": p, "line": n, "text": t} for p, n, t in self.entries],
            "commit": self.commit,
            "warning": self.warning,
        }


def forget(vault: Vault, seqs: SeqSet) -> Forgotten:
    wanted = set(seqs)
    removed: list[tuple[str, int, str]] = []
    found: set[int] = set()
    written: dict[str, bytes | None] = {}
    with vault.locked():
        for path in vault.entry_files():
            rel = vault.rel_of(path)
            text = read_text(path, rel)
            document = parse_document(text)
            hits = [e for e in document.signed() if e.entry.signature and set(e.entry.signature.seq) & wanted]
            if not hits:
                continue
            for located in hits:
                held = set(located.entry.signature.seq) if located.entry.signature else set()
                if not held <= wanted:
                    raise VaultError(
                        f"{rel}:{located.line}: seq {located.entry.signature} holds more than the seqs given; "
                        f"forget all of them ({located.entry.signature.seq if located.entry.signature else ''})"
                    )
                removed.append((rel, located.line, located.entry.full_text))
                found |= held
            kept = _without(document.blocks, {id(e.entry) for e in hits})
            if path != vault.current and not any(_holds(block) for block in kept) and _as_committed(vault, rel):
                if read_bytes(path) != text.encode("utf-8"):
                    raise VaultError(f"{rel} changed while memd was reading it; nothing was forgotten, try again")
                path.unlink()
                written[rel] = None
                continue
            frontmatter = without_quotes(document.frontmatter, [e.entry.full_text for e in hits])
            new_text = replace(document, blocks=kept, frontmatter=frontmatter).render()
            if not atomic_write(path, new_text, unless_changed=text.encode("utf-8")):
                raise VaultError(f"{rel} changed while memd was reading it; nothing was forgotten, try again")
            written[rel] = new_text.encode("utf-8")
        if not removed:
            raise NotFound(f"no entry holds seq {seqs}")
        written.update(_unlinked(vault, {doc_id(rel) for rel, data in written.items() if data is None}))
        acks.settle(vault, found)
    span = str(SeqSet.of(found))
    if blocked(vault) is not None:
        return Forgotten(span, tuple(removed), None, "not committed: " + str(blocked(vault)))
    # A file that may hold a secret typed by hand is left out, as every commit of a
    # person's edits leaves it (git keeps what it is given for good): the removal is
    # committed with the rest of their edit once the secret is gone.
    secret = {rel: lines for rel, data in written.items() if data and (lines := secrets_in(data.decode()))}
    warning = "; ".join(held_warning(rel, found) for rel, found in sorted(secret.items())) or None
    clean = {rel: data for rel, data in written.items() if rel not in secret}
    if not clean:
        return Forgotten(span, tuple(removed), None, warning)
    message = f"forget: seq {span}\n\nMemd-Removed: {span}"
    try:
        sha = commit_exact(vault, message, clean, None)
    except GitError as err:
        return Forgotten(span, tuple(removed), None, f"not committed: {err}")
    return Forgotten(span, tuple(removed), sha, warning)


def _without(blocks: tuple[Block, ...], gone: set[int]) -> tuple[Block, ...]:
    """``blocks`` without the entries ``gone`` (by id) and the headings left
    heading nothing but blank lines where a forgotten entry stood. Read from
    the end, so a heading's section (up to the next heading of its level or
    above) is judged after the subheadings inside it."""
    depth = 7  # heading levels 1-6, and 0 for none
    held = [False] * depth  # a section from level l down holds something kept
    lost = [False] * depth  # ... held a forgotten entry
    out: list[Block] = []
    for block in reversed(blocks):
        if isinstance(block, Heading) and 1 <= block.level <= 6:
            level = block.level
            keep = held[level] or not lost[level]
            for n in range(level, depth):
                held[n] = lost[n] = False
            if not keep:
                continue
            for n in range(level):
                held[n] = True
        elif isinstance(block, Entry) and id(block) in gone:
            lost[:] = [True] * depth
            continue
        elif _holds(block):
            held[:] = [True] * depth
        out.append(block)
    return tuple(reversed(out))


def _as_committed(vault: Vault, rel: str) -> bool:
    """Whether ``rel`` is as the last commit has it: only then may a topic left
    empty be deleted. An edit not yet committed (a tag, a summary a person
    typed, a secret memd will not commit) lives nowhere else."""
    return run_git(vault, "diff", "--quiet", "HEAD", "--", rel).returncode == 0


def _holds(block: Block) -> bool:
    """Whether a block says anything: an entry, a heading or a line that is not blank."""
    return not isinstance(block, Line) or bool(block.raw.strip())


def _unlinked(vault: Vault, deleted: set[str]) -> dict[str, bytes]:
    """The topics that listed a deleted topic as ``related``, rewritten without
    it (the list is memd's own: a link left behind would make Obsidian create
    the forgotten topic again, named as before, when clicked)."""
    if not deleted:
        return {}
    links = {f"[[{topic_id}]]" for topic_id in deleted}
    changed: dict[str, bytes] = {}
    for path in vault.topic_files():
        rel = vault.rel_of(path)
        text = read_text(path, rel)
        document = parse_document(text)
        try:
            data = dict(document.frontmatter.data) if document.frontmatter is not None else {}
        except MemdError:
            continue  # a frontmatter a person broke is theirs to mend (lint names it)
        related = data.get("related")
        if not isinstance(related, list) or not links & {str(link) for link in related}:
            continue
        data["related"] = [link for link in related if str(link) not in links]
        if not data["related"]:
            del data["related"]
        new_text = replace(document, frontmatter=Frontmatter.from_data(data)).render()
        if atomic_write(path, new_text, unless_changed=text.encode("utf-8")):
            changed[rel] = new_text.encode("utf-8")
    return changed
