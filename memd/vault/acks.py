"""The acknowledgement log: every seq memd confirmed to a caller, until git holds it.

``memd add`` (and ingest, adoption) appends the entry to CURRENT.md, fsyncs,
then records it here and only then answers. Buffered entries are not yet in
any commit, so this machine-local log (``.memd/acks.jsonl``, git-ignored) is
what lets ``memd verify`` account for them, and what lets memd put back an
entry that an editor's stale save wiped from CURRENT.md. A consolidation
that commits the buffer settles the seqs it committed: git vouches for them
from then on, so the log stays as small as the buffer.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from memd.core.atomic import append_bytes, atomic_write, read_bytes
from memd.core.errors import FormatError, WriteError
from memd.core.signature import MAX_SEQ, Signature
from memd.vault.vault import Vault

if TYPE_CHECKING:
    from memd.core.document import Known

NAME = "acks.jsonl"
# How long an acknowledged entry is guarded after it was filed into a topic:
# long enough to outlast an editor that held a stale copy of a file.
RETENTION = timedelta(hours=24)


@dataclass(frozen=True)
class Ack:
    """One acknowledged entry: its seq and its lines as appended."""

    seq: int
    entry: str  # the entry's lines as appended, signature first
    at: str  # when memd acknowledged it


def _path(vault: Vault) -> Path:
    return vault.meta_dir / NAME


def record(vault: Vault, acks: Iterable[Ack]) -> str | None:
    """Append acknowledgements durably (one write, fsynced). Call under the vault lock.

    Never through a link nor into a pipe, a device or a folder put where the
    log belongs (the entries' text would leave the vault, or the write would
    block): the entries are durable in CURRENT.md all the same, so this
    returns why they are not guarded (None when they are), for the caller to
    pass on as a warning."""
    payload = "".join(json.dumps({"seq": a.seq, "entry": a.entry, "at": a.at}, ensure_ascii=False) + "\n" for a in acks)
    if not payload:
        return None
    unsaved = "the entry is saved, but memd cannot put it back should an editor's stale save wipe it"
    wrong = _wrong_kind(_path(vault))
    if wrong is not None:
        return f".memd/{NAME} {wrong}; {unsaved}: remove it and memd starts a new one"
    try:
        vault.meta_dir.mkdir(parents=True, exist_ok=True)
        append_bytes(_path(vault), payload.encode("utf-8"))
    except (WriteError, OSError) as err:
        return f"{err}; {unsaved}"
    return None


def _wrong_kind(path: Path) -> str | None:
    """What is in the log's place when it is no plain file (None: a file, or nothing)."""
    try:
        mode = path.lstat().st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link (memd never writes through links under .memd/)"
    if stat.S_ISDIR(mode):
        return "is a folder"
    if not stat.S_ISREG(mode):
        return "is not a regular file (a pipe or a device?)"
    return None


def pending(vault: Vault) -> dict[int, Ack]:
    """Acknowledged seqs that no commit holds yet, by seq. A line that is not
    an acknowledgement memd wrote (a torn last line after a crash, a seq out
    of range, an entry that does not carry its seq) is skipped: ``problem``
    names it."""
    return _read(vault)[0]


def problem(vault: Vault) -> str | None:
    """Why (part of) the log cannot be trusted, in one line; None when all is well.

    ``memd status`` asks this of a log as long as the buffer: the lines found
    sound are remembered (``.memd/index/acks-checked.json``, their length and
    digest), and only lines appended since are read again."""
    import hashlib

    name = f".memd/{NAME}"
    if _wrong_kind(_path(vault)) is not None:
        return _read(vault)[1]
    try:
        data = read_bytes(_path(vault))
    except OSError:
        return _read(vault)[1]
    checked = _checked(vault)
    whole = data.rfind(b"\n") + 1  # complete lines; a torn last one is judged as _read does
    start = 0
    if checked is not None and checked[0] <= whole and hashlib.sha256(data[: checked[0]]).hexdigest() == checked[1]:
        start = checked[0]
    for offset, line in _lines(data, start, whole):
        _, why = _parse(line) if line.strip() else (True, "")
        if why:
            number = data.count(b"\n", 0, offset) + 1
            return _read(vault)[1] or f"{name}:{number}: skipped: {why}"
    if whole != start:
        _remember_checked(vault, whole, hashlib.sha256(data[:whole]).hexdigest())
    return None if whole == len(data) or not data[whole:].strip() else _read(vault)[1]


