"""``memd mcp``: the memory tools served to agents over MCP (stdio)."""

from __future__ import annotations

import click

from memd.cli import get_memory
from memd.cli.root import Failed
from memd.mcp.catalog import tool_list

HELP = f"""Serve the vault's memory tools to an agent over MCP (stdio).

Tools: {tool_list()}; each topic as a resource (memd://topics/<id>); the prompt
memory_guide. Stdout carries only the protocol; messages go to stderr.
Register it with your agent rather than running it by hand.

\b
Example:
    claude mcp add memd -- memd --vault ~/memory mcp
"""


@click.command(help=HELP)
@click.pass_context
def mcp(ctx: click.Context) -> None:
    memory = get_memory(ctx)
    try:
        from memd.mcp import serve
    except ImportError as err:
        missing = f"the MCP server needs the mcp package ({err.name} is missing): pip install mcp"
        raise Failed(missing) from None
    serve(memory)
