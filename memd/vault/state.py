"""``.memd/state.json`` and seq allocation.

Seqs are monotonic for the vault's whole life and never reused. The next seq
is the larger of the stored counter and one past the highest seq found in any
vault file, so a missing, corrupt or stale state.json (restored from an old
commit, say) cannot hand out a seq that is already in use; and a hand-deleted
entry cannot free its seq, because the stored counter never goes down.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from memd.core.atomic import atomic_write, read_bytes
from memd.core.signature import MAX_SEQ, MAX_SEQS_PER_ENTRY
from memd.vault.seq_cache import SeqCache, list_holds, load_cache, save_cache, stat_of, unchanged
from memd.vault.vault import Vault

# A signature counts only where an entry can start (memd/core/document.py): a list
# marker at the start of a line. Entry text never puts one there (its extra lines
# are indented), so a signature quoted inside an entry names no seq and cannot
# move the counter. The patterns start with the newline before the line (a
# literal lets the scan skip ahead, as fast as a search for "<seq=" alone); the
# text is searched with one newline put before it, for its first line.
_AT_ENTRY = rb"\n(?:\xef\xbb\xbf)?[-*+][ \t]+<seq="
_SEQ_VALUE = re.compile(_AT_ENTRY + rb"([0-9+\-]+)")
_DIGITS = len(str(MAX_SEQ))
_SINGLE = re.compile(_AT_ENTRY + rb"([1-9][0-9]{0,%d})[,>]" % (_DIGITS - 1))
_MERGED = re.compile(_AT_ENTRY + rb"([0-9]*[+\-][0-9+\-]*)")


@dataclass(frozen=True)
class State:
    """What ``.memd/state.json`` holds: the seq counters and the consolidation count."""

    next_seq: int = 1
    epoch: int = 0  # consolidations completed in this vault
    last_consolidation: str | None = None
    buffer_since: str | None = None  # when the buffer last went from empty to non-empty
    # Next seq of each registered device's space, by device index (ARCHITECTURE.md §7);
    # ``next_seq`` stays the counter of space 0, the only one a never-synced vault uses.
    spaces: dict[str, int] = field(default_factory=dict)

    def next_in(self, space: int) -> int:
        from memd.vault.seqspace import bounds

        if space == 0:
            return self.next_seq
        return max(self.spaces.get(str(space), 0), bounds(space).start)

    def advanced(self, space: int, stop: int) -> State:
        """The state with space ``space``'s counter moved on to at least ``stop``."""
        if space == 0:
            return replace(self, next_seq=max(self.next_seq, stop))
        return replace(self, spaces={**self.spaces, str(space): max(self.next_in(space), stop)})


def read_state(vault: Vault) -> tuple[State, str | None]:
    """The stored state and, when it is unusable, why (then defaults are used)."""
    from memd.core.atomic import _describe, read_bytes

    try:
        text = read_bytes(vault.state_path).decode("utf-8")  # a link is not followed
    except FileNotFoundError:
        return State(), "state.json is missing"
    except OSError as err:
        return State(), f"state.json is unreadable ({_describe(err)})"
    except UnicodeDecodeError as err:
        return State(), f"state.json is unreadable ({err.reason} at byte {err.start})"
    return parse_state(text)