_CHECKED = "acks-checked.json"


def _lines(data: bytes, start: int, end: int) -> Iterable[tuple[int, str]]:
    at = start
    while at < end:
        stop = data.index(b"\n", at)
        yield at, data[at:stop].decode("utf-8", errors="replace")
        at = stop + 1


def _checked(vault: Vault) -> tuple[int, str] | None:
    try:
        raw = json.loads((vault.index_dir / _CHECKED).read_text(encoding="utf-8"))
        length, digest = raw["length"], raw["digest"]
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return (length, digest) if type(length) is int and isinstance(digest, str) else None


def _remember_checked(vault: Vault, length: int, digest: str) -> None:
    from memd.core.atomic import own_folder
    from memd.core.errors import MemdError

    try:
        own_folder(vault.index_dir)  # never written through a link out of the vault
        vault.index_dir.mkdir(parents=True, exist_ok=True)
        atomic_write(vault.index_dir / _CHECKED, json.dumps({"length": length, "digest": digest}), derived=True)
    except (OSError, MemdError):
        pass  # checked again next time


# The log's complete lines as last read in this process, by path: (their bytes, the acks, skipped lines).
_PARSED: dict[str, tuple[bytes, dict[int, Ack], tuple[tuple[int, str], ...]]] = {}


def _read(vault: Vault) -> tuple[dict[int, Ack], str | None]:
    name = f".memd/{NAME}"
    wrong = _wrong_kind(_path(vault))
    if wrong is not None:
        return {}, f"{name}: {wrong}; memd ignores it: remove it and memd starts a new one"
    try:
        data = read_bytes(_path(vault))
    except FileNotFoundError:
        return {}, None
    except OSError as err:
        return {}, f"{name}: cannot read: {err.strerror}; memd ignores it"
    # A consolidation reads the log several times a round, and a long import's log holds
    # every turn: the complete lines read before are taken as read, when they are still there.
    whole = data.rfind(b"\n") + 1
    key = str(_path(vault))
    known = _PARSED.get(key)
    if known is not None and data.startswith(known[0]):
        start, found, skipped = len(known[0]), dict(known[1]), list(known[2])
    else:
        start, found, skipped = 0, {}, []
    number = data.count(b"\n", 0, start)
    for line in data[start:whole].decode("utf-8", errors="replace").split("\n")[:-1]:
        number += 1
        if not line.strip():
            continue
        ack, why = _parse(line)
        if ack is not None:
            found[ack.seq] = ack
        else:
            skipped.append((number, why))
    if whole > start or known is None:  # nothing new read: what is kept holds already
        _PARSED[key] = (data[:whole], dict(found), tuple(skipped))
    torn = data[whole:].decode("utf-8", errors="replace")
    if torn.strip():  # a last line with no newline yet is a crash mid-append, not damage: read if whole
        ack, _ = _parse(torn)
        if ack is not None:
            found[ack.seq] = ack
    if not skipped:
        return found, None
    first, why = skipped[0]
    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
    return found, f"{name}:{first}: skipped: {why}{more}"


def _parse(line: str) -> tuple[Ack | None, str]:
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):
        return None, "not a JSON line"
    if not isinstance(raw, dict):
        return None, "not a JSON object"
    seq, entry, at = raw.get("seq"), raw.get("entry"), raw.get("at")
    # JSON reads 1e30 as a float and "seq": true as a bool: neither is a seq.
    if type(seq) is not int or not 1 <= seq <= MAX_SEQ:
        return None, f"seq {repr(seq)[:40]} is not a seq"
    if not isinstance(entry, str) or not isinstance(at, str):
        return None, "entry and at must be text"
    # Only an entry that carries its own seq can be put back (an entry line
    # is all restore.py appends to CURRENT.md).
    signature = _one_line_signature(entry)
    if signature is None:
        from memd.core.document import parse_document  # not for an add, which only writes the log

        document = parse_document(entry)
        signed = document.signed()
        signature = signed[0].entry.signature if len(document.blocks) == 1 and len(signed) == 1 else None
    if signature is None or not any(start <= seq <= end for start, end in signature.seq.parts):
        return None, f"seq {seq}: the entry is not one entry with that seq"
    return Ack(seq, entry, at), ""


