"""The ``memd`` executable: the commands scripts run most, without click.

Hooks and scripts run ``memd add`` once per message, and agents ``memd
search`` once per question, so their start-up is kept to what they need. A
plain ``memd add`` appends here; a plain ``memd search`` is sent here to the
daemon when one serves the vault (memd/daemon/serve.py). The lines printed
are the click commands' own (output.py). This reader knows only those
commands' options (and the global ``--vault`` and ``--json``, before or after
the command); a search no daemon answers is made here too, unless a person
watches stderr (the click command shows a first indexing's progress bars).
Anything else (another command, help, an unknown option, a value that starts
with "-", a ``--meta`` a signature cannot hold, a terminal on standard input)
goes to the click group in root.py, which gives the usual result and messages.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from memd.cli.output import Line, added_lines, error_json, hit_lines, served_lines

if TYPE_CHECKING:
    from memd.app import Memory
    from memd.core.errors import MemdError

# What `memd add` reads from standard input at most (the size `memd ingest` takes by default).
STDIN_CHARS = 20 * 1024 * 1024
# Signature keys that have their own option; `seq` is memd's to assign.
RESERVED_KEYS = frozenset({"seq", "time", "source", "src"})

_GLOBAL_VALUED = frozenset({"--vault"})
_GLOBAL_FLAGS = frozenset({"--json"})
# command -> (options with a value, flags, whether the one argument may be left out)
_COMMANDS = {
    "add": (frozenset({"--time", "--source", "--src", "--meta"}), frozenset({"--one"}), True),
    "search": (frozenset({"--limit", "--since", "--until", "--source"}), frozenset(), False),
}


class Command(NamedTuple):
    """A plain command line, read: the command, its one argument, its options
    (a named tuple, not a dataclass: a served search needs no dataclasses)."""

    name: str
    argument: str | None
    values: dict[str, str]  # last given wins, as in click
    flags: frozenset[str]
    meta: tuple[str, ...] = ()  # add's repeatable --meta

    @property
    def vault(self) -> str | None:
        return self.values.get("--vault")

    @property
    def json_out(self) -> bool:
        return "--json" in self.flags


def read_command(args: Sequence[str]) -> Command | None:
    """``args`` (the command line after ``memd``) as a plain add or search, else None."""
    name: str | None = None
    values: dict[str, str] = {}
    flags: set[str] = set()
    meta: list[str] = []
    arguments: list[str] = []
    rest = iter(args)
    for arg in rest:
        valued, own_flags, _ = _COMMANDS.get(name or "", (frozenset(), frozenset(), True))
        if arg.startswith("--"):
            option, eq, value = arg.partition("=")
            if option in _GLOBAL_FLAGS | own_flags and not eq:
                flags.add(option)
                continue
            if option not in _GLOBAL_VALUED | valued:
                return None
            if not eq:
                value = next(rest, "-")  # a missing value reads as one starting with "-"
            if value.startswith("-"):
                return None
            if option == "--meta":
                meta.append(value)
            else:
                values[option] = value
        elif arg.startswith("-") and arg != "-":
            return None
        elif name is None:
            if arg not in _COMMANDS:
                return None
            name = arg
        else:
            arguments.append(arg)
    if name is None or len(arguments) > 1 or (not arguments and not _COMMANDS[name][2]):
        return None
    return Command(name, arguments[0] if arguments else None, values, frozenset(flags), tuple(meta))


def meta_pair(item: str) -> tuple[str, str] | None:
    """``KEY=VALUE`` as a pair a signature can hold, else None."""
    from memd.core.errors import FormatError
    from memd.core.signature import check_meta

    key, eq, value = item.partition("=")
    if not eq or not key or key in RESERVED_KEYS:
        return None
    try:
        check_meta(key, value)
    except FormatError:
        return None
    return key, value


def read_stdin() -> str:
    """Standard input, bounded like ``memd ingest --max-size``: ``cat /dev/zero | memd add`` must not fill memory."""
    text = sys.stdin.read(STDIN_CHARS + 1)
    if len(text) > STDIN_CHARS:
        from memd.core.errors import FormatError

        raise FormatError(f"standard input is longer than {STDIN_CHARS:,} characters; use `memd ingest` for a file")
    return text


def pieces(text: str, one: bool) -> list[str]:
    """The entries a text makes: one per line, or with ``--one`` one in all."""
    return [text] if one else text.splitlines()


def run_add(command: Command) -> int | None:
    """Append as ``memd add`` does; the exit code (None: for the click command)."""
    from memd.core.errors import MemdError

    pairs = [meta_pair(item) for item in command.meta]
    meta = tuple(pair for pair in pairs if pair is not None)
    from_stdin = command.argument is None or command.argument == "-"
    if len(meta) < len(pairs) or (from_stdin and (sys.stdin is None or sys.stdin.isatty())):
        return None
    try:
        text = read_stdin() if from_stdin or command.argument is None else command.argument
        from memd.app import Memory

        memory = Memory.open(command.vault, warn=lambda note: print(f"note: {note}", file=sys.stderr))
        added = memory.add(
            pieces(text, "--one" in command.flags),
            time=command.values.get("--time"),
            source=command.values.get("--source", "user"),
            src=command.values.get("--src"),
            meta=meta,
        )
    except MemdError as err:
        return _failed(err, command.json_out)
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)
        return 1
    return _print(added_lines(added, command.json_out))


def run_search(command: Command) -> int | None:
    """The search as a running daemon (or warm server) answers it, else made in
    this process; None to leave it to the click command: a person watching stderr
    sees its progress bars, and a vault that cannot be found is reported there."""
    from memd.core.errors import MemdError
    from memd.core.layout import vault_root
    from memd.daemon import serve

    limit = command.values.get("--limit", "10")
    if not limit.isdigit() or int(limit) < 1:
        return None
    args = {"query": command.argument, "limit": int(limit)}
    args.update({key: command.values.get(f"--{key}") for key in ("since", "until", "source")})
    try:
        served = serve.request(vault_root(command.vault), "search", args)
    except MemdError:
        return None
    if served is None:
        return None if sys.stderr.isatty() else _search_here(command, args)
    return _print(served_lines(served, command.json_out))


def search_here(memory: Memory, args: dict[str, Any], json_out: bool, **more: Any) -> tuple[Iterator[Line], bool]:
    """A search no daemon answered, made in this process (here and by the click command,
    cli/read.py): the lines it prints, and whether a daemon runs. ``more``: the rest of
    ``Memory.search``'s arguments (``as_of``, progress callbacks)."""
    from memd.app.reading import INTERACTIVE_EMBED_SECONDS
    from memd.daemon.status import running_pid

    # The daemon builds missing vectors in the background; without one, a search embeds a slice.
    daemon = running_pid(memory.vault) is not None
    found = memory.search(**args, **more, embed_seconds=0.0 if daemon else INTERACTIVE_EMBED_SECONDS)
    hits, respelled = list(found.results), list(found.respelled)
    return hit_lines(hits, found.note, found.finish_seconds, daemon, json_out, respelled, found.building), daemon


