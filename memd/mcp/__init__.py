"""``memd mcp``: the vault's memory served to agents over MCP (stdio).

``server.py`` builds the server and guards every call; ``tools.py`` holds the
tools, one method each, over ``memd.Memory``; ``resources.py`` the topics as
resources and the prompt that teaches an agent to use the memory;
``catalog.py`` the one list of the tools. The server loads the MCP SDK, so
it is imported when first asked for: ``memd mcp --help`` reads the catalog
without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memd.mcp.server import build_server, serve

__all__ = ["build_server", "serve"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(name)
    from memd.mcp import server

    return getattr(server, name)
