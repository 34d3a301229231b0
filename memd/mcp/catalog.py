"""The one list of the MCP tools: each tool's name, title, effect and summary.

``server.py`` registers exactly these (a method of ``Tools`` missing here, or
one named here that ``Tools`` lacks, stops the server from being built),
``memd mcp --help`` lists them and the tests read them. This module imports
no SDK, so the CLI's help can read it without loading the MCP package.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Effect = Literal["reads", "appends", "replaces"]


@dataclass(frozen=True)
class Tool:
    name: str
    title: str
    # "reads" changes nothing; "appends" adds and never destroys; "replaces"
    # retires or removes an entry (the old one stays in git history).
    effect: Effect


TOOLS: dict[str, Tool] = {
    tool.name: tool
    for tool in (
        Tool("memory_add", "Add a memory", "appends"),
        Tool("memory_search", "Search memory", "reads"),
        Tool("memory_grep", "Grep memory", "reads"),
        Tool("memory_read", "Read memory lines", "reads"),
        Tool("memory_list", "List memory documents", "reads"),
        Tool("memory_ask", "Ask memory", "reads"),
        Tool("memory_get", "Get one memory by seq", "reads"),
        Tool("memory_update", "Update a memory", "replaces"),
        Tool("memory_forget", "Forget a memory", "replaces"),
        Tool("memory_history", "Memory history", "reads"),
        Tool("memory_status", "Memory status", "reads"),
    )
}

WRITERS = frozenset(name for name, tool in TOOLS.items() if tool.effect != "reads")


def tool_list() -> str:
    """The tools' names, comma-separated, for help text."""
    return ", ".join(TOOLS)
