"""``memd mcp``: the memory tools served to agents over MCP (stdio)."""

from __future__ import annotations

import click

from memd.cli import get_memory
from memd.cli.root import Failed


@click.command()
@click.pass_context
def mcp(ctx: click.Context) -> None:
    """Serve the vault's memory tools to an agent over MCP (stdio).

    Tools: memory_add, memory_search, memory_grep, memory_read, memory_list,
    memory_ask, memory_get, memory_update, memory_forget, memory_history,
    memory_status; each topic as a resource (memd://topics/<id>); the prompt
    memory_guide. Stdout carries only the protocol; messages go to stderr.
    Register it with your agent rather than running it by hand.

    \b
    Example:
        claude mcp add memd -- memd --vault ~/memory mcp
    """
    memory = get_memory(ctx)
    try:
        from memd.mcp import serve
    except ImportError as err:
        missing = f"the MCP server needs the mcp package ({err.name} is missing): pip install mcp"
        raise Failed(missing) from None
    serve(memory)
