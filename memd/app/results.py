"""Typed results of the application layer's verbs, each with ``to_json()``.

The JSON is the contract the CLI's ``--json`` and the MCP tools share: the
same question through either door gives the same facts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.app.status import BufferFacts, Status
    from memd.vault.buffer import Added, AddResult

__all__ = ["AddResult", "Added", "BufferFacts", "Hits", "JsonResult", "Status"]


def __getattr__(name: str) -> Any:
    # An add's results are the buffer's own, the status its report's: a search, which
    # returns ``Hits``, imports neither the write path (the buffer, the secret rules, the
    # time expressions) nor the status's types.
    if name in ("Added", "AddResult"):
        from memd.vault import buffer

        return getattr(buffer, name)
    if name in ("BufferFacts", "Status"):
        from memd.app import status

        return getattr(status, name)
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