def _one_line_signature(entry: str) -> Signature | None:
    """The signature of an entry as memd writes one ("- <seq=…> text" on one line),
    read without the document parser (``memd status`` checks every ack); None
    for anything else, which the parser then judges."""
    line = entry.removesuffix("\n")
    if not line.startswith("- <") or "\n" in line or "\r" in line:
        return None
    end = line.find(">")
    if end < 0 or line[end + 1 : end + 2] not in ("", " ") or " " in line[2:end]:
        return None
    try:
        return Signature.parse(line[2 : end + 1])
    except FormatError:
        return None


def words_of(ack: Ack, known: Known | None = None) -> str:
    """The words ``ack`` acknowledged (its entry's text, continuation lines joined);
    ``known`` as for ``parse_document``: an entry read already is not parsed again."""
    from memd.core.document import parse_document

    line = ack.entry.removesuffix("\n")
    if known is not None and "\n" not in line and "\r" not in line and not line.startswith("\ufeff"):
        # An entry of one line read before (a walk through history meets each): its parse, as
        # ``parse_document`` would find it there; a line ``known`` lacks is parsed below.
        parsed = known.get((line, ()))
        if parsed is not None and parsed[0] is not None and parsed[0].signature is not None:
            return parsed[0].full_text
    entry = next(parse_document(ack.entry, known).signed_entries(), None)
    return entry.full_text if entry is not None else ack.entry


def reread(vault: Vault, entries: Mapping[int, str], adopted: Mapping[int, str] | None = None, at: str = "") -> None:
    """Acknowledge again, with the words a consolidation read, the buffered
    entries a person edited since memd acknowledged them (``entries``: seq ->
    the entry's lines as the buffer holds them), and acknowledge the lines it
    adopted from the buffer (``adopted``, at ``at``): ``memd verify`` compares
    what memd's commit filed with the acknowledged words, a person's own edit
    is theirs to make, and an editor's stale save that brings an adopted line
    back is known for a copy (``consolidation/stale.py``). Call under the vault lock."""
    from memd.core.document import parse_document

    waiting = pending(vault)
    fresh = [Ack(seq, entry, at) for seq, entry in (adopted or {}).items() if seq not in waiting]
    for seq, entry in entries.items():
        ack = waiting.get(seq)
        if ack is None or ack.entry == entry:
            continue
        signed = parse_document(entry).signed()
        if signed and signed[0].entry.full_text != words_of(ack):
            fresh.append(Ack(seq, entry, ack.at))  # read later, the newest line of a seq wins
    if fresh:
        record(vault, fresh)


def settle(vault: Vault, seqs: Iterable[int]) -> None:
    """Forget seqs that were removed on purpose or aged out. Call under the vault lock."""
    done = set(seqs)
    waiting = pending(vault)
    if not done & set(waiting):
        return  # nothing to forget (nor a log memd could rewrite: a folder, a pipe)
    keep = [a for a in waiting.values() if a.seq not in done]
    text = "".join(json.dumps({"seq": a.seq, "entry": a.entry, "at": a.at}, ensure_ascii=False) + "\n" for a in keep)
    atomic_write(vault.meta_dir / NAME, text)


def prune(vault: Vault, keep: Iterable[int]) -> None:
    """Forget acknowledgements older than RETENTION, except the seqs in ``keep``
    (entries still in the buffer stay guarded). Call under the vault lock."""
    from memd.core.errors import FormatError
    from memd.core.timeutil import now, parse_time

    waiting = pending(vault)
    kept = set(keep)
    horizon = now() - RETENTION
    stale = set()
    for seq, ack in waiting.items():
        if seq in kept:
            continue
        try:
            old = parse_time(ack.at) < horizon
        except FormatError:
            old = True
        if old:
            stale.add(seq)
    settle(vault, stale)