def parse_state(text: str) -> tuple[State, str | None]:
    """``read_state`` for a text (from git, say). Every value is checked: a
    wrong one is named in the problem and replaced by its default, never
    passed on (``buffer_since: 7``, ``next_seq: 10**30``)."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError) as err:  # bad JSON, a 5,000-digit number, deep nesting
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        return State(), f"state.json is unreadable ({first[:100]})"
    if not isinstance(raw, dict) or not _is_int(raw.get("next_seq")) or raw["next_seq"] < 1:
        return State(), "state.json has no valid next_seq"
    if raw["next_seq"] > MAX_SEQ + 1:
        return State(), f"state.json: next_seq {_short(raw['next_seq'])} is out of range (a seq has at most 15 digits)"
    state, problems = State(next_seq=raw["next_seq"]), []
    if _is_int(raw.get("epoch", 0)) and raw.get("epoch", 0) >= 0:
        state = replace(state, epoch=raw.get("epoch", 0))
    else:
        problems.append(f"epoch {_short(raw.get('epoch'))} is not a count")
    times: dict[str, str | None] = {}
    for key in ("last_consolidation", "buffer_since"):
        value = raw.get(key)
        if value is None or (isinstance(value, str) and _is_time(value)):
            times[key] = value
        else:
            problems.append(f"{key} {_short(value)} is not a time")
    state = replace(state, last_consolidation=times.get("last_consolidation"), buffer_since=times.get("buffer_since"))
    spaces = raw.get("spaces", {})
    if isinstance(spaces, dict):
        kept = {str(k): v for k, v in spaces.items() if _is_int(v) and 0 < v <= MAX_SEQ + 1 and str(k).isdigit()}
        state = replace(state, spaces=kept)
    return state, ("state.json: " + "; ".join(problems)) if problems else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_time(value: str) -> bool:
    from memd.core.errors import FormatError
    from memd.core.timeutil import parse_time

    try:
        parse_time(value)
    except FormatError:
        return False
    return True


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def advance_past(state: State, reserved: range) -> State:
    """The state with the counter of the space ``reserved`` came from moved past it."""
    from memd.vault.seqspace import space_of

    return state.advanced(space_of(reserved.start), reserved.stop) if reserved else state


def render_state(state: State) -> str:
    data = asdict(state)
    if not data["spaces"]:
        del data["spaces"]  # a vault that was never synced keeps the exact file it always had
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def write_state(vault: Vault, state: State) -> None:
    atomic_write(vault.state_path, render_state(state), derived=True)


def seqs_in_text(text: str) -> set[int]:
    """Every seq a signature in ``text`` names (ranges bounded, see ``SeqSet``)."""
    from memd.core.errors import FormatError
    from memd.core.signature import SeqSet

    found: set[int] = set()
    for value in _SEQ_VALUE.findall(b"\n" + text.encode("utf-8", errors="surrogateescape")):
        # One seq, as nearly every entry names (``SeqSet.parse``'s own first rule): a
        # buffer of 40,000 entries is read this way at every round of a long import.
        if value.isdigit() and value[0] != 48 and len(value) <= _DIGITS:
            found.add(int(value))
            continue
        try:
            found.update(SeqSet.parse(value.decode(), MAX_SEQS_PER_ENTRY))
        except FormatError:
            continue
    return found


def seqs_in_files(paths: list[Path]) -> set[int]:
    found: set[int] = set()
    for path in paths:
        try:
            found |= seqs_in_text(read_bytes(path).decode("utf-8", errors="surrogateescape"))
        except OSError:
            continue
    return found


def highest_seq_in(paths: list[Path], within: range | None = None) -> int:
    """The highest seq named in any signature in these files (0 if none),
    counting only seqs ``within`` a device's space when given."""
    best = 0
    for path in paths:
        try:
            data = b"\n" + read_bytes(path)  # the newline before the first line (see _AT_ENTRY)
        except OSError:
            continue
        # Single seqs (nearly all of them) in one fast pass; merged ones one by one.
        singles = map(int, _SINGLE.findall(data))
        best = max(best, max(singles if within is None else (n for n in singles if n in within), default=0))
        for match in _MERGED.finditer(data):
            best = max(best, _highest_valid(match.group(1), within))
    return best


def _highest_valid(value: bytes, within: range | None) -> int:
    """The highest seq (``within`` the range, if given) of a merged seq value;
    0 when it is not valid: a typo like ``1-999999999999`` must not move the
    counter, and is never expanded to find out."""
    from memd.core.errors import FormatError
    from memd.core.signature import SeqSet

    try:
        parts = SeqSet.parse(value.decode(), MAX_SEQS_PER_ENTRY).parts
    except FormatError:
        return 0
    if within is None:
        return max(end for _, end in parts)
    return max(
        (min(end, within.stop - 1) for start, end in parts if start < within.stop and end >= within.start), default=0
    )


def highest_seq(vault: Vault) -> int:
    """The highest seq of space 0 (all of them in a vault that was never synced)."""
    from memd.vault.seqspace import bounds

    return highest_seq_in(vault.entry_files(), bounds(0))


def allocate(vault: Vault, count: int, *, buffer_was_empty: bool = False, at: str | None = None) -> range:
    """Reserve ``count`` fresh seqs. Call with the vault lock held.

    The next seq is past the stored counter, past every seq this machine ever
    handed out, and past every seq in any file: an old state.json restored
    from git, or a topic pulled from another clone, cannot make a seq come
    back. The cost follows the change, not the vault: a machine-local cache
    (``.memd/seq.local``, never committed) keeps each file's highest seq with
    its size and mtime, so only files that changed since are read again, and
    each folder's mtime, so the vault is walked again only when a file was
    created, deleted or renamed (one stat a file still catches edits in place). The
    counter is saved before the caller writes any entry, so a crash in
    between leaves a gap, never a reused seq.

    Seqs come from this clone's device space (ARCHITECTURE.md §7): space 0
    in a vault that was never synced, so such a vault allocates exactly as
    it always did.
    """
    from memd.vault.seqspace import REGISTRY

    state, problem = read_state(vault)
    cache = load_cache(vault) if problem is None else None
    # Never synced (no registry): space 0, with no git and no registry to read.
    space: int = 0
    device: dict[str, Any] = {}
    if (vault.root / REGISTRY).exists():
        from memd.vault.spaces import allocation_space

        space, device = allocation_space(vault, cache.device if cache is not None else None)
    if cache is not None and cache.space != space:
        cache = None  # the cached highs were counted in another space
    seen = _seen(vault, state, cache, space)
    within, start, mark = seen.within, seen.start, cache.mark if cache is not None else 0
    if start + count > within.stop:
        # A seq near the end of the range (typed or pasted by hand: ``<seq=999999999>``)
        # would end allocation for good. Seqs stay unique without going past it: the
        # first run of free seqs past the counter and every seq handed out here.
        start = _past_the_counter(vault, max(state.next_in(space), mark + 1, within.start), count, within, seen.fresh)
    updated = state.advanced(space, start + count)
    if buffer_was_empty and at is not None:
        updated = replace(updated, buffer_since=at)
    write_state(vault, updated)
    save_cache(
        vault,
        start + count - 1,
        seen.listed_high,
        (seen.ignore, seen.stamps),
        space,
        device,
        seen.fresh,
        seen.files_text,
    )
    return range(start, start + count)


