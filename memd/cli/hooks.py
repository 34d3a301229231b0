"""``memd hooks`` and ``memd hook``: connecting Claude Code, other agents and git to the vault."""

from __future__ import annotations

from pathlib import Path

import click

from memd.cli import emit_json, get_vault


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
@click.option(
    "--settings",
    "settings_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="claude: the settings file to change (default: ~/.claude/settings.json).",
)
@click.option(
    "--project",
    type=click.Path(file_okay=False, path_type=Path),
    help="claude: install for one project, in PROJECT/.claude/settings.json.",
)
@click.option(
    "--on",
    "events",
    multiple=True,
    type=click.Choice(["session-end", "stop"]),
    help="claude: when to capture (repeatable; default: session-end). `stop` also captures "
    "after every reply, so sessions that are never closed still arrive.",
)
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
    from memd.app.hooks import install_claude, install_git

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
    from memd.app.hooks import (
        AGENTS_SNIPPET,
        claude_hook_command,
        claude_settings_snippet,
        mcp_config,
        render_pre_commit,
    )

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
    """Commands that hooks run; you do not need to type them.

    \b
    Example (what `memd hooks install claude` puts in Claude Code's settings):
        memd --vault ~/memory hook claude-capture
    """


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

    from memd.app import Memory
    from memd.app.hooks import capture_claude

    try:
        vault = Memory.open((ctx.find_root().obj or {}).get("vault"), recover=False).vault
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
