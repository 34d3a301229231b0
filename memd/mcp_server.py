"""``memd mcp``: the vault's memory tools served to agents over MCP (stdio).

Each tool calls the same library function as the matching CLI command and
returns its JSON. The protocol owns stdout: the SDK points fd 1 at stderr
while it serves, and the lifespan below points ``sys.stdout`` there too, so a
stray ``print`` (or a child process) can never corrupt the stream. Tool calls
run in worker threads; one lock makes them take turns, because the index and
the buffer expect one reader-writer per process.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from memd import __version__
from memd.app import Memory
from memd.core.errors import MemdError

# CPU seconds a memory_search spends embedding vectors still missing (see memd search).
SEARCH_EMBED_SECONDS = 3.0

log = logging.getLogger("memd.mcp")

INSTRUCTIONS = """\
memd is this user's long-term memory: a vault of Markdown notes that persists across sessions.
- Before answering anything that may depend on the user's past (preferences, people, plans,
  decisions, project history), call memory_ask or memory_search, and cite what you use.
- When the user tells you something worth remembering later (a preference, a fact about them,
  a decision, a date), call memory_add with one self-contained sentence.
- memory_grep finds exact words or patterns; memory_read shows the lines around a citation;
  memory_list is the catalog of topics.
"""

# Closed world: the tools touch only this vault. Adding appends and never destroys.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
APPEND_ONLY = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)

F = TypeVar("F", bound=Callable[..., dict[str, Any]])


class _Server(MCPServer[Any]):
    """Argument mistakes come back as one plain sentence per field, not a
    validation library's dump: the reader is a model deciding what to fix."""

    async def call_tool(self, name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        from pydantic import ValidationError

        try:
            return await super().call_tool(name, arguments, *args, **kwargs)
        except ToolError as err:
            cause = err.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"{name}: {_plain(cause)}") from None
            raise


def _plain(error: Any) -> str:
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item.get("loc", ())) or "arguments"
        message = str(item.get("msg", "is invalid")).replace("Input should be", "must be")
        given = item.get("input")
        shown = f" (got {given!r})" if given is not None and not isinstance(given, dict) else ""
        parts.append(f"{field} {message[0].lower() + message[1:] if message else message}{shown}")
    return "; ".join(parts)


