"""MkDocs hooks: pages made at build time from the one source each has.

- ``architecture.md`` is ARCHITECTURE.md at the repository root, as it is.
- ``cli.md``'s examples: click help keeps an example's lines by indenting them,
  which Markdown would join into one paragraph; they are shown as code.
- ``mcp.md`` lists the tools, prompt and resources the MCP server offers, read
  from the server itself (``memd.mcp.server.build_server``), so the page names
  every tool an agent sees, with the descriptions and arguments it reads. It is
  kept in the repository (the README links to it) and written by
  ``python docs/hooks.py``; a build whose copy is out of date warns, which
  fails ``mkdocs build --strict``, and so does tests/test_docs.py.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MCP_PAGE = ROOT / "docs" / "mcp.md"
log = logging.getLogger("mkdocs.hooks.memd")

MCP_INTRO = """\
# MCP tools

`memd mcp` runs memd's MCP server on stdio. Connect it to Claude Code with
`claude mcp add memd -- memd --vault ~/memory mcp`, or write a project's `.mcp.json` with
`memd --vault ~/memory hooks show mcp > .mcp.json`. Every tool calls the same `memd.Memory` verb
as the matching CLI command and returns its JSON; a mistake comes back as one sentence the agent
can act on. Every result is redacted at the server's door, as described in [Secrets](secrets.md).

This page is written from the server's own tool list by `python docs/hooks.py`.

## Keeping the memory in order

- `memory_get` (a seq): the one entry holding it: its text, signature fields (`time`, `source`,
  `src`, other keys), `path:line`, topic and headings, and `replaced_by` (an update waiting in
  `CURRENT.md`).
- `memory_update` (a seq, the fact as it is now, a reason): appends a new entry, acknowledged like
  `memory_add`, whose signature says what it replaces and why
  (`<seq=57,…,supersedes=12,reason=she%20moved%20in%20May>`; spaces are written `%20`). The next
  consolidation takes entry 12 out, files the new one where it was, and records
  `seq 57 supersedes seq 12 (she moved in May)` in the topic's `update_log`, so `memd verify`
  accounts for seq 12 and `memd history 12` shows the change. Refused when the seq is not live,
  sits in a note of your own (memd never rewrites those), or already has an update waiting.
  (`memd add --meta supersedes=12` gives a CLI entry the same mark.)
- `memory_forget` (a seq): exactly `memd forget`: the entry is removed and the removal committed
  with a `Memd-Removed` trailer (its words stay in git history).
- A line the server cannot read gets JSON-RPC's answer, not silence: not JSON, `-32700 Parse
  error` (id null); JSON that is no request, `-32600 Invalid Request` (with its id when it has one).
  The server reads on; a blank line asks nothing.

## What the agent is told

The server's instructions, sent to the client when it connects:

```text
{instructions}
```

## Tools

| tool | title | what it does to the vault |
| --- | --- | --- |
{table}
"""

EFFECT = {
    "read": "reads only",
    "append": "appends, never destroys",
    "replace": "replaces or removes an entry; git keeps the old one",
}


def _effect(annotations: Any) -> str:
    if annotations is None:
        return ""
    if annotations.read_only_hint:
        return EFFECT["read"]
    if annotations.destructive_hint:
        return EFFECT["replace"]
    return EFFECT["append"]


def _type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        kinds = [_type(option) for option in schema["anyOf"] if option.get("type") != "null"]
        return " or ".join(kinds)
    kind = schema.get("type", "any")
    if kind == "array" and "items" in schema:
        return f"list of {_type(schema['items'])}"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return f"object of {_type(schema['additionalProperties'])}"
    return str(kind)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(value: Any) -> str:
    return "none" if value is None else f"`{value!r}`" if not isinstance(value, bool) else f"`{str(value).lower()}`"


def _tool_section(tool: Any) -> str:
    lines = [f"### {tool.name}", ""]
    if tool.title:
        lines += [f"*{tool.title}* ({_effect(tool.annotations)})", ""]
    lines += [inspect.cleandoc(tool.description or ""), ""]
    properties = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    if properties:
        lines += ["| argument | type | default | description |", "| --- | --- | --- | --- |"]
        for name, schema in properties.items():
            default = "required" if name in required else _default(schema.get("default"))
            lines.append(f"| `{name}` | {_type(schema)} | {default} | {_cell(schema.get('description', ''))} |")
    else:
        lines.append("No arguments.")
    return "\n".join(lines)


def mcp_page() -> str:
    """The MCP reference page, from the tools, prompt and resources of the server itself."""
    from memd.mcp.resources import PROMPT, TOPICS
    from memd.mcp.server import INSTRUCTIONS, build_server

    # The tool list does not depend on the vault: the server is built around no memory at all.
    server = build_server(object())  # type: ignore[arg-type]
    tools = asyncio.run(server.list_tools())
    prompts = asyncio.run(server.list_prompts())
    table = "\n".join(f"| [`{t.name}`](#{t.name}) | {t.title or ''} | {_effect(t.annotations)} |" for t in tools)
    parts = [MCP_INTRO.format(instructions=INSTRUCTIONS.strip(), table=table)]
    parts += [_tool_section(tool) for tool in tools]
    parts.append("## Prompts")
    for prompt in prompts:
        parts.append(
            f"### {prompt.name}\n\n*{prompt.title}*: {prompt.description} The text of"
            f" `memd hooks show agents`, and a line on the resources:\n\n```text\n{PROMPT.strip()}\n```"
        )
    parts.append(
        "## Resources\n\n"
        f"Every topic is a resource, `{TOPICS}<id>`. `resources/list` lists them with their summaries as\n"
        "descriptions, 100 a page, as the vault holds them now; reading one returns its Markdown as the\n"
        "file reads."
    )
    return "\n\n".join(parts) + "\n"


def architecture_page() -> str:
    return (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "architecture.md", content=architecture_page()))
    if MCP_PAGE.read_text(encoding="utf-8") != mcp_page():
        log.warning("docs/mcp.md differs from the MCP server's tool list: run `python docs/hooks.py`")
    return files


EXAMPLES = re.compile(r"<p>([^\n]*?Examples?\b[^\n]*:)((?:\n {2,}[^\n]*)+)</p>")


def examples_as_code(html: str) -> str:
    """Turn click's indented example lines, joined into a paragraph, back into a code block."""

    def block(match: re.Match[str]) -> str:
        lines = textwrap.dedent(match.group(2).strip("\n"))
        return f'<p>{match.group(1)}</p>\n<pre><code class="language-sh">{lines}\n</code></pre>'

    return EXAMPLES.sub(block, html)


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    return examples_as_code(html) if page.file.src_uri == "cli.md" else html


if __name__ == "__main__":
    MCP_PAGE.write_text(mcp_page(), encoding="utf-8")
    print(f"wrote {MCP_PAGE.relative_to(ROOT)}")
