"""The MCP server: the tools of ``tools.py`` and the resources and prompt of
``resources.py``, each call guarded the same way.

The protocol owns stdout: the SDK points fd 1 at stderr while it serves, and
the lifespan below points ``sys.stdout`` there too, so a stray ``print`` (or
a child process) can never corrupt the stream. Every result is redacted as
the model client redacts what it sends (``core.redact.redact_data``): what
reaches an agent holds no secret typed by hand. Calls run in worker threads;
one lock makes them take turns, because the index and the buffer expect one
reader-writer per process.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

from memd import __version__
from memd.app import Memory
from memd.core.errors import MemdError
from memd.core.heap import Heap
from memd.core.redact import redact_data
from memd.mcp.catalog import TOOLS, Effect
from memd.mcp.resources import Pages, add_resources
from memd.mcp.tools import Tools, seqs_as_numbers

__all__ = ["INSTRUCTIONS", "TOOLS", "build_server", "serve"]

log = logging.getLogger("memd.mcp")

INSTRUCTIONS = """\
memd is this user's long-term memory: a vault of Markdown notes that persists across sessions.
- Before answering anything that may depend on the user's past (preferences, people, plans,
  decisions, project history), call memory_ask or memory_search, and cite what you use.
- When the user tells you something worth remembering later (a preference, a fact about them,
  a decision, a date), call memory_add with one self-contained sentence.
- When a remembered fact changed or is wrong, call memory_update with its seq, the fact as it is
  now and why; memory_forget removes an entry that should not be kept. memory_get shows one entry.
- memory_grep finds exact words or patterns; memory_read shows the lines around a citation;
  memory_list is the catalog of topics, which are also resources (memd://topics/<id>).
"""

# Closed world: the tools touch only this vault. Adding appends and never destroys;
# an update replaces a fact (the old one stays on record), forget removes one.
HINTS: dict[Effect, ToolAnnotations] = {
    "reads": ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False),
    "appends": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    "replaces": ToolAnnotations(
        read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
    ),
}

F = TypeVar("F", bound=Callable[..., Any])


class _Server(MCPServer[Any]):
    """Argument mistakes come back as one plain sentence per field, not a
    validation library's dump: the reader is a model deciding what to fix.
    Topics come and go, so ``resources/list`` asks the vault each time."""

    pages: Pages | None = None

    async def call_tool(self, name: str, arguments: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        from pydantic import ValidationError

        try:
            return await super().call_tool(name, arguments, *args, **kwargs)
        except ToolError as err:
            cause = err.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"{name}: {_plain(cause)}") from None
            raise

    async def _handle_list_resources(self, ctx: Any, params: Any) -> Any:
        # The SDK lists only resources registered up front, in one page; the
        # topics are listed as they are now, a page per request (the cursor).
        import anyio
        from mcp_types import ListResourcesResult

        if self.pages is None:
            return await super()._handle_list_resources(ctx, params)
        cursor = getattr(params, "cursor", None) if params is not None else None
        resources, following = await anyio.to_thread.run_sync(self.pages, cursor)
        return ListResourcesResult(resources=resources, next_cursor=following)


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
    """An MCP server exposing the memory tools, topics and prompt of ``memory``'s vault."""
    turn = threading.Lock()
    heap = Heap()  # a server keeps its caches for its life: no full collection walks them after each call

    def guarded(fn: F, failure: Callable[[MemdError], Exception] = lambda err: ToolError(err.for_door("mcp"))) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            with turn:
                try:
                    # An agent is told what the vault holds, never a secret typed into it by
                    # hand (the topic's summary, an entry memd_get shows, a reason echoed back).
                    return redact_data(fn(*args, **kwargs))
                except MemdError as err:
                    # The message is written for a person or a model to act on.
                    raise failure(err) from None
                finally:
                    heap.settle()

        return call  # type: ignore[return-value]

    server = _Server(
        "memd",
        title="memd memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        lifespan=_stdout_to_stderr,
    )
    tools = Tools(memory)
    methods = {name for name in vars(Tools) if not name.startswith("_")}
    if methods != set(TOOLS):
        # Never serve a tool unannotated, nor list one that does not exist.
        raise RuntimeError(f"memd/mcp/catalog.py and Tools differ: {sorted(methods ^ set(TOOLS))}")
    for name in (name for name in vars(Tools) if not name.startswith("_")):  # listed in the order they are written
        tool = TOOLS[name]
        server.add_tool(guarded(_numbered(getattr(tools, name))), annotations=HINTS[tool.effect], title=tool.title)
    server.pages = add_resources(server, memory, guarded)
    return server


def _numbered(fn: F) -> F:
    """``fn`` with each seq in its answer a number where it is one seq (``seqs_as_numbers``)."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        return seqs_as_numbers(fn(*args, **kwargs))

    return call  # type: ignore[return-value]


def serve(memory: Memory) -> None:
    """Serve ``memory`` over stdin/stdout until the client disconnects."""
    import anyio

    sys.stdout.flush()
    anyio.run(_serve_stdio, build_server(memory))


async def _serve_stdio(server: MCPServer[Any]) -> None:
    """``MCPServer.run_stdio_async``, with a line that is no request answered
    (``wire.py``). The SDK offers no public hook there, so this drives its
    low-level server as that method does; ``tests/test_mcp.py`` holds it to it."""
    from mcp.server.stdio import stdio_server

    from memd.mcp.wire import Answering

    lowlevel = server._lowlevel_server
    async with stdio_server() as (read_stream, write_stream):
        reading = Answering(read_stream, write_stream)
        await lowlevel.run(reading, write_stream, lowlevel.create_initialization_options())


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
