"""``memd config``: every setting, its value and where it came from; change one line."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from memd.cli import emit_json, get_memory, json_option


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


def _chosen(ctx: click.Context) -> tuple[str, str]:
    """How this invocation's vault was chosen: (source, origin)."""
    given = ctx.find_root().get_parameter_source("vault")
    if given is ParameterSource.COMMANDLINE:
        return ("flag", "--vault")
    if given is ParameterSource.ENVIRONMENT:
        return ("env", "MEMD_VAULT")
    return ("default", "the current folder or a parent holding .memd/")


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
    settings = get_memory(ctx).settings(_chosen(ctx))
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
    setting = get_memory(ctx).setting(key, _chosen(ctx))
    if as_json:
        emit_json(setting.to_json())
    elif setting.value is not None:
        click.echo(_display(setting.value))


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
    changed = get_memory(ctx).set_setting(key, value)
    was = "unset" if changed.before is None else changed.before
    click.echo(f"{key} = {changed.after}  ({changed.where}, was {was})")
    if changed.overridden_by:
        click.echo(f"note: ${changed.overridden_by} is set in this environment and overrides the file", err=True)


def _display(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)
