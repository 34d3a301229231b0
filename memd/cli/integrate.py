"""Connecting memd to other tools: mcp, hooks, hook, config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from . import emit_json, get_memory, get_vault, json_option


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
    memory = get_memory(ctx)
    try:
        from ..mcp_server import serve
    except ImportError as err:
        missing = f"the MCP server needs the mcp package ({err.name} is missing): pip install mcp"
        raise click.ClickException(missing) from None
    serve(memory)


@click.group()
def hooks() -> None:
    """Connect memd to Claude Code and git, and show the agent snippet.

    \b
    Examples:
        memd hooks install claude          # capture finished sessions into the inbox
        memd hooks install git             # lint staged vault files before each commit
        memd hooks show agents >> AGENTS.md
    """


@hooks.command(name="install")
@click.argument("target", type=click.Choice(["claude", "git"]))
@click.option("--settings", "settings_path", type=click.Path(dir_okay=False, path_type=Path),
              help="claude: the settings file to change (default: ~/.claude/settings.json).")
@click.option("--project", type=click.Path(file_okay=False, path_type=Path),
              help="claude: install for one project, in PROJECT/.claude/settings.json.")
@click.option("--on", "events", multiple=True, type=click.Choice(["session-end", "stop"]),
              help="claude: when to capture (repeatable; default: session-end). `stop` also captures "
                   "after every reply, so sessions that are never closed still arrive.")
@click.option("--chain", is_flag=True, help="git: keep an existing pre-commit hook and run it before memd's.")
@click.option("--dry-run", is_flag=True, help="Show what would change; write nothing.")
@click.pass_context
def hooks_install(
    ctx: click.Context,
    target: str,
    settings_path: Path | None,
    project: Path | None,
    events: tuple[str, ...],
    chain: bool,
    dry_run: bool,
) -> None:
    """Install memd's hook for TARGET (claude or git); running it again is safe.

    claude: merges a SessionEnd hook into Claude Code's settings that copies
    each finished session's transcript into this vault's inbox/.
    git: writes the pre-commit hook of the vault's repository, which runs
    `memd lint` on the staged vault files.

    \b
    Examples:
        memd --vault ~/memory hooks install claude
        memd hooks install claude --project ~/code/app --on session-end --on stop
        memd hooks install git --chain
    """
    from ..hooks import install_claude, install_git

    vault = get_vault(ctx)
    if target == "claude":
        if settings_path and project:
            raise click.UsageError("give --settings or --project, not both")
        path = settings_path or (project / ".claude" / "settings.json" if project else _claude_home() / "settings.json")
        names = {"session-end": "SessionEnd", "stop": "Stop"}
        change = install_claude(vault, path, tuple(names[e] for e in events) or ("SessionEnd",), dry_run=dry_run)
    else:
        if settings_path or project or events:
            raise click.UsageError("--settings, --project and --on are for `install claude`")
        change = install_git(vault, chain=chain, dry_run=dry_run)
    verb = {"created": "created", "updated": "changed", "unchanged": "already up to date:"}[change.action]
    click.echo(f"{'would have ' + verb if dry_run and change.details else verb} {change.path}")
    for line in change.details:
        click.echo(f"  {line}")


def _claude_home() -> Path:
    import os

    return Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


@hooks.command(name="show")
@click.argument("what", type=click.Choice(["claude", "git", "agents", "mcp"]))
@click.pass_context
def hooks_show(ctx: click.Context, what: str) -> None:
    """Print a snippet to install by hand: Claude Code settings (claude), the
    git pre-commit script (git), an AGENTS.md/CLAUDE.md section (agents), or
    a project .mcp.json entry (mcp).

    \b
    Examples:
        memd hooks show agents >> CLAUDE.md
        memd --vault ~/memory hooks show claude
    """
    from ..hooks import AGENTS_SNIPPET, claude_hook_command, claude_settings_snippet, mcp_config, render_pre_commit

    if what == "agents":
        click.echo(AGENTS_SNIPPET, nl=False)
        return
    vault = get_vault(ctx)
    if what == "git":
        click.echo(render_pre_commit(), nl=False)
    elif what == "claude":
        emit_json(claude_settings_snippet(claude_hook_command(vault)))
    else:
        emit_json(mcp_config(str(vault.root)))


@click.group()
def hook() -> None:
    """Commands that hooks run; you do not need to type them."""


@hook.command(name="claude-capture")
@click.pass_context
def claude_capture(ctx: click.Context) -> None:
    """Copy a Claude Code session's transcript into the vault's inbox/.

    Reads the hook's JSON (session_id, transcript_path) on standard input and
    writes inbox/claude-<session_id>.jsonl. Always exits 0, so a problem here
    never disturbs the agent; it is reported on stderr.

    \b
    Example (what the installed hook runs):
        echo '{"session_id": "abc", "transcript_path": "/tmp/abc.jsonl"}' \\
            | memd --vault ~/memory hook claude-capture
    """
    import json
    import sys

    from ..hooks import capture_claude
    from ..vault import find_vault

    try:
        vault = find_vault((ctx.find_root().obj or {}).get("vault"))
        try:
            payload = json.loads(sys.stdin.read() or "{}")
        except json.JSONDecodeError:
            payload = None
        if not isinstance(payload, dict):
            raise ValueError("the hook input on stdin is not a JSON object")
        path, changed = capture_claude(vault, payload)
        click.echo(f"memd: {'captured' if changed else 'already captured'} {path}", err=True)
    except Exception as err:  # never fail the agent's session over a memory capture
        click.echo(f"memd: could not capture the Claude Code transcript: {err}", err=True)


@click.group()
def config() -> None:
    """Show and change settings, and where each one comes from.

    Sources, strongest first: the --vault flag (which vault), environment
    variables, the vault's .memd/config.toml, built-in defaults. Secrets
    are shown as <redacted>.

    \b
    Examples:
        memd config list
        memd config get llm.model
        memd config set llm.base_url http://127.0.0.1:11434/v1
    """


def _settings(ctx: click.Context) -> list[Any]:
    from ..config import Setting, effective_settings

    vault = get_vault(ctx)
    root = ctx.find_root()
    given = root.get_parameter_source("vault")
    if given is ParameterSource.COMMANDLINE:
        where = ("flag", "--vault")
    elif given is ParameterSource.ENVIRONMENT:
        where = ("env", "MEMD_VAULT")
    else:
        where = ("default", "the current folder or a parent holding .memd/")
    found = Setting("vault", str(vault.root), where[0], where[1], help="the vault these settings belong to")
    return [found, *effective_settings(vault.config_path, shown_as=vault.rel(vault.config_path))]


def _origin(setting: Any) -> str:
    return f"{setting.source} {setting.origin}".strip()


@config.command(name="list")
@json_option
@click.pass_context
def config_list(ctx: click.Context, as_json: bool) -> None:
    """Show every setting's effective value and its source.

    \b
    Example:
        memd config list
        MEMD_MODEL=llama3.2 memd config list --json
    """
    settings = _settings(ctx)
    if as_json:
        emit_json([s.to_json() for s in settings])
        return
    keys = max(len(s.key) for s in settings)
    values = min(40, max(len(_display(s.value)) for s in settings))
    for s in settings:
        note = "" if s.known else "  (not a memd setting)"
        click.echo(f"{s.key:<{keys}}  {_display(s.value):<{values}}  {_origin(s)}{note}".rstrip())


@config.command(name="get")
@click.argument("key")
@json_option
@click.pass_context
def config_get(ctx: click.Context, key: str, as_json: bool) -> None:
    """Print the effective value of KEY (nothing when it is unset).

    \b
    Examples:
        memd config get consolidate.buffer_tokens
        memd config get llm.model --json
    """
    from ..config import spec_for

    for setting in _settings(ctx):
        if setting.key == key:
            if as_json:
                emit_json(setting.to_json())
            elif setting.value is not None:
                click.echo(_display(setting.value))
            return
    spec_for(key)  # raises with the list of known keys


@config.command(name="set", context_settings={"ignore_unknown_options": True})
@click.argument("key")
@click.argument("value")
@click.pass_context
def config_set(ctx: click.Context, key: str, value: str) -> None:
    """Write KEY = VALUE into the vault's .memd/config.toml.

    Only that line changes (comments and other settings stay); the file is
    checked by loading it before it replaces the old one.

    \b
    Examples:
        memd config set consolidate.buffer_tokens 3000
        memd config set llm.model qwen2.5:7b-instruct
    """
    import os

    from ..config import redact, set_setting, spec_for
    from ..tomledit import find_key, toml_value

    vault = get_vault(ctx)
    with vault.locked():
        before, written = set_setting(vault.config_path, key, value)
    spec = spec_for(key)
    where = find_key(vault.config_path.read_text(encoding="utf-8"), spec.table, spec.name)
    line = f":{where.line}" if where else ""
    before, written = redact(key, before), redact(key, written)
    was = "unset" if before is None else toml_value(before) if isinstance(before, str | int) else str(before)
    click.echo(f"{key} = {toml_value(written)}  ({vault.rel(vault.config_path)}{line}, was {was})")
    if spec.env and os.environ.get(spec.env):
        click.echo(f"note: ${spec.env} is set in this environment and overrides the file", err=True)


def _display(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
