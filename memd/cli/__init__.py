"""The ``memd`` command: a thin click layer over the library.

Subcommands live in sibling modules and are imported only when invoked, so
``memd --help`` and ``memd add`` start fast. Library errors (``MemdError``)
become one-line messages on stderr with exit code 1, never tracebacks.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import TYPE_CHECKING, Any

import click

from .. import __version__

if TYPE_CHECKING:
    from ..app import Memory
    from ..vault import Vault

# command name -> "module:function" (relative to memd.cli)
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
    # connecting to agents, git and settings (memd/cli/integrate.py)
    "mcp": "integrate:mcp",
    "hooks": "integrate:hooks",
    "hook": "integrate:hook",
    "config": "integrate:config",
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

        return find_spec(f"{__name__}.{target.split(':')[0]}") is not None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None or not self._module_exists(target):
            return None
        module_name, attr = target.split(":")
        module = importlib.import_module(f"{__name__}.{module_name}")
        command: click.Command = getattr(module, attr)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        from ..errors import MemdError

        try:
            return super().invoke(ctx)
        except MemdError as err:
            raise click.ClickException(str(err)) from None
        except BrokenPipeError:
            sys.stderr.close()  # output piped into `head`: not an error
            return None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--vault",
    type=click.Path(file_okay=True, dir_okay=True),
    envvar="MEMD_VAULT",
    help="Vault folder (default: $MEMD_VAULT, else the current folder or a parent holding .memd/).",
)
@click.version_option(__version__, prog_name="memd")
@click.pass_context
def main(ctx: click.Context, vault: str | None) -> None:
    """memd: long-term memory kept as a vault of plain Markdown files.

    \b
    Example:
        memd init ~/memory && cd ~/memory
        memd add "Takes coffee with oat milk"
        memd status
    """
    ctx.obj = {"vault": vault}


def get_memory(ctx: click.Context) -> Memory:
    """The vault for this invocation, opened once (found lazily: `init` needs none)."""
    from ..app import Memory

    root = ctx.find_root()
    obj = root.obj if isinstance(root.obj, dict) else {}
    root.obj = obj
    if "memory" not in obj:
        obj["memory"] = Memory.open(obj.get("vault"), warn=lambda note: click.echo(f"memd: {note}", err=True))
    memory: Memory = obj["memory"]
    return memory


def get_vault(ctx: click.Context) -> Vault:
    return get_memory(ctx).vault


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
