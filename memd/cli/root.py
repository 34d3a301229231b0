"""The click group: every command but a plain ``memd add`` (launch.py) comes through here.

Subcommands live in sibling modules and are imported only when invoked.
Library errors (``MemdError``) and usage errors (a missing argument, an
unknown option) alike become one-line messages on stderr with exit code 1,
never tracebacks or a usage dump. The global options ``--vault`` and
``--json`` work before or after the subcommand.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from memd import __version__

if TYPE_CHECKING:
    from pathlib import Path

    from memd.app import Memory
    from memd.vault.vault import Vault

# command name -> "module:function" (in memd/cli)
COMMANDS: dict[str, str] = {
    "init": "core:init",
    "add": "core:add",
    "show": "core:show",
    "status": "core:status",
    "lint": "core:lint",
    "forget": "core:forget",
    # consolidation and history (memd/cli/history.py)
    "consolidate": "history:consolidate",
    "log": "history:log",
    "verify": "history:verify",
    "stats": "history:stats",
    # the read side (memd/cli/read.py, memd/cli/evaluate.py)
    "search": "read:search",
    "grep": "read:grep",
    "read": "read:read",
    "list": "read:list_docs",
    "ask": "read:ask",
    "reindex": "read:reindex",
    "eval": "evaluate:eval_group",
    # reviewing the history (memd/cli/review.py)
    "history": "review:history",
    "diff": "review:diff",
    "undo": "review:undo",
    # connecting to agents and git, and settings
    "mcp": "mcp:mcp",
    "hooks": "hooks:hooks",
    "hook": "hooks:hook",
    "config": "settings:config",
    "daemon": "daemon:daemon",
    "ingest": "ingest:ingest",
    "sync": "sync:sync",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._module_exists(COMMANDS[name]))

    @staticmethod
    def _module_exists(target: str) -> bool:
        from importlib.util import find_spec

        return find_spec(f"memd.cli.{target.split(':')[0]}") is not None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not self._module_exists(target):
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(f"memd.cli.{module_name}")
        command: click.Command = getattr(module, attr)
        _accept_vault_everywhere(command)
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from difflib import get_close_matches

            close = get_close_matches(name, self.list_commands(ctx), n=2, cutoff=0.6)
            options = " or ".join(f"`memd {c}`" for c in close)
            hint = f" Did you mean {options}?" if close else " See `memd --help` for the commands."
            raise click.UsageError(f"no command {name!r}.{hint}", ctx)
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        from memd.core.errors import MemdError

        try:
            return super().invoke(ctx)
        except MemdError as err:
            if _wants_json(ctx):
                _json_error(err.for_door("cli"), type(err).__name__, 1)
            raise Failed(err.for_door("cli")) from None
        except click.exceptions.NoArgsIsHelpError:
            raise  # `memd config` alone: the help is the answer
        except click.UsageError as err:
            raise _one_line(err, ctx) from None
        except BrokenPipeError:
            sys.stderr.close()  # output piped into `head`: not an error
            return None

    def make_context(
        self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise  # `memd` alone: the help is the answer
        except click.UsageError as err:  # an unknown option before the subcommand: `memd --bogus status`
            raise _one_line(err, None) from None


class Failed(click.ClickException):
    """An error as one line on stderr, ``memd: <problem>`` (every door's errors start so), exit code 1."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"memd: {self.format_message()}", err=True)


class UsageProblem(Failed):
    """A usage error as one line (``memd: <problem>; see `memd add --help```)."""


def _one_line(err: click.UsageError, ctx: click.Context | None) -> UsageProblem:
    where = err.ctx.command_path if err.ctx is not None else "memd"
    message = " ".join(err.format_message().split())
    message = (message[0].lower() + message[1:] if message else "wrong usage").rstrip(".")
    if "--help" not in message:
        message += f"; see `{where} --help`"
    if ctx is not None and _wants_json(ctx):
        _json_error(message, "UsageError", 1)
    return UsageProblem(message)


def _wants_json(ctx: click.Context) -> bool:
    obj = ctx.find_root().obj
    return bool(isinstance(obj, dict) and obj.get("json"))


def _json_error(message: str, kind: str, code: int) -> None:
    from memd.cli.output import error_json

    click.echo(error_json(message, kind, code), err=True)
    sys.exit(code)


def _remember_vault(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
    if value is not None:
        root = ctx.find_root()
        root.obj = {**(root.obj if isinstance(root.obj, dict) else {}), "vault": value}


def _accept_vault_everywhere(command: click.Command) -> None:
    """`memd status --vault X` works as well as `memd --vault X status`."""
    if not any(param.name == "vault_here" for param in command.params):
        command.params.append(
            click.Option(
                ["--vault", "vault_here"],
                type=click.Path(),
                expose_value=False,
                is_eager=True,
                callback=_remember_vault,
                help="Vault folder (same as `memd --vault`).",
            )
        )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _accept_vault_everywhere(sub)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    type=click.Path(file_okay=True, dir_okay=True),
    envvar="MEMD_VAULT",
    help="Vault folder (default: $MEMD_VAULT, else the current folder or a parent holding .memd/).",
)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON (same as the subcommand's --json).")
@click.version_option(__version__, prog_name="memd")
@click.pass_context
def main(ctx: click.Context, vault: str | None, as_json: bool) -> None:
    """memd: long-term memory kept as a vault of plain Markdown files.

    \b
    Example:
        memd init ~/memory && cd ~/memory
        memd add "Takes coffee with oat milk"
        memd status
    """
    # What the caller set (launch.py: the daemon was asked already) is kept.
    ctx.obj = {**(ctx.obj if isinstance(ctx.obj, dict) else {}), "vault": vault, "json": as_json}


def get_memory(ctx: click.Context) -> Memory:
    """The vault for this invocation, opened once (found lazily: `init` needs none)."""
    from memd.app import Memory

    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    root.obj = obj
    if "memory" not in obj:
        obj["memory"] = Memory.open(obj.get("vault"), warn=lambda note: click.echo(f"note: {note}", err=True))
    memory: Memory = obj["memory"]
    return memory


def vault_root(ctx: click.Context) -> Path:
    """Where this invocation's vault is, found without opening it (no config,
    no recovery, no ``memd.app``): for steps that only need to know where it is."""
    from memd.core.layout import vault_root as locate

    return locate(named_vault(ctx))


def named_vault(ctx: click.Context) -> str | None:
    """The vault ``--vault`` (or ``$MEMD_VAULT``) names, if any."""
    root = ctx.find_root()
    return root.obj.get("vault") if isinstance(root.obj, dict) else None


def get_vault(ctx: click.Context) -> Vault:
    return get_memory(ctx).vault


def emit_json(data: Any) -> None:
    from memd.cli.output import as_json

    click.echo(as_json(data))


def _remember_json(ctx: click.Context, _: click.Parameter, value: bool) -> bool:
    """``--json`` after the subcommand tells the root (errors are JSON too); before it, the subcommand."""
    if value:
        root = ctx.find_root()
        root.obj = {**(root.obj if isinstance(root.obj, dict) else {}), "json": True}
    return value or _wants_json(ctx)


json_option = click.option(
    "--json",
    "as_json",
    is_flag=True,
    is_eager=True,
    callback=_remember_json,
    help="Print machine-readable JSON (errors too: a JSON object on stderr).",
)


def on_terminal() -> bool:
    """Whether stderr is a terminal a person watches (progress bars go there)."""
    return sys.stderr.isatty()


@contextmanager
def progress_bar(
    label: str, *, quiet: bool = False, minimum: int = 2, unit: str | None = None
) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr when it is a terminal (never in --json mode or
    when piped); yields the ``progress(done, total)`` callback long work takes.
    With ``unit`` the bar counts it (``31,200/81,000 records``) with the rate and ETA."""
    if quiet or not on_terminal():
        yield None
        return
    import time

    state: dict[str, Any] = {}

    def counted(_: object) -> str:
        bar, first = state["bar"], state["first"]
        spent = time.monotonic() - first[1]
        rate = (bar.pos - first[0]) / spent if spent > 0 else 0.0
        return f"{bar.pos:,}/{bar.length:,} {unit}, {rate:,.0f}/s"

    def update(done: int, total: int) -> None:
        if total < minimum:
            return
        bar = state.get("bar")
        if bar is None:
            show = counted if unit else None
            bar = state["bar"] = click.progressbar(
                length=total, label=label, file=sys.stderr, show_eta=True, show_pos=not unit, item_show_func=show
            )
            state["first"] = (done, time.monotonic())  # the rate counts from here: a resumed build starts part-way
            bar.__enter__()
            bar.pos = done
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)
