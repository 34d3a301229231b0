"""``memd mcp``: the vault's memory served to agents over MCP (stdio).

``server.py`` builds the server and guards every call; ``tools.py`` holds the
tools, one method each, over ``memd.Memory``; ``resources.py`` the topics as
resources and the prompt that teaches an agent to use the memory. Importing
this package loads the MCP SDK, so only ``memd mcp`` does.
"""

from __future__ import annotations

from memd.mcp.server import build_server, serve

__all__ = ["build_server", "serve"]
