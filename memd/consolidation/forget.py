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

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from memd.consolidation.purge import Purged


@dataclass(frozen=True)
class Forgotten:
    seqs: str
    entries: tuple[tuple[str, int, str], ...]  # (path, line, text) of each removed entry
    commit: str | None
    warning: str | None = None
    purged: Purged | None = None  # with ``--purge``: the history rewritten without them

    def to_json(self) -> dict[str, Any]:
        return {
            "seqs": self.seqs,
            "removed": [{"path": p, "line": n, "text": t} for p, n, t in self.entries],
            "commit": self.commit,
            "warning": self.warning,
            "purged": self.purged.to_json() if self.purged else None,
        }


def forget(vault: Vault, seqs: SeqSet, *, drop: str | None = None) -> Forgotten:
    """Remove the entries holding ``seqs``, and their words from the source copies
    they were taken from; with ``drop``, the source copy at that path goes too
    (``forget_source``)."""
    wanted = set(seqs)
    removed: list[tuple[str, int, str]] = []
    found: set[int] = set()
    written: dict[str, bytes | None] = {}
    cited: list[tuple[str, str]] = []  # (src, words) of each removed entry that names a source copy
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
                src = located.entry.signature.src if located.entry.signature else None
                if src and src.split(";")[-1].startswith("sources/"):
                    cited.append((src.split(";")[-1], located.entry.full_text))
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
        if not removed and drop is None:
            raise NotFound(f"no entry holds seq {seqs}")
        written.update(_unlinked(vault, {doc_id(rel) for rel, data in written.items() if data is None}))
        if drop is not None:
            written.update(_drop_copy(vault, drop))
        still = _cited_elsewhere(vault) if cited else set()
        written.update(_out_of_sources(vault, [(src, words) for src, words in cited if not _in(src, drop)], still))
        acks.settle(vault, found)
    span = str(SeqSet.of(found)) if found else ""
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
    if drop is not None:
        message = f"forget: source {drop}" + (f" (seq {span})\n\nMemd-Removed: {span}" if span else "")
    else:
        message = f"forget: seq {span}\n\nMemd-Removed: {span}"
    try:
        sha = commit_exact(vault, message, clean, None)
    except GitError as err:
        return Forgotten(span, tuple(removed), None, f"not committed: {err}")
    return Forgotten(span, tuple(removed), sha, warning)


def forget_source(vault: Vault, given: str) -> Forgotten:
    """Take back a whole import: every entry taken from the source copy ``given``
    names (its path under ``sources/``, or the file that was imported) and the
    copy itself. Importing the file again later imports it anew."""
    rel = source_copy(vault, given)
    seqs: set[int] = set()
    with vault.locked():
        for path in vault.entry_files():
            for located in parse_document(read_text(path, vault.rel_of(path))).signed():
                signature = located.entry.signature
                if signature is not None and signature.src and _in(signature.src.split(";")[-1], rel):
                    seqs |= set(signature.seq)
    return forget(vault, SeqSet.of(seqs), drop=rel)


def source_copy(vault: Vault, given: str) -> str:
    """The vault path of the source copy ``given`` names: the copy's own path
    (from the vault's root or the current folder), or an imported file, found by
    the ``sha256`` of its bytes, else by its name when one copy alone has it."""
    import hashlib
    from pathlib import Path

    sources = vault.sources_dir
    for candidate in (vault.root / given, Path(given).expanduser()):
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            continue
        if resolved.is_file() and sources.resolve() in resolved.parents:
            return resolved.relative_to(vault.root.resolve()).as_posix()
    original = Path(given).expanduser()
    digest = None
    try:
        if original.is_file():
            digest = hashlib.sha256(read_bytes(original, follow_links=True)).hexdigest()
    except OSError:
        digest = None
    by_name: list[str] = []
    for path in sorted(sources.rglob("*.md")) if sources.is_dir() else []:
        try:
            with open(path, "rb") as stream:
                head = stream.read(4096).decode("utf-8", errors="replace")
        except OSError:
            continue
        if digest is not None and f'sha256: "{digest}"' in head:
            return vault.rel_of(path)
        if f'original: "{original.name}"' in head:
            by_name.append(vault.rel_of(path))
    if len(by_name) == 1:
        return by_name[0]
    if by_name:
        raise NotFound(f"{given}: {len(by_name)} source copies were imported from files of that name; name one of them")
    raise NotFound(f"{given}: no source copy under sources/ was imported from it")


