"""Connecting memd to other tools: mcp, hooks, hook, config."""

from __future__ import annotations

import click

from . import get_vault


@click.command()
@click.pass_context
def mcp(ctx: click.Context) -> None:
    """Serve the vault's memory tools to an agent over MCP (stdio).

    Tools: memory_add, memory_search, memory_grep, memory_read, memory_list,
    memory_ask, memory_status. Stdout carries only the protocol; messages go
    to stderr. Register it with your agent rather than running it by hand.

    \b
    Example:
        claude mcp add memd -- memd --vault ~/memory mcp
    """
    vault = get_vault(ctx)
    try:
        from ..mcp_server import serve
    except ImportError as err:
        raise click.ClickException(f"the MCP server needs the mcp package ({err.name} is missing): pip install mcp") from None
    serve(vault)


@click.group()
def hooks() -> None:
    """Install memd's hooks for Claude Code and git."""


@click.group()
def hook() -> None:
    """Commands that hooks run (not meant to be typed)."""


@click.group()
def config() -> None:
    """Show and change this vault's settings."""
