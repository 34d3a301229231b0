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
from datetime import timedelta
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from . import __version__
from .errors import MemdError
from .vault import Vault

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


def build_server(vault: Vault) -> MCPServer[Any]:
    """An MCP server exposing the memory tools of ``vault``."""
    turn = threading.Lock()

    def tool(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
            with turn:
                try:
                    _recover(vault)
                    return fn(*args, **kwargs)
                except MemdError as err:
                    # The message is written for a person or a model to act on.
                    raise ToolError(str(err)) from None

        return call  # type: ignore[return-value]

    server: MCPServer[Any] = MCPServer(
        "memd",
        title="memd memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        lifespan=_stdout_to_stderr,
    )

    @tool
    def memory_add(
        text: Annotated[str, Field(description="The memory: one self-contained statement, e.g. "
                                   "'Dana takes her coffee with oat milk.' Extra lines stay in the same entry.")],
        time: Annotated[str | None, Field(description="When it happened or was said, ISO 8601 "
                                          "(2026-11-20 or 2026-11-20T09:12Z). Default: now.")] = None,
        source: Annotated[str, Field(description="Who it comes from: 'user' for the user's own words, "
                                     "'ai' for your own conclusions, or 'import:NAME'.")] = "ai",
        src: Annotated[str | None, Field(description="Optional provenance, e.g. a file path#anchor or URL.")] = None,
    ) -> dict[str, Any]:
        """Save one memory to the user's long-term memory (appended to CURRENT.md with a new seq).

        Use it for durable facts worth recalling in a later session: preferences, facts about people,
        decisions, plans and dates. Do not store secrets or passing chit-chat. The entry is searchable at
        once; memd later files it into a topic. Returns the new entry's seq and where it was written."""
        from .buffer import NewEntry, append_entries

        added = append_entries(vault, [NewEntry(text, time, source, src)])
        return {
            "added": [
                {"seq": a.seq, "path": "CURRENT.md", "line": a.line, "signature": a.signature, "text": a.text}
                for a in added
            ]
        }

    @tool
    def memory_search(
        query: Annotated[str, Field(description="Keywords, e.g. 'kyoto trip dates'. Plain words work best.")],
        limit: Annotated[int, Field(ge=1, le=50, description="Most results to return.")] = 10,
        since: Annotated[str | None, Field(description="Only entries from this ISO date or time on.")] = None,
        until: Annotated[str | None, Field(description="Only entries up to this ISO date (inclusive) or time.")] = None,
        source: Annotated[str | None, Field(description="Only entries with this source: user, ai, hand...")] = None,
    ) -> dict[str, Any]:
        """Search the user's long-term memory by keywords (BM25 ranking over entries and topic sections).

        Each result has `path`, `line`, `seq`, `time`, `source` and a `snippet`; cite results as path:line.
        Use memory_read to see more lines around a result. Returns {"results": [...]}, best first."""
        from .index import Filters
        from .tools import search

        filters = Filters(since=_bound(since, end_of_day=False), until=_bound(until, end_of_day=True), source=source)
        return {"query": query, "results": search(vault, query, limit, filters)}

    @tool
    def memory_grep(
        pattern: Annotated[str, Field(description="A regular expression, e.g. 'oat ?milk' or 'seq=4[0-9]'.")],
        doc: Annotated[str | None, Field(description="Only this document: a topic id from memory_list, "
                                         "a path like topics/travel.md, or CURRENT.")] = None,
        limit: Annotated[int, Field(ge=1, le=200, description="Most matching lines to return.")] = 30,
        context: Annotated[int, Field(ge=0, le=20, description="Lines of context around each match.")] = 3,
        case_sensitive: Annotated[bool, Field(description="Match case exactly (default: ignore case).")] = False,
    ) -> dict[str, Any]:
        """Find exact words or a regular expression in the memory's Markdown files, with context lines.

        Better than memory_search for names, numbers and exact phrases. Each match has `path`, `line`, `text`
        and the lines `before` and `after`; `truncated` is true when more matches exist than `limit`."""
        from .tools import grep, grep_doc

        if doc is not None:
            return grep_doc(vault, doc, pattern, limit, context, ignore_case=not case_sensitive)
        return grep(vault, pattern, limit, context, ignore_case=not case_sensitive)

    @tool
    def memory_read(
        doc: Annotated[str, Field(description="A topic id from memory_list (e.g. 'travel'), a path "
                                  "(topics/travel.md) or CURRENT for the recent-entries buffer.")],
        start: Annotated[int, Field(ge=1, description="First line to return (1-based).")] = 1,
        end: Annotated[int | None, Field(ge=1, description="Last line to return (inclusive); "
                                         "default: as far as the 100-line limit allows.")] = None,
    ) -> dict[str, Any]:
        """Read lines of one memory document, at most 100 per call.

        Use it to see a citation in context (for a result at topics/travel.md:12, read doc 'topics/travel.md'
        with start 5 and end 20). `next` gives the line to continue from when the document is longer."""
        from .tools import read_lines

        return read_lines(vault, doc, start, end)

    @tool
    def memory_list(
        offset: Annotated[int, Field(ge=0, description="Skip this many documents (for paging).")] = 0,
        limit: Annotated[int, Field(ge=1, le=200, description="Most documents to return.")] = 50,
    ) -> dict[str, Any]:
        """List the memory's documents: CURRENT (recent, unfiled entries) then each topic with id and summary.

        Use it to see what the memory covers, then memory_read a topic by its id. `total` counts all
        documents; page with offset."""
        from .tools import list_docs

        return list_docs(vault, offset, limit)

    @tool
    def memory_ask(
        question: Annotated[str, Field(description="A question in plain words, e.g. "
                                       "'How does Dana take her coffee?'")],
        budget: Annotated[int, Field(ge=50, le=8000, description="Most tokens of evidence to return.")] = 1500,
    ) -> dict[str, Any]:
        """Answer a question from the user's long-term memory, with the evidence and citations.

        With a language model configured, the model searches the memory with the memory tools and answers
        from what it found, citing `path:line`; the answer is checked against that evidence. Otherwise, or
        when the model cannot be used (then `fallback` says why), `answer` quotes the best-matching entries
        (including recent ones not yet filed into topics), newest first. Returns `answer`, `engine` (who
        wrote the answer), `fallback`, `found`, `support` and `evidence` blocks. Check the evidence before
        relying on the answer; newer entries supersede older."""
        from .engine import get_engine

        return get_engine(vault).ask(vault, question, budget=budget).to_json()

    @tool
    def memory_status() -> dict[str, Any]:
        """Show the state of the memory: entries and tokens waiting in the CURRENT buffer against the
        consolidation thresholds, the number of topics, the next seq and the last consolidation."""
        return status(vault)

    server.add_tool(memory_add, annotations=APPEND_ONLY, title="Add a memory")
    server.add_tool(memory_search, annotations=READ_ONLY, title="Search memory")
    server.add_tool(memory_grep, annotations=READ_ONLY, title="Grep memory")
    server.add_tool(memory_read, annotations=READ_ONLY, title="Read memory lines")
    server.add_tool(memory_list, annotations=READ_ONLY, title="List memory documents")
    server.add_tool(memory_ask, annotations=READ_ONLY, title="Ask memory")
    server.add_tool(memory_status, annotations=READ_ONLY, title="Memory status")
    return server


def status(vault: Vault) -> dict[str, Any]:
    """The same facts `memd status --json` prints."""
    from .buffer import buffer_status
    from .state import read_state
    from .timeutil import format_duration, format_time

    buffer = buffer_status(vault)
    state, problem = read_state(vault)
    age = buffer.age_seconds
    return {
        "vault": str(vault.root),
        "engine": vault.config.engine,
        "buffer": {
            "entries": buffer.entries,
            "tokens": buffer.tokens,
            "token_threshold": buffer.token_threshold,
            "age": format_duration(timedelta(seconds=age)) if age is not None else None,
            "age_threshold": format_duration(timedelta(seconds=buffer.age_threshold_seconds)),
            "since": format_time(buffer.since) if buffer.since else None,
            "due": buffer.due_reason,
        },
        "topics": len(vault.topic_files()),
        "next_seq": state.next_seq,
        "consolidations": state.epoch,
        "last_consolidation": state.last_consolidation,
        "state_problem": problem,
    }


def serve(vault: Vault) -> None:
    """Serve ``vault`` over stdin/stdout until the client disconnects."""
    _recover(vault)
    sys.stdout.flush()
    build_server(vault).run("stdio")


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


def _recover(vault: Vault) -> None:
    """Finish or undo an interrupted consolidation before reading, as the CLI does."""
    if (vault.meta_dir / "journal" / "pending.json").exists():
        from .consolidate import recover

        note = recover(vault)
        if note:
            log.warning("memd: %s", note)


def _bound(value: str | None, *, end_of_day: bool) -> Any:
    from .timeutil import parse_time

    if value is None:
        return None
    moment = parse_time(value)
    if end_of_day and "T" not in value and " " not in value.strip():
        moment += timedelta(days=1, microseconds=-1)  # a bare date as `until` means through that day
    return moment