def _in(src: str, rel: str | None) -> bool:
    return rel is not None and src.partition("#")[0] == rel


def _drop_copy(vault: Vault, rel: str) -> dict[str, bytes | None]:
    path = vault.root / rel
    if not path.is_file() or path.is_symlink():
        return {}
    path.unlink()
    return {rel: None}


_FORGOTTEN = "[forgotten]"
_TURN = re.compile(r'^- (?:<a id="t\d+"></a>)?\*\*[^*\n]*\*\*(?: \([^()\n]*\))?: ')
_TURN_ID = re.compile(r" \^t\d+$")
_SPEAKER = re.compile(r"^[^:\n]{1,60}: ")


def _cited_elsewhere(vault: Vault) -> set[str]:
    """The ``src`` of every entry still in the files (read after the removal)."""
    out: set[str] = set()
    for path in vault.entry_files():
        for located in parse_document(read_text(path, vault.rel_of(path))).signed():
            signature = located.entry.signature
            if signature is not None and signature.src:
                out.add(signature.src.split(";")[-1])
    return out


def _out_of_sources(vault: Vault, cited: list[tuple[str, str]], kept: set[str]) -> dict[str, bytes | None]:
    """The source copies the removed entries were taken from, with those entries'
    words replaced by ``[forgotten]`` where they were cited (the place keeps its
    line and anchor, so every other reference still opens where it did). Words
    found there as they are go; where the entry reworded its source, the whole
    place goes, unless another entry still cites it."""
    by_copy: dict[str, list[tuple[str, str]]] = {}
    for src, words in cited:
        by_copy.setdefault(src.partition("#")[0], []).append((src, words))
    changed: dict[str, bytes | None] = {}
    for rel, items in sorted(by_copy.items()):
        path = vault.root / rel
        try:
            text = read_text(path, rel)
        except (OSError, MemdError):
            continue
        lines = text.split("\n")
        for src, words in items:
            span = _place(lines, src.partition("#")[2])
            if span is not None:
                _erase(lines, span, words, whole=src not in kept)
        new_text = "\n".join(lines)
        if new_text != text and atomic_write(path, new_text, unless_changed=text.encode("utf-8")):
            changed[rel] = new_text.encode("utf-8")
    return changed


def _place(lines: list[str], anchor: str) -> range | None:
    """The 0-based lines of the place ``anchor`` names: ``L12`` and the rest of
    its paragraph, or the turn whose block id (or older HTML anchor) is ``^t12``."""
    if anchor.startswith("L") and anchor[1:].isdigit():
        first = int(anchor[1:]) - 1
        if not 0 <= first < len(lines):
            return None
        end = first + 1
        while end < len(lines) and lines[end].strip():
            end += 1
        return range(first, end)
    number = anchor.removeprefix("^").removeprefix("t")
    if not number.isdigit():
        return None
    start: int | None = None
    for index, line in enumerate(lines):
        if line.startswith("- "):
            start = index
            if f'<a id="t{number}"></a>' in line:
                end = index + 1
                while end < len(lines) and lines[end].startswith("  "):
                    end += 1
                return range(index, end)
        elif not line.startswith("  "):
            start = None
        if line.endswith(f" ^t{number}") and start is not None:
            return range(start, index + 1)
    return None


def _erase(lines: list[str], span: range, words: str, *, whole: bool) -> None:
    """The entry's ``words`` out of ``lines[span]``: each of its lines (or, said
    as ``Speaker: words``, without the speaker) where it stands as it is; else,
    with ``whole``, the place's text, its list marker, speaker and block id kept."""
    pieces = [piece.strip() for piece in words.splitlines() if piece.strip()]
    pieces = [_SPEAKER.sub("", piece, count=1) if not _found(lines, span, piece) else piece for piece in pieces]
    if pieces and all(_found(lines, span, piece) for piece in pieces):
        for piece in pieces:
            for index in span:
                if piece in lines[index]:
                    lines[index] = lines[index].replace(piece, _FORGOTTEN)
                    break
        return
    if not whole:
        return
    for index in span:
        line = lines[index]
        head = _TURN.match(line)
        lead = head.group(0) if head else ("  " if line.startswith("  ") else "")
        tail = _TURN_ID.search(line)
        lines[index] = lead + _FORGOTTEN + (tail.group(0) if tail else "") if line.strip() else line


def _found(lines: list[str], span: range, piece: str) -> bool:
    return any(piece in lines[index] for index in span)


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
