"""The topics as MCP resources, and the prompt that teaches an agent the memory.

``resources/list`` lists every topic (``memd://topics/<id>``, its summary as
the description), a page at a time, as the vault holds them now; reading one
returns its Markdown as the file reads. The prompt is the agent snippet that
``memd hooks show agents`` prints, so an agent learns the same rules
whichever way it is connected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import Resource

from memd.app import Memory
from memd.app.hooks import AGENTS_SNIPPET
from memd.core.errors import MemdError, NotFound
from memd.core.redact import redact

TOPICS = "memd://topics/"
PAGE = 100  # topics per resources/list page

# cursor (None: the first page) -> the page's resources and the next cursor (None: the last page)
Pages = Callable[[str | None], tuple[list[Resource], str | None]]
Guard = Callable[..., Any]

PROMPT = f"""\
{AGENTS_SNIPPET}
Over MCP: each topic of the memory is a resource (`{TOPICS}<id>`, its summary in the
listing), for reading a whole subject at once.
"""


def topic_uri(topic_id: str) -> str:
    return TOPICS + quote(topic_id, safe="/")


def _resource_error(err: MemdError) -> Exception:
    message = err.for_door("mcp")
    return ResourceNotFoundError(message) if isinstance(err, NotFound) else ResourceError(message)


def add_resources(server: MCPServer[Any], memory: Memory, guarded: Guard) -> Pages:
    """Register the topic resources and the prompt on ``server``; returns the
    function that lists a page of topics (the server calls it per request)."""

    def pages(cursor: str | None) -> tuple[list[Resource], str | None]:
        if cursor is None:
            offset = 0
        elif cursor.isascii() and cursor.isdigit():  # ("²" is a digit to str.isdigit, not to int)
            offset = int(cursor)
        else:
            raise ResourceError(f"invalid cursor {cursor[:40]!r}: pass back the nextCursor of the last page")
        found = memory.topics(offset=offset, limit=PAGE).to_json()
        listed = [
            Resource(
                uri=topic_uri(topic["id"]),
                name=topic["id"],
                title=topic["id"],
                description=redact(topic["summary"]).text,
                mime_type="text/markdown",
            )
            for topic in found["topics"]
        ]
        following = offset + PAGE
        return listed, str(following) if following < found["total"] else None

    def read_topic(topic: str) -> str:
        return memory.topic(topic).markdown

    server.resource(
        TOPICS + "{+topic}",
        name="topic",
        title="Memory topic",
        description="A topic of the user's long-term memory, as its Markdown file reads: frontmatter "
        "(id, summary, update_log) and sections of entries, each signed <seq=...>.",
        mime_type="text/markdown",
    )(guarded(read_topic, _resource_error))

    def memory_guide() -> str:
        """When to ask the memory before answering, when to add to it, and how to fix what it holds."""
        return PROMPT

    server.prompt(name="memory_guide", title="Using the long-term memory")(memory_guide)
    listing: Pages = guarded(pages, _resource_error)
    return listing
