"""Typed results of the application layer's verbs, each with ``to_json()``.

The JSON is the contract the CLI's ``--json`` and the MCP tools share: the
same question through either door gives the same facts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.vault.buffer import Added, AddResult

__all__ = ["AddResult", "Added", "BufferFacts", "Hits", "JsonResult", "Status"]


def __getattr__(name: str) -> Any:
    # An add's results are the buffer's own; a search, which returns ``Hits``, does not
    # import the write path (the buffer, the secret rules, the time expressions).
    if name in ("Added", "AddResult"):
        from memd.vault import buffer

        return getattr(buffer, name)
    raise AttributeError(name)


@dataclass(frozen=True)
class JsonResult:
    """A result that is already plain JSON data (search hits, grep matches, lines, the catalog)."""

    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return self.data


@dataclass(frozen=True)
class Hits:
    """Ranked search results for a query."""

    query: str
    results: tuple[dict[str, Any], ...]
    as_of: dict[str, Any] | None = None  # the commit searched, for a search of the past
    # While vectors are still being built: (records with a vector, records that want one).
    vectors: tuple[int, int] | None = None
    finish_seconds: float | None = None  # the rest, at the rate this search embedded (None: not measured)
    respelled: tuple[tuple[str, str], ...] = ()  # query words no record holds, (as typed, as read)
    building: bool = False  # another process (a reindex) holds the index, building the vectors

    @property
    def note(self) -> str | None:
        """One line saying the ranking is by words (and the vectors there are) until the vectors are built."""
        if self.vectors is None:
            return None
        done, wanted = self.vectors
        return f"vectors {done:,} / {wanted:,}: ranked by words and the vectors built so far"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"query": self.query, "results": list(self.results)}
        if self.as_of is not None:
            data["as_of"] = self.as_of
        if self.note is not None:
            data["note"] = self.note
        if self.respelled:
            data["respelled"] = [list(pair) for pair in self.respelled]
        return data


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