class _Seen(NamedTuple):
    """What allocation reads: the first seq past the stored counter, every seq this
    machine handed out (the cache's mark) and every seq in any file of the space,
    and the record of the files but the buffer (``_count``) to keep for next time."""

    start: int
    within: range
    ignore: list[str]
    listed_high: int  # the highest seq of the files but the buffer
    fresh: dict[str, Any]
    files_text: bytes | None  # the record as read, when it stands
    stamps: dict[str, int]  # the folder stamps that vouch for the list of files


def _seen(vault: Vault, state: State, cache: SeqCache | None, space: int) -> _Seen:
    from memd.vault.seqspace import bounds

    within = bounds(space)
    ignore = list(vault.ignore)
    # While no folder's stamp moved, no file was created, deleted or renamed:
    # the files are the ones counted last time, and the vault need not be walked.
    listed = cache.listed if cache is not None else None
    files_text = None
    if cache is not None and listed is not None and list_holds(vault, listed, ignore):
        stamps = listed[1]
        # Nearly every add: no file changed either, and the record is written back as it was read.
        if cache.high is not None and unchanged(vault, cache.files):
            listed_high, fresh, files_text = cache.high, cache.files, cache.files_text
        else:
            listed_high, fresh = _count(vault, list(cache.files), cache.files, within)
    else:
        rels, stamps = vault.entry_listing()
        listed_high, fresh = _count(vault, rels, cache.files if cache is not None else {}, within)
    # The buffer changes with every add: it is read each time, and kept out of
    # the record (``_count``), so that the record of every other file stands.
    highest = max(listed_high, highest_seq_in([vault.current], within))
    mark = cache.mark if cache is not None else 0
    start = max(state.next_in(space), mark + 1, highest + 1, within.start)
    return _Seen(start, within, ignore, listed_high, fresh, files_text, stamps)


def next_seq(vault: Vault, space: int = 0) -> int:
    """The seq the next add in ``space`` starts from, read without reserving it or
    writing anything (``memd status``), as ``allocate`` finds it."""
    state, problem = read_state(vault)
    cache = load_cache(vault) if problem is None else None
    return _seen(vault, state, cache if cache is not None and cache.space == space else None, space).start


def _past_the_counter(vault: Vault, base: int, count: int, within: range, highs: dict[str, Any]) -> int:
    """The first seq of ``count`` free ones from ``base`` on: none of them named in
    any file, all of them past every seq this clone ever handed out (``base``).
    Looked for only when a seq near the end of the range blocks the usual way, in
    the buffer and the files whose highest seq (``highs``: ``_count``'s record) is
    ``base`` or more: the others hold none that could be in the way."""
    paths = [vault.current] + [
        vault.root / rel for rel, value in highs.items() if (known := stat_of(value)) is None or known[2] >= base
    ]
    taken = sorted(seq for seq in seqs_in_files(paths) if base <= seq < within.stop)
    start = base
    for seq in taken:
        if seq >= start + count:
            break
        if seq >= start:
            start = seq + 1
    if start + count > within.stop:
        from memd.core.errors import VaultError

        raise VaultError(
            f"seq range {_space_of_range(within)} is full ({within.stop - within.start} seqs); no entry was written"
        )
    return start


def _space_of_range(within: range) -> int:
    from memd.vault.seqspace import space_of

    return space_of(within.start)


def _count(vault: Vault, rels: list[str], known: dict[str, Any], within: range) -> tuple[int, dict[str, list[int]]]:
    """The highest seq of these files but the buffer, and each one's [mtime, size, highest seq]:
    a file whose size and mtime are as ``known`` (the cache's record) is not read again."""
    base = str(vault.root) + os.sep
    buffer = vault.rel_of(vault.current)
    highest, fresh = 0, {}
    for rel in rels:
        if rel == buffer:
            continue
        try:
            stat = os.stat(base + rel)
        except OSError:
            continue
        was = stat_of(known.get(rel))
        if was is not None and was[0] == stat.st_mtime_ns and was[1] == stat.st_size:
            high = was[2]
        else:
            high = highest_seq_in([vault.root / rel], within)
        fresh[rel] = [stat.st_mtime_ns, stat.st_size, high]
        highest = max(highest, high)
    return highest, fresh
