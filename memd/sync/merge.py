"""The three-way merge of memd's documents (CURRENT.md and topics), by entry.

Two devices change the same vault apart: each appends to CURRENT.md, each
consolidates (moving entries into topics, folding duplicates, superseding),
people edit by hand on both. Git merges lines; memd merges entries, in two
steps (ARCHITECTURE.md §7):

1. **Where each seq lives**, across all documents at once, because entries
   move between files. For every seq, its place (file and entry) in the merge
   base, here ("ours") and on the remote ("theirs"): a side that left it
   alone takes the other's change; when both moved it (two consolidations
   of the same buffer entries), the remote's place wins, because it was
   published first and other devices may already hold it; an entry that one
   side removed and the other changed is kept (merging never deletes words
   that someone changed). An entry that lost some of its seqs to the other
   side's placement keeps the rest; one that lost all of them goes.
2. **Where each line goes**, per file: a three-way diff (``diff3.py``) over
   tokens that are whole entries (by seq) or lines. Entries inserted at the
   same place on both sides are both kept (remote's first); lines a person
   changed differently on both sides are a conflict for the person.

The result is checked before anything is written: every seq that should be
live is live exactly once.

This module holds the decisions, the two steps and the check, because they
share what was resolved and what is left to a person. Reading a side into
tokens (``sides.py``), settling one region both sides changed
(``hunks.py``) and following a topic renamed on one side (``renames.py``)
are separate ideas, each with its own module.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from memd.core.document import Document, Frontmatter, parse_document
from memd.core.entry import Entry
from memd.core.errors import FormatError, MemdError
from memd.core.signature import SeqSet
from memd.core.summary import without_quotes
from memd.sync.diff3 import diff3
from memd.sync.frontmatter import KeyConflict, merge_frontmatter, recount
from memd.sync.hunks import describe_hunk, difference, resolve_hunk
from memd.sync.renames import find_renames, follow
from memd.sync.sides import Place, Side, Token, same_entry

# Which version wins where both sides changed the same entry or lines
# (``memd sync --take``); None leaves those to a person.
Take = Literal["here", "remote"]


class MergeError(MemdError):
    """The merge would break memd's accounting; nothing was written."""


@dataclass(frozen=True)
class Conflict:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass(frozen=True)
class DocMerge:
    files: dict[str, str | None]  # path -> merged text (None: delete), only where it differs from ours
    resolved: tuple[str, ...]  # what was decided automatically, one line each
    conflicts: tuple[Conflict, ...]  # what a person must decide
    received: int  # seqs live in the result that were not live here


def merge_documents(
    base: Mapping[str, str], ours: Mapping[str, str], theirs: Mapping[str, str], take: Take | None = None
) -> DocMerge:
    """Merge CURRENT.md and the topics (vault-relative path -> text on each side);
    ``take`` settles what both sides changed, else that is a conflict."""
    renames = find_renames(base, ours, theirs)
    # Merged under the new names: base and the side that kept the old name read as renamed.
    base_view = follow(follow(base, renames, here=True), renames, here=False)
    ours_view, theirs_view = follow(ours, renames, here=True), follow(theirs, renames, here=False)
    merged = _Merge(
        Side.read(base_view), Side.read(ours_view), Side.read(theirs_view), base_view, ours_view, theirs_view, take
    ).run()
    if not renames or merged.conflicts:
        return merged
    # What to write is what differs from this device's files as they are, under their own names.
    final = {**ours_view, **merged.files}
    files = {path: text for path, text in final.items() if text != ours.get(path)}
    files.update({path: None for path in ours if path not in final})
    return replace(merged, files=files, resolved=(*(str(r) for r in renames), *merged.resolved))