def _search_here(command: Command, args: dict[str, Any]) -> int:
    """``search_here`` with no bars to show, then a warm server started for the next
    search (daemon/warm.py)."""
    from memd.app import Memory
    from memd.core.errors import MemdError
    from memd.daemon import warm

    try:
        memory = Memory.open(command.vault, warn=lambda note: print(f"note: {note}", file=sys.stderr))
        lines, daemon = search_here(memory, args, command.json_out)
    except MemdError as err:
        return _failed(err, command.json_out)
    except KeyboardInterrupt:
        print("\nAborted!", file=sys.stderr)  # as click says it
        return 1
    code = _print(lines)
    if not daemon:
        warm.start(memory.vault.root)
    return code


def _failed(err: MemdError, json_out: bool) -> int:
    """A library error as the click command reports it (a ``memd:`` line, or JSON)."""
    message = err.for_door("cli")
    print(error_json(message, type(err).__name__, 1) if json_out else f"memd: {message}", file=sys.stderr)
    return 1


def _print(lines: Iterable[Line]) -> int:
    try:
        for line, to_err in lines:
            print(line, file=sys.stderr if to_err else sys.stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        sys.stderr.close()  # output piped into `head`: not an error
    return 0


def main() -> None:
    """The ``memd`` command."""
    command = read_command(sys.argv[1:])
    if command is not None:
        code = (run_add if command.name == "add" else run_search)(command)
        if code is not None:
            sys.exit(code)
    from memd.cli.root import main as cli

    # A search handed over here was put to the daemon already (or could not be: the
    # click command reports why): it searches in this process without asking again.
    cli(obj={"daemon_asked": True} if command is not None and command.name == "search" else None)
