"""What ``memd status`` reports (``Status``): the buffer against its thresholds, topics,
seqs and consolidations, the index, the model endpoint, sync, and anything
that needs a person (a commit owed, ignores missing, a damaged ack log).
Read-only: a held lock or an unreadable file makes a field empty, never the
whole report fail."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from memd.vault.vault import Vault


@dataclass(frozen=True)
class BufferFacts:
    entries: int
    unsigned: int
    tokens: int
    token_threshold: int
    since: str | None
    age_seconds: int | None
    age_threshold_seconds: float
    due: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "unsigned": self.unsigned,
            "tokens": self.tokens,
            "token_threshold": self.token_threshold,
            "since": self.since,
            "age_seconds": self.age_seconds,
            "age_threshold_seconds": self.age_threshold_seconds,
            "due": self.due,
        }


@dataclass(frozen=True)
class Status:
    """What ``memd status`` and MCP ``memory_status`` report."""

    vault: str
    engine: dict[str, Any]
    buffer: BufferFacts
    topics: int
    next_seq: int
    consolidations: int
    last_consolidation: str | None
    state_problem: str | None
    extra: dict[str, Any] = field(default_factory=dict)  # facts later layers add (retrieval, git health)

    def to_json(self) -> dict[str, Any]:
        return {
            "vault": self.vault,
            "engine": self.engine,
            "buffer": self.buffer.to_json(),
            "topics": self.topics,
            "next_seq": self.next_seq,
            "consolidations": self.consolidations,
            "last_consolidation": self.last_consolidation,
            "state_problem": self.state_problem,
            **self.extra,
        }


def vault_status(vault: Vault) -> Status:
    """The status of ``vault`` (call after recovering an interrupted consolidation)."""
    from memd.core.errors import MemdError
    from memd.core.timeutil import format_time
    from memd.engine import describe
    from memd.index.backends import describe_index
    from memd.index.embedding import describe_retrieval
    from memd.vault import acks
    from memd.vault.buffer_status import BufferStatus, buffer_status
    from memd.vault.state import next_seq, read_state

    buffer_problem = None
    try:
        buffer = buffer_status(vault)
    except MemdError as err:
        from memd.core.atomic import read_bytes

        try:  # a stray byte typed into CURRENT.md (add appends after it): said, the rest reported
            read_bytes(vault.current)
        except OSError:
            raise err from None  # not a file memd can read at all: the report says only that
        buffer_problem = f"{err} (memd add still appends; consolidation waits until it is fixed)"
        buffer = BufferStatus(0, 0, 0, vault.config.buffer_tokens, None, None, vault.config.buffer_age.total_seconds())
    state, problem = read_state(vault)
    facts = BufferFacts(
        entries=buffer.entries,
        unsigned=buffer.unsigned,
        tokens=buffer.tokens,
        token_threshold=buffer.token_threshold,
        since=format_time(buffer.since) if buffer.since else None,
        age_seconds=round(buffer.age_seconds) if buffer.age_seconds is not None else None,
        age_threshold_seconds=buffer.age_threshold_seconds,
        due=buffer.due_reason,
    )
    sync = sync_facts(vault)
    retrieval = describe_retrieval(vault.config.embedding)
    return Status(
        vault=str(vault.root),
        engine=describe(vault.config),
        buffer=facts,
        topics=len(vault.topic_files()),
        next_seq=next_seq(vault, sync["device"]["index"]),
        consolidations=state.epoch,
        last_consolidation=state.last_consolidation,
        state_problem=problem,
        extra={
            "retrieval": retrieval,
            "index": describe_index(vault.index_dir, vault.config.index_backend, vectors=retrieval["mode"] == "hybrid"),
            "uncommitted": owed_commit(vault),
            "endpoint": endpoint_health(vault),
            "sync": sync,
            "gitignore_missing": _missing_ignores(vault),
            "acks_problem": acks.problem(vault),
            "vanished": _vanished(vault),
            "buffer_problem": buffer_problem,
            "topic_health": _topic_health(vault),
        },
    )


def age_text(seconds: float | None) -> str:
    from memd.core.timeutil import format_duration

    return format_duration(timedelta(seconds=seconds)) if seconds is not None else "-"


def sync_facts(vault: Vault) -> dict[str, Any]:
    """This clone's device and how far it is ahead of / behind its remote (as of the last fetch)."""
    from memd.sync.status import sync_facts as facts

    return facts(vault, vault.config.sync_remote)


def owed_commit(vault: Vault) -> str | None:
    """The subject of a consolidation whose files are written but not yet committed."""
    from memd.vault.journal import owed

    record = owed(vault)
    return record[0].splitlines()[0] if record else None


def endpoint_health(vault: Vault) -> dict[str, Any] | None:
    """The model endpoint's health: last success, last failure and its cause,
    paused until when (the circuit breaker); None when no model was called."""
    from memd.engine.breaker import describe, health_path, read_health

    return describe(read_health(health_path(vault.meta_dir)))


def _topic_health(vault: Vault) -> dict[str, Any] | None:
    from memd.core.errors import MemdError

    try:
        return topic_health(vault)
    except MemdError:  # the lock is held long (a consolidation): status still answers
        return None


def topic_health(vault: Vault) -> dict[str, Any]:
    """Topic sizes from the catalog (kept in step with the files incrementally):
    how many, median and largest in tokens, how many are tiny (under a tenth
    of ``merge_tokens``: a fragment routing left alone) and how many are over
    ``split_tokens`` (the next consolidation that touches them splits them)."""
    from memd.consolidation.catalog import Catalog

    with vault.locked(timeout=1.0):  # a consolidation holding it longer: status answers without
        catalog = Catalog.open(vault)
    try:
        sizes = sorted(row.tokens for row in catalog.known.values() if row.problem is None)
        skipped = [problem for _, problem in catalog.problems()]
    finally:
        catalog.close()
    middle = len(sizes) // 2
    median = (sizes[middle] if len(sizes) % 2 else (sizes[middle - 1] + sizes[middle]) // 2) if sizes else 0
    return {
        "count": len(sizes),
        "median_tokens": median,
        "max_tokens": sizes[-1] if sizes else 0,
        "tiny": sum(1 for size in sizes if size < vault.config.merge_tokens // 10),
        "huge": sum(1 for size in sizes if size > vault.config.split_tokens),
        "skipped": skipped,  # topics consolidation leaves alone until a person fixes them, and why
    }


def _missing_ignores(vault: Vault) -> list[str]:
    from memd.vault.vault import missing_ignores

    try:
        return missing_ignores((vault.root / ".gitignore").read_text(encoding="utf-8"))
    except FileNotFoundError:
        return missing_ignores("")
    except (OSError, UnicodeDecodeError):
        return []  # unreadable: lint names the file; status is not the place to fail


def _vanished(vault: Vault) -> int:
    """How many entries memd acknowledged are in no file, and no person removed on
    purpose (a `git reset`, an editor's stale save): memd puts them back before
    it next commits or consolidates."""
    from memd.consolidation.restore import on_purpose, vanished
    from memd.core.errors import MemdError
    from memd.vault import acks

    waiting = acks.pending(vault)
    if not waiting:
        return 0
    try:
        gone = vanished(vault, waiting)
        return len(gone) - len(on_purpose(vault, gone)) if gone else 0
    except (MemdError, OSError):
        return 0  # a buffer memd cannot read is reported as such