@dataclass
class _Merge:
    b: Side
    o: Side
    t: Side
    base_text: Mapping[str, str]
    ours_text: Mapping[str, str]
    theirs_text: Mapping[str, str]
    take: Take | None = None
    final: dict[int, Place] = field(default_factory=dict)
    resolved: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    def _kept(self) -> str:
        return "kept this device's version" if self.take == "here" else "kept the remote's version"

    def run(self) -> DocMerge:
        self._place_seqs()
        slots: dict[Place, set[int]] = {}
        for seq, place in self.final.items():
            slots.setdefault(place, set()).add(seq)
        files: dict[str, str | None] = {}
        for path in sorted(set(self.ours_text) | set(self.theirs_text)):
            merged = self._file(path, slots)
            if merged != self.ours_text.get(path):
                files[path] = merged
        if self.conflicts:
            return DocMerge({}, tuple(self.resolved), tuple(self.conflicts), 0)
        self._check(files)
        live_here = set(self.o.place)
        received = sum(1 for seq in self.final if seq not in live_here)
        return DocMerge(files, tuple(self.resolved), (), received)

    # -- step 1: where each seq lives --------------------------------------------
    def _place_seqs(self) -> None:
        folded: Counter[str] = Counter()
        for seq in sorted(set(self.b.place) | set(self.o.place) | set(self.t.place)):
            was, mine, theirs = self.b.place.get(seq), self.o.place.get(seq), self.t.place.get(seq)
            if was is None and mine is not None and theirs is not None:
                mine_entry, their_entry = self.o.entries[mine], self.t.entries[theirs]
                if mine_entry.full_text != their_entry.full_text:
                    path, _ = mine
                    mine_shown, their_shown = difference(mine_entry.full_text, their_entry.full_text)
                    message = (
                        f"seq {seq} was given to two different entries, here ({mine_shown!r}) "
                        f"and on the remote ({their_shown!r}): this copy assigned seqs before it was "
                        "a registered device. Remove the signature of the entry here (keep `- ` and the words) "
                        "so memd gives it a new seq, then sync again"
                    )
                    self.conflicts.append(Conflict(path, self._line_of(self.o, mine), message))
                    continue
            here, there = self._changed(self.o, mine, was), self._changed(self.t, theirs, was)
            if not here:
                place = theirs
            elif not there or mine == theirs:
                place = mine
            elif theirs is None:
                place = mine
                self.resolved.append(f"seq {seq}: removed on the remote but changed here; kept")
            elif mine is None:
                place = theirs
                self.resolved.append(f"seq {seq}: removed here but changed on the remote; kept")
            else:
                place = theirs
                folded[f"{mine[0]} -> {theirs[0]}"] += 1
            if place is not None:
                self.final[seq] = place
        for move, count in sorted(folded.items()):
            self.resolved.append(
                f"{count} seq(s) consolidated on both devices: kept where the remote put them ({move})"
            )

    def _moved_out(self, side: Side, path: str) -> bool:
        """Whether an entry ``side`` holds in ``path`` has a seq the merge places elsewhere."""
        # The file's own entries (its tokens), not every entry of the side: this is asked of
        # each file one side changed, and a vault holds tens of thousands of entries.
        places = [(path, key) for kind, key in side.tokens.get(path, []) if kind == "E"]
        return any(self.final.get(seq) != place for place in places for seq in side.entries[place].signature.seq)  # type: ignore[union-attr]

    def _changed(self, side: Side, place: Place | None, was: Place | None) -> bool:
        """Whether a side moved a seq, or changed the words of the entry holding it."""
        if place != was:
            return True
        return place is not None and was is not None and not same_entry(side.entries[place], self.b.entries[was])

    def _content(self, key: str, path: str) -> Entry | None:
        """The entry ``key`` as it will be written in ``path``."""
        mine, theirs, was = self.o.entry(key), self.t.entry(key), self.b.entry(key)
        if mine is None or theirs is None:
            return mine or theirs
        if same_entry(mine, theirs):
            return theirs if self.t.by_key.get(key, ("", ""))[0] == path else mine
        if was is not None and same_entry(mine, was):
            return theirs
        if was is not None and same_entry(theirs, was):
            return mine
        if was is not None:
            if self.take is not None:
                self.resolved.append(f"entry <seq={key}> was edited on both devices; {self._kept()}")
                return mine if self.take == "here" else theirs
            place = self.o.by_key[key]
            here, there = difference(mine.full_text, theirs.full_text)
            self.conflicts.append(
                Conflict(
                    place[0],
                    self._line_of(self.o, place),
                    f"the entry <seq={key}> was edited differently here ({here!r}) and on the remote ({there!r})",
                )
            )
            return mine
        self.resolved.append(f"entry <seq={key}> was written on both devices; the remote's words kept")
        return theirs

    # -- step 2: each file's lines ----------------------------------------------------
    def _file(self, path: str, slots: dict[Place, set[int]]) -> str | None:
        base, mine, theirs = self.base_text.get(path), self.ours_text.get(path), self.theirs_text.get(path)
        if mine is None or theirs is None:
            present = mine if mine is not None else theirs
            side = self.o if mine is not None else self.t
            assert present is not None
            if base is not None and present == base:
                return None  # deleted on one side, untouched on the other
            if base is not None:
                where = "here" if mine is None else "on the remote"
                self.resolved.append(f"{path}: deleted {where} but changed on the other side; kept the changes")
            tokens = list(side.tokens[path])
            front, rebuilt = side.docs[path].frontmatter, False
        elif mine == theirs or (theirs == base and not self._moved_out(self.o, path)):
            return mine  # what changed in it changed here only
        elif mine == base and not self._moved_out(self.t, path):
            return theirs
        elif theirs == base or mine == base:
            # Changed on one side only, but it holds a seq the merge places elsewhere (both
            # devices consolidated the same entries: the remote's place wins): its entries
            # are written again, each with the seqs it keeps, so none is held twice.
            side = self.o if theirs == base else self.t
            tokens = list(side.tokens[path])
            front, rebuilt = side.docs[path].frontmatter, True
        else:
            tokens = self._tokens(path)
            front, rebuilt = self._frontmatter(path)
        style = self.o.docs.get(path) or self.t.docs[path]
        lines, entries = self._substitute(path, tokens, slots)
        had_entries = any(where == path for where, _ in [*self.o.entries, *self.t.entries])
        if had_entries and not entries and not _keeps_something(lines, front):
            self.resolved.append(f"{path}: every entry in it lives elsewhere now; removed the emptied file")
            return None
        if rebuilt and front is not None:
            front = recount(front, lines)
        if front is not None:
            front = without_quotes(front, self._gone(path, lines))
        document = Document(
            tuple(_line(text) for text in lines), front, style.final_newline or not lines, style.newline, style.bom
        )
        return document.render()

    def _gone(self, path: str, lines: list[str]) -> list[str]:
        """The words of entries either side held in ``path`` that its merged ``lines`` no
        longer hold (moved to another topic): its summary stops quoting them."""
        held = [entry for (where, _), entry in [*self.o.entries.items(), *self.t.entries.items()] if where == path]
        if not held:
            return []
        kept = {" ".join(located.entry.full_text.split()) for located in parse_document("\n".join(lines)).signed()}
        return [entry.full_text for entry in held if " ".join(entry.full_text.split()) not in kept]

    def _tokens(self, path: str) -> list[Token]:
        empty: list[Token] = []
        hunks = diff3(self.b.tokens.get(path, empty), self.o.tokens[path], self.t.tokens[path])
        out: list[Token] = []
        for hunk in hunks:
            if hunk.kind != "conflict":
                out.extend(hunk.result)
                continue
            resolved = resolve_hunk(hunk)
            if resolved is None and self.take is not None:
                line = self._line_at(path, hunk.at_ours)
                self.resolved.append(f"{path}:{line}: lines changed on both devices; {self._kept()}")
                out.extend(hunk.ours if self.take == "here" else hunk.theirs)
            elif resolved is None:
                line = self._line_at(path, hunk.at_ours)
                self.conflicts.append(Conflict(path, line, describe_hunk(hunk)))
                out.extend(hunk.ours)
            else:
                out.extend(resolved)
        return out

    def _frontmatter(self, path: str) -> tuple[Frontmatter | None, bool]:
        """The merged frontmatter, and whether it was rebuilt from merged keys."""
        was = self.b.docs[path].frontmatter if path in self.b.docs else None
        mine, theirs = self.o.docs[path].frontmatter, self.t.docs[path].frontmatter
        if mine == theirs or theirs == was:
            return mine, False
        if mine == was:
            return theirs, False
        if self.take is not None and (mine is None or theirs is None):
            self.resolved.append(
                f"{path}: the frontmatter was removed on one side and changed on the other; {self._kept()}"
            )
            return (mine if self.take == "here" else theirs), False
        if mine is None or theirs is None:
            self.conflicts.append(Conflict(path, 1, "the frontmatter was removed on one side and changed on the other"))
            return mine, False
        try:
            data = merge_frontmatter(was.data if was is not None else {}, mine.data, theirs.data)
        except FormatError as err:
            self.conflicts.append(Conflict(path, 1, f"the frontmatter changed on both sides and does not parse: {err}"))
            return mine, False
        except KeyConflict as err:
            if self.take is not None:
                self.resolved.append(f"{path}: {err}; {self._kept()}")
                return (mine if self.take == "here" else theirs), False
            self.conflicts.append(Conflict(path, 1, str(err)))
            return mine, False
        return Frontmatter.from_data(data), True

    def _substitute(self, path: str, tokens: list[Token], slots: dict[Place, set[int]]) -> tuple[list[str], int]:
        """Lines of the file: each entry token replaced by the entry as it ends up
        here (whole, with fewer seqs, or gone); entries that belong here but have
        no token (moved here by a merge of placements) are added at the end."""
        lines: list[str] = []
        emitted: set[str] = set()
        entries = 0
        for kind, value in tokens:
            if kind == "L":
                lines.extend(value.split("\n"))
                continue
            if value in emitted:
                continue
            entry = self._slot(path, value, slots)
            if entry is not None:
                emitted.add(value)
                lines.extend(entry.lines())
                entries += 1
        for (where, key), seqs in sorted(slots.items()):
            if where == path and key not in emitted and seqs:
                entry = self._slot(path, key, slots)
                if entry is not None:
                    lines.extend(entry.lines())
                    entries += 1
        return lines, entries

    def _slot(self, path: str, key: str, slots: dict[Place, set[int]]) -> Entry | None:
        seqs = slots.get((path, key))
        if not seqs:
            return None
        entry = self._content(key, path)
        if entry is None or entry.signature is None:
            return None
        if seqs != set(SeqSet.parse(key)):
            kept = SeqSet.of(seqs)
            self.resolved.append(f"{path}: entry <seq={key}> keeps seq {kept}; the rest were placed by the remote")
            entry = replace(entry, signature=entry.signature.replace(seq=str(kept)))
        return entry

    # -- helpers --------------------------------------------------------------------
    def _line_at(self, path: str, index: int) -> int:
        starts = self.o.lines.get(path, [])
        return starts[index] if index < len(starts) else (starts[-1] if starts else 1)

    def _line_of(self, side: Side, place: Place) -> int:
        path, key = place
        tokens = side.tokens.get(path, [])
        index = tokens.index(("E", key)) if ("E", key) in tokens else 0
        starts = side.lines.get(path, [])
        return starts[index] if index < len(starts) else 1

    def _check(self, files: dict[str, str | None]) -> None:
        live: Counter[int] = Counter()
        for path in set(self.ours_text) | set(files):
            text = files[path] if path in files else self.ours_text[path]
            if text is None:
                continue
            for located in parse_document(text).signed():
                live.update(located.entry.signature.seq)  # type: ignore[union-attr]
        doubled = sorted(seq for seq, count in live.items() if count > 1)
        missing = sorted(seq for seq in self.final if seq not in live)
        if doubled or missing:
            parts = []
            if doubled:
                parts.append(f"seqs {SeqSet.of(doubled)} would be in two entries")
            if missing:
                parts.append(f"seqs {SeqSet.of(missing)} would be lost")
            raise MergeError("sync refused, nothing was changed: " + "; ".join(parts))


def _line(text: str) -> Any:
    from memd.core.document import Line

    return Line(text)


def _keeps_something(lines: list[str], front: Frontmatter | None) -> bool:
    """Whether a file with no entries left still holds words (prose, notes) or
    supersession records that must not vanish with it."""
    if front is not None and "supersedes seq" in front.raw:
        return True
    return any(line.strip() and not line.lstrip().startswith("#") for line in lines)
