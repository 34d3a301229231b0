"""``.memd/state.json`` and seq allocation.

Seqs are monotonic for the vault's whole life and never reused. The next seq
is the larger of the stored counter and one past the highest seq found in any
vault file, so a missing, corrupt or stale state.json (restored from an old
commit, say) cannot hand out a seq that is already in use; and a hand-deleted
entry cannot free its seq, because the stored counter never goes down.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from .atomic import atomic_write
from .signature import MAX_SEQ
from .vault import Vault

_DIGITS = len(str(MAX_SEQ))
_SINGLE = re.compile(rb"<seq=([1-9][0-9]{0,%d})[,>]" % (_DIGITS - 1))
_MERGED = re.compile(rb"<seq=([0-9]*[+\-][0-9+\-]*)")

_SEQ_VALUE = re.compile(rb"<seq=([0-9+\-]+)")
_NUMBER = re.compile(rb"[0-9]+")


@dataclass(frozen=True)
class State:
    next_seq: int = 1
    epoch: int = 0  # consolidations completed in this vault
    last_consolidation: str | None = None
    buffer_since: str | None = None  # when the buffer last went from empty to non-empty


def read_state(vault: Vault) -> tuple[State, str | None]:
    """The stored state and, when it is unusable, why (then defaults are used)."""
    from .atomic import _describe, read_bytes

    try:
        raw = json.loads(read_bytes(vault.state_path).decode("utf-8"))
    except FileNotFoundError:
        return State(), "state.json is missing"
    except OSError as err:
        return State(), f"state.json is unreadable ({_describe(err)})"
    except (ValueError, RecursionError) as err:  # bad JSON, bad UTF-8, a 5000-digit number, deep nesting
        return State(), f"state.json is unreadable ({_short(str(err).splitlines()[0] if str(err) else err)})"
    if not isinstance(raw, dict) or not _is_int(raw.get("next_seq")) or raw["next_seq"] < 1:
        return State(), "state.json has no valid next_seq"
    if raw["next_seq"] > MAX_SEQ + 1:
        return State(), f"state.json next_seq {_short(raw['next_seq'])} is out of range (a seq has at most 15 digits)"
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
    return state, ("state.json: " + "; ".join(problems)) if problems else None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_time(value: str) -> bool:
    from .errors import FormatError
    from .timeutil import parse_time

    try:
        parse_time(value)
    except FormatError:
        return False
    return True


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def render_state(state: State) -> str:
    return json.dumps(asdict(state), indent=2, sort_keys=True) + "\n"


def write_state(vault: Vault, state: State) -> None:
    atomic_write(vault.state_path, render_state(state))


def seqs_in_text(text: str) -> set[int]:
    """Every seq a signature in ``text`` names (ranges bounded, see ``SeqSet``)."""
    from .errors import FormatError
    from .signature import SeqSet

    found: set[int] = set()
    for match in _SEQ_VALUE.finditer(text.encode("utf-8", errors="surrogateescape")):
        try:
            found.update(SeqSet.parse(match.group(1).decode()))
        except FormatError:
            continue
    return found


def seqs_in_files(paths: list[Path]) -> set[int]:
    found: set[int] = set()
    for path in paths:
        try:
            found |= seqs_in_text(path.read_bytes().decode("utf-8", errors="surrogateescape"))
        except OSError:
            continue
    return found


def highest_seq_in(paths: list[Path]) -> int:
    """The highest seq named in any signature in these files (0 if none)."""
    best = 0
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        # Single seqs (nearly all of them) in one C-speed pass; merged ones one by one.
        best = max(best, max(map(int, _SINGLE.findall(data)), default=0))
        for match in _MERGED.finditer(data):
            best = max(best, _highest_valid(match.group(1)))
    return best


def _highest_valid(value: bytes) -> int:
    """The highest seq of a signature's seq value, 0 when it is not valid (a
    typo like ``1-999999999999`` or a 20-digit seq must not move the counter)."""
    from .errors import FormatError
    from .signature import SeqSet

    if b"-" not in value:  # the common case, kept cheap: singles and merges of singles
        numbers = _NUMBER.findall(value)
        return max((int(n) for n in numbers if len(n) <= _DIGITS), default=0)
    try:
        return SeqSet.parse(value.decode()).last
    except FormatError:
        return 0


def highest_seq(vault: Vault) -> int:
    return highest_seq_in(vault.entry_files())


def allocate(vault: Vault, count: int, *, buffer_was_empty: bool = False, at: str | None = None) -> range:
    """Reserve ``count`` fresh seqs. Call with the vault lock held.

    The next seq is past the stored counter, past every seq this machine ever
    handed out, and past every seq in any file: an old state.json restored
    from git, or a topic pulled from another clone, cannot make a seq come
    back. The cost follows the change, not the vault: a machine-local cache
    (``.memd/seq.local``, never committed) keeps each file's highest seq with
    its size and mtime, so only files that changed since are read again. The
    counter is saved before the caller writes any entry, so a crash in
    between leaves a gap, never a reused seq.
    """
    state, problem = read_state(vault)
    cache = _load_cache(vault) if problem is None else None
    mark, files = cache if cache is not None else (0, {})
    highest, fresh = 0, {}
    for path in vault.entry_files():
        rel = vault.rel_of(path)
        try:
            stat = path.stat()
        except OSError:
            continue
        known = files.get(rel)
        if known is not None and known[0] == stat.st_mtime_ns and known[1] == stat.st_size:
            high = known[2]
        else:
            high = highest_seq_in([path])
        fresh[rel] = (stat.st_mtime_ns, stat.st_size, high)
        highest = max(highest, high)
    start = max(state.next_seq, mark + 1, highest + 1)
    updated = replace(state, next_seq=start + count)
    if buffer_was_empty and at is not None:
        updated = replace(updated, buffer_since=at)
    write_state(vault, updated)
    _save_cache(vault, start + count - 1, fresh)
    return range(start, start + count)


_CACHE = "seq.local"


def _load_cache(vault: Vault) -> tuple[int, dict[str, tuple[int, int, int]]] | None:
    try:
        raw = json.loads((vault.meta_dir / _CACHE).read_text(encoding="utf-8"))
        files = {str(k): (int(v[0]), int(v[1]), int(v[2])) for k, v in raw["files"].items()}
        return int(raw["mark"]), files
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _save_cache(vault: Vault, mark: int, files: dict[str, tuple[int, int, int]]) -> None:
    atomic_write(vault.meta_dir / _CACHE, json.dumps({"mark": mark, "files": files}, separators=(",", ":")))