def build_server(memory: Memory) -> MCPServer[Any]:
    """An MCP server exposing the memory tools of ``memory``'s vault."""
    turn = threading.Lock()

    def tool(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            with turn:
                try:
                    return fn(*args, **kwargs)
                except MemdError as err:
                    # The message is written for a person or a model to act on.
                    raise ToolError(err.for_door("mcp")) from None

        return call  # type: ignore[return-value]

    server: MCPServer[Any] = _Server(
        "memd",
        title="memd memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        lifespan=_stdout_to_stderr,
    )

    @tool
    def memory_add(
        text: Annotated[
            str,
            Field(
                description="The memory: one self-contained statement, e.g. "
                "'Dana takes her coffee with oat milk.' Extra lines stay in the same entry."
            ),
        ],
        time: Annotated[
            str | None,
            Field(
                description="When it happened or was said, ISO 8601 (2026-11-20 or 2026-11-20T09:12Z). Default: now."
            ),
        ] = None,
        source: Annotated[
            str,
            Field(
                description="Who it comes from: 'user' for the user's own words, "
                "'ai' for your own conclusions, or 'import:NAME'."
            ),
        ] = "ai",
        src: Annotated[str | None, Field(description="Optional provenance, e.g. a file path#anchor or URL.")] = None,
        meta: Annotated[
            dict[str, str] | None,
            Field(description='Optional extra signature keys, e.g. {"confidence": "high", "project": "atlas"}.'),
        ] = None,
    ) -> dict[str, Any]:
        """Save one memory to the user's long-term memory (appended to CURRENT.md with a new seq).

        Use it for durable facts worth recalling in a later session: preferences, facts about people,
        decisions, plans and dates. Do not store secrets or passing chit-chat. The entry is searchable at
        once; memd later files it into a topic. Returns the new entry's seq and where it was written."""
        reserved = sorted(set(meta or {}) & {"seq", "time", "source", "src"})
        if reserved:
            raise ToolError(
                f"meta cannot set {', '.join(reserved)}: seq is assigned by memd; use the time, "
                "source and src arguments for the others"
            )
        added = memory.add(text, time=time, source=source, src=src, meta=tuple((meta or {}).items()))
        return {"added": [a.to_json() for a in added]}

    @tool
    def memory_search(
        query: Annotated[str, Field(description="Keywords, e.g. 'kyoto trip dates'. Plain words work best.")],
        limit: Annotated[int, Field(ge=1, le=50, description="Most results to return.")] = 10,
        since: Annotated[str | None, Field(description="Only entries from this ISO date or time on.")] = None,
        until: Annotated[str | None, Field(description="Only entries up to this ISO date (inclusive) or time.")] = None,
        source: Annotated[str | None, Field(description="Only entries with this source: user, ai, hand...")] = None,
        as_of: Annotated[
            str | None,
            Field(
                description="Search the memory as it was then: an ISO date "
                "(through that day), a time or a git commit. Default: now."
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Search the user's long-term memory by keywords (BM25 ranking over entries and topic sections).

        Each result has `path`, `line`, `seq`, `time`, `source` and a `snippet`; cite results as path:line
        (with `as_of`, each has a `cite` path:line@commit). Use memory_read to see more lines around a result.
        Returns {"results": [...]}, best first, and a `note` while the vectors of a large import are
        still being built (ranked by words and the vectors built so far)."""
        # A long first build never blocks a tool call: each call embeds a slice (the daemon, when
        # running, builds the rest; the note says how far it is).
        found = memory.search(
            query, limit=limit, since=since, until=until, source=source, as_of=as_of, embed_seconds=SEARCH_EMBED_SECONDS
        )
        return found.to_json()

    @tool
    def memory_grep(
        pattern: Annotated[str, Field(description="A regular expression, e.g. 'oat ?milk' or 'seq=4[0-9]'.")],
        doc: Annotated[
            str | None,
            Field(
                description="Only this document: a topic id from memory_list, a path like topics/travel.md, or CURRENT."
            ),
        ] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most matching lines to return.")] = 30,
        context: Annotated[int, Field(ge=0, le=20, description="Lines of context around each match.")] = 3,
        case_sensitive: Annotated[bool, Field(description="Match case exactly (default: ignore case).")] = False,
    ) -> dict[str, Any]:
        """Find exact words or a regular expression in the memory's Markdown files, with context lines.

        Better than memory_search for names, numbers and exact phrases. Each match has `path`, `line`, `text`
        and the lines `before` and `after`; `truncated` is true when more matches exist than `limit`."""
        return memory.grep(pattern, doc=doc, limit=limit, context=context, ignore_case=not case_sensitive).to_json()

    @tool
    def memory_read(
        doc: Annotated[
            str,
            Field(
                description="A topic id from memory_list (e.g. 'travel'), a path "
                "(topics/travel.md) or CURRENT for the recent-entries buffer."
            ),
        ],
        start: Annotated[int, Field(ge=1, description="First line to return (1-based).")] = 1,
        end: Annotated[
            int | None,
            Field(ge=1, description="Last line to return (inclusive); default: as far as the 100-line limit allows."),
        ] = None,
    ) -> dict[str, Any]:
        """Read lines of one memory document, at most 100 per call.

        Use it to see a citation in context (for a result at topics/travel.md:12, read doc 'topics/travel.md'
        with start 5 and end 20). `next` gives the line to continue from when the document is longer."""
        return memory.read(doc, start, end).to_json()

    @tool
    def memory_list(
        offset: Annotated[int, Field(ge=0, description="Skip this many documents (for paging).")] = 0,
        limit: Annotated[int, Field(ge=1, le=200, description="Most documents to return.")] = 50,
    ) -> dict[str, Any]:
        """List the memory's documents: CURRENT (recent, unfiled entries) then each topic with id and summary.

        Use it to see what the memory covers, then memory_read a topic by its id. `total` counts all
        documents; page with offset."""
        return memory.list(offset=offset, limit=limit).to_json()

    @tool
    def memory_ask(
        question: Annotated[str, Field(description="A question in plain words, e.g. 'How does Dana take her coffee?'")],
        budget: Annotated[int, Field(ge=50, le=8000, description="Most tokens of evidence to return.")] = 1500,
    ) -> dict[str, Any]:
        """Answer a question from the user's long-term memory, with the evidence and citations.

        With a language model configured, the model searches the memory with the memory tools and answers
        from what it found, citing `path:line`; the answer is checked against that evidence. Otherwise, or
        when the model cannot be used (then `fallback` says why), `answer` quotes the best-matching entries
        (including recent ones not yet filed into topics), newest first. Returns `answer`, `engine` (who
        wrote the answer), `fallback`, `found`, `support` and `evidence` blocks. Check the evidence before
        relying on the answer; newer entries supersede older."""
        return memory.ask(question, budget=budget).to_json()

    @tool
    def memory_history(
        target: Annotated[
            str,
            Field(
                description="A seq from a result (e.g. '12' or '12+41'), or words that pick the best-matching entry."
            ),
        ],
    ) -> dict[str, Any]:
        """How one memory changed over time, from the vault's git history: when it was added, filed, merged,
        moved, edited (by memd or by hand), superseded (with the newer entry) or removed.

        Check it before relying on a fact that may have changed. Returns `steps` (each with `kind`, `date`,
        `commit`, `author`, `entry` as it read then, and `superseded_by` when replaced) and `now` (where the
        entry is today; empty when it was superseded or removed)."""
        return memory.history(target).to_json()

    @tool
    def memory_status() -> dict[str, Any]:
        """Show the state of the memory: entries and tokens waiting in the CURRENT buffer against the
        consolidation thresholds, the number of topics, the next seq and the last consolidation."""
        return memory.status().to_json()

    server.add_tool(memory_add, annotations=APPEND_ONLY, title="Add a memory")
    server.add_tool(memory_search, annotations=READ_ONLY, title="Search memory")
    server.add_tool(memory_grep, annotations=READ_ONLY, title="Grep memory")
    server.add_tool(memory_read, annotations=READ_ONLY, title="Read memory lines")
    server.add_tool(memory_list, annotations=READ_ONLY, title="List memory documents")
    server.add_tool(memory_ask, annotations=READ_ONLY, title="Ask memory")
    server.add_tool(memory_history, annotations=READ_ONLY, title="Memory history")
    server.add_tool(memory_status, annotations=READ_ONLY, title="Memory status")
    return server


def serve(memory: Memory) -> None:
    """Serve ``memory`` over stdin/stdout until the client disconnects."""
    sys.stdout.flush()
    build_server(memory).run("stdio")


@asynccontextmanager
async def _stdout_to_stderr(_: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
    # Python's own stdout object buffers: text printed into it while serving
    # would reach the wire when it is flushed after the SDK restores fd 1.
    previous = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield {}
    finally:
        sys.stdout = previous
