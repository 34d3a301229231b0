"""``memd config``: every setting, its value and where it came from; change one line."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from memd.cli import emit_json, get_vault, json_option


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
    from memd.core.config_edit import Setting, effective_settings

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
    from memd.core.settings import spec_for

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

    from memd.core.config_edit import redact, set_setting
    from memd.core.settings import spec_for
    from memd.core.tomledit import find_key, toml_value

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
