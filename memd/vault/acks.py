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
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from memd.core.atomic import atomic_write
from memd.vault.vault import Vault

NAME = "acks.jsonl"
# How long an acknowledged entry is guarded after it was filed into a topic:
# long enough to outlast an editor that held a stale copy of a file.
RETENTION = timedelta(hours=24)


@dataclass(frozen=True)
class Ack:
    seq: int
    entry: str  # the entry's lines as appended, signature first
    at: str  # when memd acknowledged it


def _path(vault: Vault) -> os.PathLike[str]:
    return vault.meta_dir / NAME


def record(vault: Vault, acks: Iterable[Ack]) -> None:
    """Append acknowledgements durably (one write, fsynced). Call under the vault lock."""
    payload = "".join(json.dumps({"seq": a.seq, "entry": a.entry, "at": a.at}, ensure_ascii=False) + "\n" for a in acks)
    if not payload:
        return
    vault.meta_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(_path(vault), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, payload.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def pending(vault: Vault) -> dict[int, Ack]:
    """Acknowledged seqs that no commit holds yet, by seq. A torn last line
    (a crash mid-append) is skipped: that entry was never acknowledged."""
    try:
        text = open(_path(vault), encoding="utf-8", errors="replace").read()  # noqa: SIM115
    except FileNotFoundError:
        return {}
    except OSError:
        return {}
    found: dict[int, Ack] = {}
    for line in text.splitlines():
        try:
            raw = json.loads(line)
            ack = Ack(int(raw["seq"]), str(raw["entry"]), str(raw["at"]))
        except (ValueError, KeyError, TypeError, RecursionError):
            continue
        if ack.seq > 0:
            found[ack.seq] = ack
    return found


def settle(vault: Vault, seqs: Iterable[int]) -> None:
    """Forget seqs that were removed on purpose or aged out. Call under the vault lock."""
    done = set(seqs)
    if not done:
        return
    keep = [a for a in pending(vault).values() if a.seq not in done]
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
        try:
            old = parse_time(ack.at) < horizon
        except FormatError:
            old = True
        if old and seq not in kept:
            stale.add(seq)
    settle(vault, stale)
